from django.apps import AppConfig

from apps.core.demo import demo_loader_register


class RunsConfig(AppConfig):
    name = "apps.runs"
    label = "runs"
    verbose_name = "Evaluation runs"

    def ready(self):
        from apps.core.retention import RUN_RETENTION_DAYS, Expirer, expirer_register

        from . import selectors, services

        expirer_register(Expirer("runs", RUN_RETENTION_DAYS, 40, selectors.runs_expired_count, services.runs_expire))
        # Imported here, not at the top: the demo modules import models, which need the app registry.
        from .demo import load_demo_evaluation_data, load_demo_runs
        from .metrics import register_collector

        register_collector()
        # Marking and unmarking anchors is configuration: audited (a check is not, it measures).
        from apps.core.audit.registry import audit_register

        audit_register(
            self.get_model("AnchorSet"),
            object_type="anchor_set",
            exclude=("results", "rule_ids", "has_criteria", "reference_judges", "created_at", "created_by"),
            object_id=lambda row: str(row.anchor_id),
            on=("create", "delete"),
        )

        demo_loader_register(label="bot, rubric, test set and question set", order=40, load=load_demo_evaluation_data)
        # After the loader above: two finished runs of its test set, the demo bot's and a changed bot's.
        demo_loader_register(label="changed bot and runs", order=50, load=load_demo_runs)
