from django.apps import AppConfig

from apps.core.demo import demo_loader_register


class TracesConfig(AppConfig):
    name = "apps.traces"
    label = "traces"
    verbose_name = "Agent traces"

    def ready(self):
        from apps.core.retention import RETENTION_DAYS, Expirer, expirer_register

        from . import partitions, selectors, services

        # After the evaluations that point at traces (order 10, 20), so their links need no update.
        expirer_register(Expirer("traces", RETENTION_DAYS, 30, selectors.traces_expired_count, services.traces_expire))
        partitions.partitions_keep(partitions.TOOL_CALLS, "tool call partitions")
        partitions.partitions_keep(partitions.TRACES, "trace partitions")
        # Imported here, not at the top: both modules import models, which need the app registry.
        from .demo import load_demo_traces
        from .ledger_metrics import register_collector as register_ledger_collector
        from .metrics import register_collector

        register_collector()
        register_ledger_collector()
        demo_loader_register(label="traces", order=10, load=load_demo_traces)
