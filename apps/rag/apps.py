from django.apps import AppConfig

from apps.core.demo import demo_loader_register


class RagConfig(AppConfig):
    name = "apps.rag"
    label = "rag"
    verbose_name = "RAG evaluations"

    def ready(self):
        from apps.core.retention import RETENTION_DAYS, Expirer, expirer_register

        from . import selectors, services

        expirer_register(
            Expirer(
                "rag_evaluations",
                RETENTION_DAYS,
                20,
                selectors.trace_evaluations_expired_count,
                services.trace_evaluations_expire,
            )
        )
        from apps.scores.partitions import evaluation_partitions_register
        from apps.scores.vocabulary import SubjectKind

        # Their rows and their metric Score rows, partitioned by evaluation id: an expired stretch of
        # evaluations is dropped whole.
        evaluation_partitions_register(
            SubjectKind.RAG_EVALUATION,
            source=self.get_model("TraceEvaluation")._meta.db_table,
            noun="RAG evaluation",
        )
        # Imported here, not at the top: the demo module imports models, which need the app registry.
        from .demo import load_demo_trace_evaluations

        demo_loader_register(label="TRACE evaluations", order=30, load=load_demo_trace_evaluations)
