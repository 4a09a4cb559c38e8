from django.apps import AppConfig


class EvaluationConfig(AppConfig):
    name = "powercontext.evaluation"
    label = "evaluation"
    verbose_name = "Evaluation"
