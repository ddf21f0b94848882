from django.apps import AppConfig


class AgenticConfig(AppConfig):
    name = "apps.agentic"
    label = "agentic"
    verbose_name = "Agentic evaluations"

    def ready(self):
        from .metrics import register_collector

        register_collector()
