from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "apps.core"
    label = "core"
    verbose_name = "Core"

    def ready(self):
        from . import schema  # noqa: F401  registers the API key scheme with drf-spectacular
