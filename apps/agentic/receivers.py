"""What apps.agentic does when other apps announce something (connected in AgenticConfig.ready)."""

from .rules.services import online_evaluations_queue


def queue_online_evaluations(sender, trace_ids: list[int], **kwargs) -> None:
    online_evaluations_queue(trace_ids=trace_ids)
