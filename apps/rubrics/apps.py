from django.apps import AppConfig


class RubricsConfig(AppConfig):
    name = "apps.rubrics"
    label = "rubrics"
    verbose_name = "Rubrics"

    def ready(self):
        # Versions are recorded as they are published (apps.core.versioning); deletes here.
        from apps.core.audit.registry import audit_register

        audit_register(self.get_model("Rubric"), object_type="rubric", on=("delete",))
