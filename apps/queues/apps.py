from django.apps import AppConfig
from django.db.models.signals import post_delete, pre_delete


class QueuesConfig(AppConfig):
    name = "apps.queues"
    label = "queues"
    verbose_name = "Review queues"

    def ready(self):
        # Imported here, not at the top: the receivers import models, which need the app registry.
        from apps.agentic.models import AgentEvaluation
        from apps.rag.models import TraceEvaluation
        from apps.runs.models import EvaluationResult, EvaluationRun
        from apps.scores.signals import subjects_deleted

        from . import receivers

        pre_delete.connect(receivers.run_items_delete, sender=EvaluationRun, dispatch_uid="queues.run_items")
        post_delete.connect(receivers.result_items_delete, sender=EvaluationResult, dispatch_uid="queues.result_items")
        post_delete.connect(receivers.agentic_items_delete, sender=AgentEvaluation, dispatch_uid="queues.agentic_items")
        post_delete.connect(receivers.rag_items_delete, sender=TraceEvaluation, dispatch_uid="queues.rag_items")
        subjects_deleted.connect(receivers.subjects_items_delete, dispatch_uid="queues.subjects_items")
        # Every change to a queue's definition, from the API, the console or the admin, is audited.
        from apps.core.audit.registry import audit_register

        audit_register(self.get_model("ReviewQueue"), object_type="review_queue", exclude=("created_at",))
