from django.apps import AppConfig
from django.core import checks


class CoreConfig(AppConfig):
    name = "powercontext.core"
    label = "powercontext"
    verbose_name = "PowerContext core"

    def ready(self) -> None:
        from powercontext.core.checks import removed_settings

        checks.register(removed_settings, checks.Tags.compatibility)
