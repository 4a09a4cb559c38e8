from django.apps import AppConfig


class MemoryConfig(AppConfig):
    name = "powercontext.memory"
    label = "memory"
    verbose_name = "Memory"
