"""The OpenAPI document says every status an operation answers with, in the shape it answers.

schemathesis (`bin/fuzz-api`, run by `.ci/run`) checks the same against a live server; these tests
keep the document honest in the ordinary suite, where a new view without its error answers fails
fast."""

import io
from datetime import datetime

import jsonschema
import pytest
from django.core.management import call_command
from django.test import Client
from drf_spectacular.generators import SchemaGenerator

from tests.bots.factories import BotFactory
from tests.testsets.factories import SuiteFactory

METHODS = {"get", "post", "put", "patch", "delete"}
# Operations whose services refuse a write that conflicts with the stored state.
CONFLICTS = {
    ("post", "/api/v1/projects"),
    ("post", "/api/v1/metrics/traces"),
    ("post", "/api/v1/metrics/traces/{session_id}/intent"),
    ("post", "/api/v1/metrics/traces/{session_id}/tool-calls"),
    ("post", "/api/v1/metrics/traces/{session_id}/complete"),
    ("post", "/api/v1/bots"),
    ("put", "/api/v1/bots/{agent_id}"),
    ("delete", "/api/v1/bots/{agent_id}"),
    ("put", "/api/v1/rubrics/{rubric_id}"),
    ("put", "/api/v1/test-sets/{test_set_id}"),
    ("post", "/api/v1/test-sets/{test_set_id}/import"),
    ("post", "/api/v1/test-sets/{test_set_id}/items/from-traces"),
    ("post", "/api/v1/runs/{run_id}/cancel"),
    ("post", "/api/v1/results/{result_id}/reviews"),
    ("post", "/api/v1/evaluation-rules"),
    ("put", "/api/v1/evaluation-rules/{rule_id}"),
    ("post", "/api/v1/evaluation-rules/{rule_id}/backfill"),
    ("post", "/api/v1/queues"),
    ("put", "/api/v1/queues/{queue_id}"),
    ("post", "/api/v1/queues/{queue_id}/items/{item_id}/claim"),
    ("post", "/api/v1/alignment-trials/{trial_id}/publish"),
    ("post", "/api/v1/test-sets/{test_set_id}/anchors"),
    ("post", "/api/v1/anchors/{anchor_id}/checks"),
    ("delete", "/api/v1/anchors/{anchor_id}"),
}


@pytest.fixture(scope="module")
def schema():
    return SchemaGenerator().get_schema(request=None, public=True)


def operations(schema):
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            if method in METHODS:
                yield method, path, operation


def validate(instance, schema, component: str) -> None:
    # The components travel with the schema so that its "#/components/..." references resolve.
    jsonschema.Draft202012Validator(
        {"$ref": f"#/components/schemas/{component}", "components": schema["components"]}
    ).validate(instance)


def error_schema(schema, operation, code) -> str:
    return operation["responses"][code]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]


def test_schema_validates_without_warnings(tmp_path):
    # --fail-on-warn turns any view drf-spectacular cannot describe into a failure.
    call_command(
        "spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "schema.yaml"), stdout=io.StringIO()
    )


def test_every_operation_documents_auth_errors(schema):
    for method, path, operation in operations(schema):
        for code in ("401", "403"):
            assert error_schema(schema, operation, code) == "ErrorOut", (method, path, code)


# Operations whose only 422 is a domain rule (none since comparing runs took `limit`: its 422 is
# either that rule's message or the field errors, which ValidationErrorOut's detail covers).
DOMAIN_422: set[tuple[str, str]] = set()


def test_bodies_and_query_parameters_document_422_and_bodies_413(schema):
    for method, path, operation in operations(schema):
        takes_query = any(p["in"] == "query" for p in operation.get("parameters", []))
        if "requestBody" in operation:
            assert error_schema(schema, operation, "413") == "ErrorOut", (method, path)
        if "requestBody" in operation or takes_query:
            assert error_schema(schema, operation, "422") == "ValidationErrorOut", (method, path)
        elif "422" in operation["responses"]:
            # Not a validation error (nothing to validate): a domain rule the view declares itself,
            # e.g. comparing runs of different test sets.
            assert error_schema(schema, operation, "422") == "ErrorOut", (method, path)
            assert (method, path) in DOMAIN_422, (method, path)


def test_ids_in_the_path_document_404(schema):
    for method, path, operation in operations(schema):
        if "{" in path:
            assert error_schema(schema, operation, "404") == "ErrorOut", (method, path)


def test_conflicting_writes_document_409(schema):
    documented = {(method, path) for method, path, operation in operations(schema) if "409" in operation["responses"]}
    assert documented == CONFLICTS


def test_validation_error_schema_accepts_both_shapes(schema):
    for body in (
        {"detail": "version must be a whole number"},
        {"detail": [{"loc": ["items", 0, "name"], "msg": "Field required", "type": "missing"}]},
    ):
        validate(body, schema, "ValidationErrorOut")


def test_a_contracts_400_documents_detail_as_a_string(schema):
    for method, path, operation in operations(schema):
        if "400" in operation["responses"]:
            assert error_schema(schema, operation, "400") == "BadRequestOut", (method, path)
    validate({"detail": "query looks like JSON but does not parse"}, schema, "BadRequestOut")
    validate(
        {
            "detail": "invalid payload: tests: Field required",
            "errors": [{"loc": ["tests"], "msg": "Field required", "type": "missing"}],
        },
        schema,
        "BadRequestOut",
    )
    with pytest.raises(jsonschema.ValidationError):
        validate({"detail": [{"loc": ["tests"], "msg": "Field required", "type": "missing"}]}, schema, "BadRequestOut")


def test_test_set_export_documents_each_file_format(schema):
    content = schema["paths"]["/api/v1/test-sets/{test_set_id}/export"]["get"]["responses"]["200"]["content"]
    # The JSON file is the test set version itself (an object), not a string.
    assert content["application/json"]["schema"] == {"$ref": "#/components/schemas/TestSetOut"}
    assert content["application/x-ndjson"]["schema"] == {"type": "string"}
    assert content["text/csv"]["schema"] == {"type": "string"}


@pytest.mark.django_db
def test_test_set_json_export_matches_its_declaration(api, schema):
    test_set = SuiteFactory(bot=BotFactory(tool_names=["search_kb", "live_handoff"]))
    exported = api.get(f"/api/v1/test-sets/{test_set.test_set_id}/export?format=json")
    assert exported.status_code == 200
    body = exported.json()
    validate(body, schema, "TestSetOut")
    # Found by the fuzzer: the file wrote "2026-11-23 09:47:40+00:00", not an RFC 3339 date-time
    # (jsonschema checks formats only with an optional package, so check it here).
    for name in ("created_at", "updated_at"):
        assert body[name] == datetime.fromisoformat(body[name]).isoformat() and "T" in body[name]


def test_agentic_export_documents_the_streamed_file(schema):
    content = schema["paths"]["/api/v1/metrics/export"]["get"]["responses"]["200"]["content"]
    assert set(content) == {"application/json", "application/x-ndjson"}
    as_json = schema["components"]["schemas"]["ExportJsonOut"]["anyOf"]
    assert {"$ref": "#/components/schemas/ExportOut"} in as_json
    assert {"type": "array", "items": {"$ref": "#/components/schemas/EvaluationRecordOut"}} in as_json


def test_post_to_an_unknown_api_path_is_a_json_404():
    # Found by the fuzzer: the catch-all answered POSTs with Django's HTML CSRF page (403). The
    # test client skips CSRF checks unless asked to, which is how the suite missed it.
    client = Client(enforce_csrf_checks=True)
    response = client.post("/api/v1/results/not-a-uuid/reviews", {"kind": "rule"}, content_type="application/json")
    assert response.status_code == 404
    assert response.json() == {"detail": "No API endpoint at /api/v1/results/not-a-uuid/reviews"}


def test_every_operation_names_the_scope_it_needs(schema):
    """The scope a client must hold is part of the contract: a key made for CI should be made with it."""
    for method, path, operation in operations(schema):
        assert "` scope" in operation.get("description", ""), f"{method.upper()} {path} names no scope"
    delete_bot = schema["paths"]["/api/v1/bots/{agent_id}"]["delete"]
    assert "`admin` scope" in delete_bot["description"]
    start_trace = schema["paths"]["/api/v1/metrics/traces"]["post"]
    assert "`ingest` scope" in start_trace["description"]
