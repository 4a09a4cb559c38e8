from django.apps import AppConfig


class RecoveryConfig(AppConfig):
    name = "powercontext.recovery"
    label = "recovery"
    verbose_name = "Session recovery"
