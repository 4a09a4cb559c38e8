from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "powercontext.core"
    label = "powercontext"
    verbose_name = "PowerContext core"
