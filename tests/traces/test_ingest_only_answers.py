"""Issue 21, low finding: an ingest-only key's `POST /traces/{sid}/intent` on another agent's trace
answered with that trace's query and tool results, while `GET /trace` is 403 for it. A key without
`read` now gets back an acknowledgement (the session and its status) from every trace write; a key
with `read` keeps the full trace."""

import pytest

from apps.traces.models import AgentTrace
from tests.core.factories import ApiKeyFactory, client_with_key

pytestmark = pytest.mark.django_db
BASE = "/api/v1/metrics"
SECRET_QUERY = "salary of the CFO"
SECRET_RESULT = {"rows": ["classified-figure-4242"]}
SECRETS = (SECRET_QUERY, "classified-figure-4242", "hr_lookup", "OtherAgent")


@pytest.fixture
def their_trace(api):
    api.post(
        f"{BASE}/traces",
        {"session_id": "theirs", "user_query": SECRET_QUERY, "agent_name": "OtherAgent"},
        format="json",
    )
    api.post(
        f"{BASE}/traces/theirs/tool-calls",
        {"tool_name": "hr_lookup", "call_id": "c1", "tool_result": SECRET_RESULT},
        format="json",
    )
    return AgentTrace.objects.get(session_id="theirs")


@pytest.fixture
def ingest_only():
    return client_with_key(ApiKeyFactory(user__username="ingester", scopes=["ingest"]))


def assert_nothing_of_theirs(response):
    # A conflicting write is refused (409) with a message that names nothing of theirs.
    assert response.status_code in (200, 201, 409), response.content
    text = response.content.decode()
    for secret in SECRETS:
        assert secret not in text, text


def test_ingest_only_intent_on_another_trace_is_acknowledged_without_its_content(their_trace, ingest_only):
    response = ingest_only.post(f"{BASE}/traces/theirs/intent", {"intent": "lookup"}, format="json")
    assert_nothing_of_theirs(response)
    assert set(response.json()) == {"session_id", "status"} and response.json()["session_id"] == "theirs"
    assert ingest_only.get(f"{BASE}/trace/theirs").status_code == 403


@pytest.mark.parametrize(
    "path, body",
    [
        ("traces", {"session_id": "theirs", "user_query": SECRET_QUERY.upper(), "agent_name": "Mine"}),
        ("traces/theirs/complete", {"final_response": "mine", "success": False}),
        ("traces/theirs/tool-calls", {"tool_name": "mine", "call_id": "c9", "tool_result": {"x": 1}}),
    ],
)
def test_every_trace_write_of_an_ingest_only_key_answers_only_an_acknowledgement(their_trace, ingest_only, path, body):
    assert_nothing_of_theirs(ingest_only.post(f"{BASE}/{path}", body, format="json"))


def test_the_acknowledgements_say_what_was_recorded(ingest_only):
    started = ingest_only.post(
        f"{BASE}/traces", {"session_id": "mine", "user_query": "q", "agent_name": "Me"}, format="json"
    )
    assert started.status_code == 201 and started.json() == {"session_id": "mine", "status": "active"}
    again = ingest_only.post(
        f"{BASE}/traces", {"session_id": "mine", "user_query": "q", "agent_name": "Me"}, format="json"
    )
    assert again.status_code == 200 and again.json() == started.json()
    calls = [{"tool_name": "t", "call_id": "c1"}, {"tool_name": "t", "call_id": "c2"}]
    first = ingest_only.post(f"{BASE}/traces/mine/tool-calls", calls, format="json")
    assert first.status_code == 201
    assert [set(call) for call in first.json()["tool_calls"]] == [{"seq", "call_id", "created"}] * 2
    assert [(c["call_id"], c["created"]) for c in first.json()["tool_calls"]] == [("c1", True), ("c2", True)]
    retried = ingest_only.post(f"{BASE}/traces/mine/tool-calls", calls, format="json")
    assert retried.status_code == 200 and [c["created"] for c in retried.json()["tool_calls"]] == [False, False]
    done = ingest_only.post(f"{BASE}/traces/mine/complete", {"final_response": "r", "success": True}, format="json")
    assert done.json() == {"session_id": "mine", "status": "completed"}


def test_a_key_with_read_keeps_the_full_trace(their_trace, default_key_api):
    response = default_key_api.post(f"{BASE}/traces/theirs/intent", {"intent": "lookup"}, format="json")
    assert response.status_code == 200
    body = response.json()
    assert body["user_query"] == SECRET_QUERY and body["tool_calls"][0]["tool_result"] == SECRET_RESULT
