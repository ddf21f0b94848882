"""Signals other apps listen to, so traces never imports the apps above it (the layer rule)."""

from django.dispatch import Signal

# Sent after commit with `trace_ids` (list[int]) for traces that just became completed or failed,
# whatever the source (per-step REST calls, batch ingestion, OTLP spans). Online evaluation rules
# (apps.agentic) listen to it. A retry that changes nothing is not announced again.
trace_completed = Signal()
