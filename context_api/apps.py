from django.apps import AppConfig


class ContextApiConfig(AppConfig):
    name = "context_api"
