from django.apps import AppConfig


class RubricsConfig(AppConfig):
    name = "apps.rubrics"
    label = "rubrics"
    verbose_name = "Rubrics"

    def ready(self):
        # Versions are recorded as they are published (apps.core.versioning); deletes here.
        from apps.core.audit.registry import audit_register

        audit_register(self.get_model("Rubric"), object_type="rubric", on=("delete",))
        audit_register(
            self.get_model("RuleJudge"),
            object_type="rule_judge",
            exclude=("updated_at", "author"),
            object_id=lambda row: f"{row.rubric_id}:{row.rule_id}",
            project=lambda row, kind: row.rubric.project,
        )
