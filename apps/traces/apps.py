from django.apps import AppConfig

from apps.core.demo import demo_loader_register


class TracesConfig(AppConfig):
    name = "apps.traces"
    label = "traces"
    verbose_name = "Agent traces"

    def ready(self):
        # Imported here, not at the top: both modules import models, which need the app registry.
        from .demo import load_demo_traces
        from .ledger_metrics import register_collector as register_ledger_collector
        from .metrics import register_collector

        register_collector()
        register_ledger_collector()
        demo_loader_register(label="traces", order=10, load=load_demo_traces)
