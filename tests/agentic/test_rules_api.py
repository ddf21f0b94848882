"""/api/v1/evaluation-rules: whoever holds `configure` (an editor or admin of the project, or staff)
configures rules, everyone with `read` sees them."""

from datetime import timedelta

import pytest
from django.utils import timezone
from kombu.exceptions import OperationalError

from apps.agentic.models import AgentEvaluation, EvaluationRule
from apps.agentic.rules import services as rule_services
from apps.core.errors import ConflictError
from apps.traces import services as trace_services
from apps.traces.models import AgentTrace
from tests.agentic.factories import EvaluationRuleFactory
from tests.conftest import _client_with_key

pytestmark = pytest.mark.django_db
URL = "/api/v1/evaluation-rules"
BODY = {
    "name": "nightly k8s",
    "agent_name": "OrchestratorAgent",
    "source": "rest",
    "sample_rate": 0.25,
    "judge": "heuristic",
}


def test_staff_creates_reads_updates_and_deletes_a_rule(staff_api):
    created = staff_api.post(URL, BODY, format="json")
    assert created.status_code == 201, created.content
    rule = created.json()
    assert {k: rule[k] for k in BODY} == BODY
    assert rule["enabled"] is True and rule["created_by"] == "staff-user" and rule["created_at"]

    assert staff_api.get(URL).json() == [rule]
    assert staff_api.get(f"{URL}/{rule['id']}").json() == rule

    # What a GET returned can be sent back edited (id and timestamps are ignored).
    edited = {**rule, "enabled": False, "sample_rate": 1}
    updated = staff_api.put(f"{URL}/{rule['id']}", edited, format="json")
    assert updated.status_code == 200, updated.content
    assert updated.json()["enabled"] is False and updated.json()["sample_rate"] == 1.0
    assert EvaluationRule.objects.get().enabled is False

    assert staff_api.delete(f"{URL}/{rule['id']}").status_code == 204
    assert not EvaluationRule.objects.exists()


def test_defaults(staff_api):
    rule = staff_api.post(URL, {"name": "everything"}, format="json").json()
    assert (rule["agent_name"], rule["source"], rule["sample_rate"], rule["judge"], rule["enabled"]) == (
        "",
        "any",
        1.0,
        "heuristic",
        True,
    )


def test_keys_without_configure_read_but_do_not_write(default_key_api, db):
    rule = EvaluationRuleFactory()
    # Rules spend judge tokens on every matching trace: reading them is everyone's, changing them an
    # editor's (`configure`), whether or not the user is staff. A reviewer's key holds `review` only.
    reviewer = _client_with_key("reviewer-ish", staff=False, scopes=["read", "review"])
    for client in (default_key_api, reviewer):
        assert client.get(URL).status_code == 200
        assert client.get(f"{URL}/{rule.pk}").status_code == 200
        for response in (
            client.post(URL, BODY, format="json"),
            client.put(f"{URL}/{rule.pk}", BODY, format="json"),
            client.delete(f"{URL}/{rule.pk}"),
            client.post(f"{URL}/{rule.pk}/backfill", {"since": "2026-01-01T00:00:00Z"}, format="json"),
        ):
            assert response.status_code == 403, response.content
            assert "detail" in response.json()
    assert EvaluationRule.objects.get().name == rule.name


def test_a_default_key_is_refused_for_the_missing_scope(default_key_api):
    response = default_key_api.post(URL, BODY, format="json")
    assert response.json()["detail"] == "This API key lacks the 'configure' scope."


def test_a_staff_key_without_configure_cannot_write(db):
    client = _client_with_key("staff-reader", staff=True, scopes=["read"])
    assert client.post(URL, BODY, format="json").status_code == 403


def test_no_key_is_401(anon_api):
    assert anon_api.get(URL).status_code == 401
    assert anon_api.post(URL, BODY, format="json").status_code == 401


@pytest.mark.parametrize(
    "change, loc",
    [
        ({"sample_rate": 1.5}, ["sample_rate"]),
        ({"sample_rate": -0.1}, ["sample_rate"]),
        ({"source": "grpc"}, ["source"]),
        ({"name": ""}, ["name"]),
        ({"name": "x" * 101}, ["name"]),
        ({"judge": "gpt 4; rm -rf"}, ["judge"]),
        ({"enabled": "yes"}, ["enabled"]),
        ({"colour": "red"}, ["colour"]),
    ],
)
def test_invalid_bodies_are_422_naming_the_field(staff_api, change, loc):
    response = staff_api.post(URL, {**BODY, **change}, format="json")
    assert response.status_code == 422, response.content
    assert loc in [err["loc"] for err in response.json()["detail"]]
    assert not EvaluationRule.objects.exists()


def test_an_llm_judge_without_an_llm_is_422(staff_api):
    for judge in ("llm", "gpt-4o-mini"):
        response = staff_api.post(URL, {**BODY, "judge": judge}, format="json")
        assert response.status_code == 422
        assert "needs an LLM" in response.json()["detail"]


def test_an_llm_judge_with_an_llm_configured(staff_api, settings, openai_server):
    settings.OPENAI_BASE_URL = openai_server.url
    settings.EVALSITE_JUDGE_MODELS = ["llama3.1:8b"]  # a model the platform allows (issue 21)
    response = staff_api.post(URL, {**BODY, "judge": "llama3.1:8b"}, format="json")
    assert response.status_code == 201
    assert response.json()["judge"] == "llama3.1:8b"


def test_a_taken_name_is_409(staff_api):
    first = staff_api.post(URL, BODY, format="json").json()
    assert staff_api.post(URL, BODY, format="json").status_code == 409
    second = staff_api.post(URL, {**BODY, "name": "other"}, format="json").json()
    response = staff_api.put(f"{URL}/{second['id']}", {**BODY, "name": first["name"]}, format="json")
    assert response.status_code == 409
    assert "already exists" in response.json()["detail"]


def test_an_unknown_rule_is_404(staff_api):
    for response in (
        staff_api.get(f"{URL}/999"),
        staff_api.put(f"{URL}/999", BODY, format="json"),
        staff_api.delete(f"{URL}/999"),
        staff_api.post(f"{URL}/999/backfill", {"since": "2026-01-01T00:00:00Z"}, format="json"),
    ):
        assert response.status_code == 404
        assert response.json()["detail"] == "No evaluation rule with id 999"
    # Past any database integer (found by fuzzing ids): still 404, not 500.
    assert staff_api.get(f"{URL}/{10**30}").status_code == 404


def test_deleting_a_rule_keeps_its_evaluations(staff_api, django_capture_on_commit_callbacks):
    rule = EvaluationRuleFactory()
    with django_capture_on_commit_callbacks(execute=True):
        trace_services.trace_start(session_id="kept-1", user_query="q", agent_name="A")
        trace_services.trace_complete(session_id="kept-1", final_response="done", success=True)
    assert AgentEvaluation.objects.get().rule == rule
    assert staff_api.delete(f"{URL}/{rule.pk}").status_code == 204
    assert AgentEvaluation.objects.get().rule is None


# --- backfill -------------------------------------------------------------------------------------


def _finished(session_id: str, ago: timedelta) -> AgentTrace:
    trace_services.trace_start(session_id=session_id, user_query="List clusters", agent_name="OrchestratorAgent")
    trace = trace_services.trace_complete(session_id=session_id, final_response="prod-01", success=True)
    AgentTrace.objects.filter(pk=trace.pk).update(end_time=timezone.now() - ago)
    return trace


def test_backfill_answers_how_many_were_queued_and_they_are_judged(staff_api, django_capture_on_commit_callbacks):
    for i in range(3):
        _finished(f"past-{i}", timedelta(hours=3))
    _finished("older", timedelta(days=10))
    rule = EvaluationRuleFactory(name="backfilled")
    since = (timezone.now() - timedelta(days=1)).isoformat()
    with django_capture_on_commit_callbacks(execute=True):
        response = staff_api.post(f"{URL}/{rule.pk}/backfill", {"since": since}, format="json")
    assert response.status_code == 200, response.content
    assert response.json() == {"rule_id": rule.pk, "queued": 3}
    assert set(AgentEvaluation.objects.values_list("session_id", flat=True)) == {"past-0", "past-1", "past-2"}
    assert set(AgentEvaluation.objects.values_list("rule__name", flat=True)) == {"backfilled"}

    # The same backfill again: three queued, nothing judged twice.
    with django_capture_on_commit_callbacks(execute=True):
        again = staff_api.post(f"{URL}/{rule.pk}/backfill", {"since": since}, format="json")
    assert again.json()["queued"] == 3
    assert AgentEvaluation.objects.count() == 3


def test_backfill_validation(staff_api):
    rule = EvaluationRuleFactory()
    url = f"{URL}/{rule.pk}/backfill"
    naive = staff_api.post(url, {"since": "2026-01-01T00:00:00"}, format="json")
    assert naive.status_code == 422 and naive.json()["detail"][0]["loc"] == ["since"]
    assert staff_api.post(url, {}, format="json").status_code == 422
    backwards = staff_api.post(url, {"since": "2026-02-01T00:00:00Z", "until": "2026-01-01T00:00:00Z"}, format="json")
    assert backwards.status_code == 422
    assert backwards.json()["detail"] == "since must be earlier than until"


def test_backfill_of_a_disabled_rule_is_409(staff_api):
    rule = EvaluationRuleFactory(enabled=False)
    response = staff_api.post(f"{URL}/{rule.pk}/backfill", {"since": "2026-01-01T00:00:00Z"}, format="json")
    assert response.status_code == 409
    assert "disabled" in response.json()["detail"]


# --- OpenAPI --------------------------------------------------------------------------------------


def test_openapi_documents_the_errors(staff_api):
    schema = staff_api.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    paths = schema["paths"]
    assert set(paths[URL]) >= {"get", "post"}
    assert set(paths[URL]["post"]["responses"]) >= {"201", "401", "403", "409", "422"}
    detail = paths[URL + "/{rule_id}"]
    assert set(detail["put"]["responses"]) >= {"200", "404", "409", "422"}
    assert set(detail["delete"]["responses"]) >= {"204", "404"}
    assert set(paths[URL + "/{rule_id}/backfill"]["post"]["responses"]) >= {"200", "404", "409", "422"}
    record = schema["components"]["schemas"]["HistoryRecordOut"]
    assert "rule" in record["properties"]


# --- admin ----------------------------------------------------------------------------------------


def test_admin_creates_a_rule_through_the_services(admin_client, admin_user):
    form = {
        "name": "from the admin",
        "enabled": "on",
        "agent_name": "",
        "source": "otlp",
        "sample_rate": "0.5",
        "judge": "heuristic",
    }
    response = admin_client.post("/admin/agentic/evaluationrule/add/", form)
    assert response.status_code == 302, response.content.decode()[:2000]
    rule = EvaluationRule.objects.get()
    assert (rule.name, rule.source, rule.sample_rate, rule.created_by) == ("from the admin", "otlp", 0.5, admin_user)
    listing = admin_client.get("/admin/agentic/evaluationrule/").content.decode()
    assert "from the admin" in listing


def test_admin_refuses_what_the_api_refuses(admin_client):
    EvaluationRuleFactory(name="taken")
    for change, message in (
        ({"sample_rate": "2"}, "Between 0 and 1"),
        ({"judge": "llm"}, "needs an LLM"),
        ({"name": "taken"}, "already exists"),
    ):
        form = {
            "name": "new",
            "enabled": "on",
            "agent_name": "",
            "source": "any",
            "sample_rate": "1",
            "judge": "heuristic",
            **change,
        }
        response = admin_client.post("/admin/agentic/evaluationrule/add/", form)
        assert response.status_code == 200 and message in response.content.decode()
    assert EvaluationRule.objects.count() == 1


def test_a_taken_name_is_a_conflict_in_the_service():
    data = rule_services.RuleData("dup", True, "", "any", 1.0, "heuristic")
    rule_services.rule_create(data=data)
    with pytest.raises(ConflictError):
        rule_services.rule_create(data=data)


@pytest.mark.django_db(transaction=True)  # the backfill sends when its (autocommit) request commits
def test_backfill_with_the_broker_down_is_503(staff_api, monkeypatch):
    def down(*args):
        raise OperationalError("connection refused")

    monkeypatch.setattr(rule_services, "_send", down)
    _finished("queued-nowhere", timedelta(minutes=5))
    rule = EvaluationRuleFactory()
    response = staff_api.post(f"{URL}/{rule.pk}/backfill", {"since": "2026-01-01T00:00:00Z"}, format="json")
    assert response.status_code == 503
    assert "try the backfill again" in response.json()["detail"]
