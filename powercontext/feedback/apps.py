from django.apps import AppConfig


class FeedbackConfig(AppConfig):
    name = "powercontext.feedback"
    label = "feedback"
    verbose_name = "Feedback"
