"""Issue 21 point 3: a NUL in any JSON string of any endpoint answers 422 {"detail": ...}, never a 500
from PostgreSQL refusing to store it (and nothing is written). Storage is involved: run these on
PostgreSQL too."""

import pytest
from django.contrib.auth import get_user_model
from django.test import TestCase
from pydantic import ValidationError

from apps.queues.api.schemas import QueueAssignIn, QueueIn, QueueItemAddIn, QueueItemReviewIn
from apps.queues.models import QueueItem, ReviewQueue
from apps.runs.api.schemas import ReviewIn, RunCreateIn
from apps.runs.models import EvaluationRun
from tests.queues.factories import QueueItemFactory, ReviewQueueFactory, reviewable_result
from tests.runs.conftest import plan  # noqa: F401 (a fixture)
from tests.runs.factories import PLAN_AGENT, PLAN_RUBRIC, PLAN_TEST_SET, verdict_reviews

pytestmark = pytest.mark.django_db
QUEUES = "/api/v1/queues"
NUL = "x\u0000y"


def assert_nul_refused(response, field=None):
    assert response.status_code == 422, (response.status_code, response.content)
    detail = response.json()["detail"]
    assert "NUL" in str(detail)
    if field is not None:
        assert any(field in [str(part) for part in err["loc"]] for err in detail), detail


def test_run_label_with_a_nul_is_422_and_starts_nothing(api, plan):  # noqa: F811
    body = {
        "agent_id": PLAN_AGENT,
        "test_set_id": str(PLAN_TEST_SET),
        "rubric_id": str(PLAN_RUBRIC),
        "judge_model": "heuristic",
        "label": NUL,
    }
    with TestCase.captureOnCommitCallbacks(execute=True):
        response = api.post("/api/v1/runs", body, format="json")
    assert_nul_refused(response, "label")
    assert not EvaluationRun.objects.exists()


@pytest.mark.parametrize("change", [{"note": NUL}, {"key": NUL}])
def test_result_review_with_a_nul_is_422(staff_api, change):
    result = reviewable_result()
    body = {"kind": "rule", "key": "USES_KB", "passed": True, **change}
    response = staff_api.post(f"/api/v1/results/{result.result_id}/reviews", body, format="json")
    assert_nul_refused(response, next(iter(change)))
    assert not verdict_reviews().exists()


@pytest.mark.parametrize("change", [{"name": NUL}, {"description": NUL}])
def test_queue_create_and_update_with_a_nul_are_422(staff_api, change):
    body = {"name": "triage", "kind": "run_result", **change}
    assert_nul_refused(staff_api.post(QUEUES, body, format="json"), next(iter(change)))
    assert not ReviewQueue.objects.exists()
    queue = ReviewQueueFactory(name="kept")
    assert_nul_refused(staff_api.put(f"{QUEUES}/{queue.pk}", body, format="json"), next(iter(change)))
    queue.refresh_from_db()
    assert queue.name == "kept" and queue.description == ""


def test_queue_assign_and_add_with_a_nul_are_422(staff_api):
    item = QueueItemFactory()
    assign = staff_api.post(f"{QUEUES}/{item.queue_id}/items/{item.pk}/assign", {"username": NUL}, format="json")
    assert_nul_refused(assign, "username")
    added = staff_api.post(f"{QUEUES}/{item.queue_id}/items", {"target_id": NUL}, format="json")
    assert_nul_refused(added, "target_id")
    assert QueueItem.objects.get().assigned_to is None


@pytest.mark.parametrize(
    "body",
    [
        {"verdicts": [{"kind": "rule", "key": "USES_KB", "passed": True}], "note": NUL},
        {"verdicts": [{"kind": "rule", "key": NUL, "passed": True}]},
    ],
)
def test_queue_review_with_a_nul_is_422_and_reviews_nothing(staff_api, body):
    item = QueueItemFactory()
    response = staff_api.post(f"{QUEUES}/{item.queue_id}/items/{item.pk}/review", body, format="json")
    assert_nul_refused(response)
    item.refresh_from_db()
    assert item.done_at is None and not verdict_reviews().exists()


@pytest.mark.parametrize(
    "model, body",
    [
        (RunCreateIn, {"agent_id": "a" * 24, "label": NUL}),
        (ReviewIn, {"kind": "rule", "key": "k", "passed": True, "note": NUL}),
        (QueueIn, {"name": NUL, "kind": "run_result"}),
        (QueueIn, {"name": "n", "kind": "run_result", "description": NUL}),
        (QueueAssignIn, {"username": NUL}),
        (QueueItemAddIn, {"target_id": NUL}),
        (QueueItemReviewIn, {"verdicts": [{"key": NUL}]}),
        (QueueItemReviewIn, {"verdicts": [{"key": "k"}], "note": NUL}),
    ],
)
def test_the_schemas_themselves_refuse_nul(model, body):
    """The fields use the shared storable text types, so a body validated from anywhere (not only the
    JSON parser: a form, a file import) is refused with the field named."""
    with pytest.raises(ValidationError, match="NUL"):
        model.model_validate(body)


def test_a_nul_that_is_only_escaped_text_is_accepted(staff_api):
    """A backslash followed by u0000 is six ordinary characters, not a NUL."""
    response = staff_api.post(QUEUES, {"name": "C:\\u0000dir", "kind": "run_result"}, format="json")
    assert response.status_code == 201 and response.json()["name"] == "C:\\u0000dir"


def test_nul_in_a_key_of_the_body_is_422(staff_api):
    response = staff_api.post(QUEUES, {"name": "n", "kind": "run_result", "odd\u0000key": 1}, format="json")
    assert response.status_code == 422 and "NUL" in str(response.json()["detail"])
    assert not ReviewQueue.objects.exists()


def test_batch_ingest_still_rejects_only_the_item_with_a_nul(api):
    """The traces batch validates each item on its own: a NUL refuses its item, not the request."""
    good = {"session_id": "good", "user_query": "q", "agent_name": "a", "final_response": "r", "success": True}
    bad = {**good, "session_id": "bad", "user_query": NUL}
    response = api.post("/api/v1/metrics/traces/batch", {"traces": [good, bad]}, format="json")
    assert response.status_code == 200, response.content
    answer = response.json()
    assert (answer["accepted_count"], answer["rejected_count"]) == (1, 1)
    assert answer["rejected"][0]["index"] == 1 and "NUL" in answer["rejected"][0]["reason"]


def test_the_parser_net_names_the_place_like_a_schema_error(api):
    """A body field typed plain `str` would let a NUL through to the database; the JSON parser refuses
    it first, in the schema errors' shape (indexes stay numbers)."""
    api.post("/api/v1/metrics/traces", {"session_id": "s1", "user_query": "q", "agent_name": "a"}, format="json")
    response = api.post("/api/v1/metrics/traces/s1/tool-calls", [{"tool_name": "t"}, {"tool_name": NUL}], format="json")
    assert response.status_code == 422
    assert response.json()["detail"] == [
        {
            "loc": [1, "tool_name"],
            "type": "value_error",
            "msg": "Value error, contains a NUL character (\\u0000), which cannot be stored",
        }
    ]


def _string_fields(schema, components, depth=0):
    """The names of the string properties of a request body's schema (following $ref and allOf)."""
    if depth > 5:
        return set()
    if "$ref" in schema:
        return _string_fields(components[schema["$ref"].rsplit("/", 1)[1]], components, depth + 1)
    names = set()
    for part in schema.get("allOf", []) + schema.get("oneOf", []) + schema.get("anyOf", []):
        names |= _string_fields(part, components, depth + 1)
    for name, prop in schema.get("properties", {}).items():
        options = [prop, *prop.get("anyOf", []), *prop.get("oneOf", [])]
        if any(option.get("type") == "string" for option in options):
            names.add(name)
    return names


def _json_body_operations():
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    components = schema["components"]["schemas"]
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            body = operation.get("requestBody", {}).get("content", {}).get("application/json")
            if body is None or path == "/api/v1/metrics/traces/batch":
                continue
            for parameter in operation.get("parameters", []):
                if parameter["in"] == "path":
                    kind = parameter["schema"].get("type"), parameter["schema"].get("format")
                    value = {("integer", None): "1", ("string", "uuid"): "00000000-0000-0000-0000-000000000001"}
                    path = path.replace("{" + parameter["name"] + "}", value.get(kind, "s1"))
            yield method, path, _string_fields(body["schema"], components) or {"text"}


@pytest.mark.parametrize(
    "method, path, fields", list(_json_body_operations()), ids=lambda value: value if isinstance(value, str) else ""
)
def test_every_json_endpoint_answers_a_nul_with_422(staff_api, method, path, fields):
    """Every operation that takes a JSON body, with a NUL in each of its string fields: never a 500.
    Ids in the path name nothing, so an endpoint that looks its object up first may answer 404. The
    key's owner is a superuser, so that an endpoint only a superuser may call (creating a project)
    reads its body too rather than answering 403 first."""
    assert "{" not in path
    get_user_model().objects.filter(username="staff-user").update(is_superuser=True)
    reached = set()
    for field in sorted(fields):
        for value in (NUL, [NUL]):
            response = getattr(staff_api, method)(path, {field: value}, format="json")
            assert response.status_code in (404, 422), (field, response.status_code, response.content[:300])
            reached.add(response.status_code)
            if response.status_code == 422:
                assert "NUL" in str(response.json()["detail"]), (field, response.content[:300])
