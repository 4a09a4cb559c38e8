from django.apps import AppConfig


class PrepareConfig(AppConfig):
    name = "powercontext.prepare"
    label = "prepare"
    verbose_name = "Prepare"
