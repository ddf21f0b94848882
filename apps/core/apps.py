from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "apps.core"
    label = "core"
    verbose_name = "Core"

    def ready(self):
        # Imported here, not at the top: drf-spectacular needs the app registry. The import itself
        # registers the API key scheme.
        from apps.core.api import openapi  # noqa: F401
        from apps.core.audit.core_models import register_core_models

        register_core_models()
