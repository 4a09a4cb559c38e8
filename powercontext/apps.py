from django.apps import AppConfig


class PowerContextConfig(AppConfig):
    name = "powercontext"
    verbose_name = "PowerContext core"
