"""Agent traces and their tool calls as rows: a finished trace by default, with the fields the
lifecycle services would have filled in (end time, duration, tool call count)."""

from datetime import timedelta

import factory
from django.utils import timezone

from apps.core.models import Project
from apps.traces.models import AgentTrace, ToolCall


class AgentTraceFactory(factory.django.DjangoModelFactory):
    """A completed trace; `tool_calls=[{"tool_name": ..., ...}, ...]` adds ToolCall rows in order
    (each dict holds ToolCallFactory fields) and counts them, as trace_tool_call_record does."""

    class Meta:
        model = AgentTrace
        skip_postgeneration_save = True

    project = factory.LazyFunction(Project.objects.default)
    session_id = factory.Sequence(lambda n: f"session-{n}")
    agent_name = "OrchestratorAgent"
    user_query = "List all Kubernetes clusters in Delhi"
    intent_detected = "list_k8s_cluster"
    resource_type = "k8s_cluster"
    operation = "list"
    final_response = "Found 2 clusters in Delhi: prod-01 and dev-02."
    success = True
    status = factory.LazyAttribute(
        lambda o: (
            AgentTrace.Status.ACTIVE
            if o.success is None
            else AgentTrace.Status.COMPLETED
            if o.success
            else AgentTrace.Status.FAILED
        )
    )
    start_time = factory.LazyFunction(lambda: timezone.now() - timedelta(seconds=2))
    end_time = factory.LazyAttribute(lambda o: None if o.success is None else o.start_time + timedelta(seconds=1.5))
    duration_seconds = factory.LazyAttribute(
        lambda o: None if o.end_time is None else (o.end_time - o.start_time).total_seconds()
    )

    class Params:
        # An agent still working: no answer, no end.
        active = factory.Trait(
            success=None, final_response=None, intent_detected=None, resource_type=None, operation=None
        )

    @factory.post_generation
    def tool_calls(self, create, extracted, **kwargs):
        for call in extracted or ():
            ToolCallFactory(trace=self, **call)


class ToolCallFactory(factory.django.DjangoModelFactory):
    """The next tool call of `trace`: seq follows the trace's count, which it bumps (under the row
    lock in the services; tests write one trace at a time)."""

    class Meta:
        model = ToolCall

    trace = factory.SubFactory(AgentTraceFactory)
    seq = factory.LazyAttribute(lambda o: o.trace.tool_call_count + 1)
    call_id = factory.LazyAttribute(lambda o: f"{o.trace.session_id}-{o.seq}")
    tool_name = "list_k8s_clusters"
    tool_args = factory.LazyFunction(lambda: {"datacenter": "Delhi"})
    tool_result = factory.LazyFunction(lambda: [{"name": "prod-01", "status": "running"}])
    success = True
    duration_ms = 120.0

    @classmethod
    def _create(cls, model_class, *args, **kwargs):
        call = super()._create(model_class, *args, **kwargs)
        AgentTrace.objects.filter(pk=call.trace_id).update(tool_call_count=call.seq)
        call.trace.tool_call_count = call.seq
        return call
