from django.apps import AppConfig

from apps.core.demo import demo_loader_register


class TracesConfig(AppConfig):
    name = "apps.traces"
    label = "traces"
    verbose_name = "Agent traces"

    def ready(self):
        from apps.core.retention import RETENTION_DAYS, Expirer, Reclaimer, expirer_register, reclaimer_register

        from . import partitions, selectors, services

        # After the evaluations that point at traces (order 10, 20), so their links need no update.
        expirer_register(Expirer("traces", RETENTION_DAYS, 30, selectors.traces_expired_count, services.traces_expire))
        partitions.partitions_register(partitions.TOOL_CALLS)
        reclaimer_register(
            Reclaimer(
                "tool call partitions (every trace in them expired: their disk space returns)",
                partitions.TOOL_CALLS.reclaimable_count,
                partitions.partitions_reclaim,
            )
        )
        partitions.partitions_register(partitions.TRACES)
        reclaimer_register(
            Reclaimer(
                "trace partitions (every trace in them expired and deleted: their disk space returns)",
                partitions.TRACES.reclaimable_count,
                partitions.TRACES.reclaim,
                after_batches=True,
            )
        )
        # Imported here, not at the top: both modules import models, which need the app registry.
        from .demo import load_demo_traces
        from .ledger_metrics import register_collector as register_ledger_collector
        from .metrics import register_collector

        register_collector()
        register_ledger_collector()
        demo_loader_register(label="traces", order=10, load=load_demo_traces)
