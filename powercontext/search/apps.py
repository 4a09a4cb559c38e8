from django.apps import AppConfig


class SearchConfig(AppConfig):
    name = "powercontext.search"
    label = "search"
    verbose_name = "Search"
