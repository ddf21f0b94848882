"""`trace_completed` is how online evaluation rules hear about finished traces without traces
importing agentic: it must fire once per trace that really finished, after commit, for every source."""

import pytest

from apps.traces.models import AgentTrace
from apps.traces.signals import trace_completed

BASE = "/api/v1/metrics"


@pytest.fixture
def announced():
    seen: list[list[int]] = []

    def receiver(sender, trace_ids, **kwargs):
        seen.append(list(trace_ids))

    trace_completed.connect(receiver, dispatch_uid="test-announced")
    yield seen
    trace_completed.disconnect(dispatch_uid="test-announced")


def _batch_item(session_id):
    return {
        "session_id": session_id,
        "user_query": "List clusters",
        "agent_name": "A",
        "final_response": "none",
        "success": True,
        "tool_calls": [{"tool_name": "t", "tool_args": {}, "tool_result": [], "success": True}],
    }


@pytest.mark.django_db
def test_rest_completion_is_announced_once_and_an_identical_retry_is_not(
    api, announced, django_capture_on_commit_callbacks
):
    api.post(f"{BASE}/traces", {"session_id": "s1", "user_query": "q", "agent_name": "A"}, format="json")
    with django_capture_on_commit_callbacks(execute=True):
        assert (
            api.post(
                f"{BASE}/traces/s1/complete", {"final_response": "done", "success": True}, format="json"
            ).status_code
            == 200
        )
        assert (
            api.post(
                f"{BASE}/traces/s1/complete", {"final_response": "done", "success": True}, format="json"
            ).status_code
            == 200
        )
    trace = AgentTrace.objects.get(session_id="s1")
    assert announced == [[trace.pk]]
    assert trace.source == AgentTrace.Source.REST


@pytest.mark.django_db
def test_batch_announces_the_created_traces_and_marks_their_source(api, announced, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        r = api.post(f"{BASE}/traces/batch", {"traces": [_batch_item("b1"), _batch_item("b2")]}, format="json")
        assert r.status_code in (200, 201, 207), r.content
        # The same batch again stores nothing new, so it announces nothing new.
        api.post(f"{BASE}/traces/batch", {"traces": [_batch_item("b1"), _batch_item("b2")]}, format="json")
    ids = set(AgentTrace.objects.filter(session_id__in=["b1", "b2"]).values_list("pk", flat=True))
    assert [set(batch) for batch in announced] == [ids]
    assert set(AgentTrace.objects.filter(pk__in=ids).values_list("source", flat=True)) == {"batch"}


@pytest.mark.django_db
def test_nothing_is_announced_before_commit(api, announced, django_capture_on_commit_callbacks):
    api.post(f"{BASE}/traces", {"session_id": "s2", "user_query": "q", "agent_name": "A"}, format="json")
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        api.post(f"{BASE}/traces/s2/complete", {"final_response": "done", "success": True}, format="json")
    # Inside the test's transaction the callback is only queued: listeners must not see uncommitted rows.
    assert announced == [] and len(callbacks) == 1
