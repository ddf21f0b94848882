from django.apps import AppConfig


class TracesConfig(AppConfig):
    name = "apps.traces"
    label = "traces"
    verbose_name = "Agent traces"

    def ready(self):
        from .metrics import register_collector

        register_collector()
