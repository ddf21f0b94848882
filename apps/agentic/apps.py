from django.apps import AppConfig

from apps.core.demo import demo_loader_register
from apps.traces.signals import trace_completed


class AgenticConfig(AppConfig):
    name = "apps.agentic"
    label = "agentic"
    verbose_name = "Agentic evaluations"

    def ready(self):
        from apps.core.retention import RETENTION_DAYS, Expirer, expirer_register

        from . import selectors, services

        expirer_register(
            Expirer(
                "agentic_evaluations",
                RETENTION_DAYS,
                10,
                selectors.evaluations_expired_count,
                services.evaluations_expire,
            )
        )
        from apps.scores.partitions import evaluation_partitions_register
        from apps.scores.vocabulary import SubjectKind

        # Their rows and their metric Score rows, partitioned by evaluation id: an expired stretch of
        # evaluations is dropped whole.
        evaluation_partitions_register(
            SubjectKind.AGENTIC_EVALUATION,
            source=self.get_model("AgentEvaluation")._meta.db_table,
            noun="agentic evaluation",
        )
        # Imported here, not at the top: these modules import models, which need the app registry.
        from .demo import load_demo_evaluations
        from .metrics import register_collector
        from .receivers import queue_online_evaluations

        register_collector()
        # After the demo traces (order 10): these are their verdicts.
        demo_loader_register(label="agentic evaluations", order=20, load=load_demo_evaluations)
        trace_completed.connect(queue_online_evaluations, dispatch_uid="agentic.online_evaluations")
        # Every change to an online evaluation rule, from the API or the admin, is audited.
        from apps.core.audit.registry import audit_register

        audit_register(self.get_model("EvaluationRule"), object_type="evaluation_rule", exclude=("created_at",))
        audit_register(
            self.get_model("MetricJudge"),
            object_type="metric_judge",
            exclude=("updated_at", "author"),
            object_id=lambda row: f"{row.agent_name or '*'}:{row.metric}",
        )
