from django.apps import AppConfig


class PipelineConfig(AppConfig):
    name = "powercontext.pipeline"
    label = "pipeline"
    verbose_name = "Pipeline"
