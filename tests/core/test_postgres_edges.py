"""Inputs that SQLite stores happily but PostgreSQL turns into 500s (issue 12, item 6).

Each test runs on both databases; the ones that only fail on PostgreSQL say so. Run them with
DATABASE_URL=postgres://... to see the reproduction."""

import pytest
from django.db import DataError

from apps.bots.models import Bot
from apps.traces.models import AgentTrace, ToolCall
from tests.bots.factories import BotFactory

pytestmark = pytest.mark.django_db

# A client sending -(2**63) - 1 is parsed by orjson as the float -2**63, which fits: not listed.
BIG_NUMBERS = [1e20, 10**20, 2**63, -1e19, 1.5e300]


def _bot_body(harness_context):
    return {"name": "Big", "harness_context": harness_context, "adapter": "demo"}


@pytest.mark.parametrize("number", BIG_NUMBERS)
def test_json_numbers_outside_64_bits_are_refused_naming_the_field(api, number):
    # jsonb keeps 1e20 as the numeric 100000000000000000000 and hands it back as an int that
    # overflows every 64-bit JSON encoder: such a value must not get in.
    response = api.post("/api/v1/bots", _bot_body({"n": number}), format="json")
    assert response.status_code == 422, response.content
    assert "harness_context" in str(response.json()["detail"])
    assert "64-bit" in str(response.json()["detail"])
    assert not Bot.objects.exists()


def test_json_numbers_at_the_64_bit_edges_are_stored(api):
    edges = {"max": 2**63 - 1, "min": -(2**63), "float": 1.5e18, "tiny": 1e-20}
    response = api.post("/api/v1/bots", _bot_body(edges), format="json")
    assert response.status_code == 201, response.content
    assert api.get(f"/api/v1/bots/{response.json()['agent_id']}").json()["harness_context"] == edges


@pytest.mark.parametrize(
    "path, body",
    [
        ("/api/v1/metrics/traces", {"session_id": "s1", "user_query": "q", "agent_name": "a", "metadata": {"n": 1e20}}),
        ("/api/v1/metrics/traces/batch", None),
    ],
)
def test_trace_metadata_with_big_numbers_is_refused(api, path, body):
    if body is None:
        item = {
            "session_id": "s1",
            "user_query": "q",
            "agent_name": "a",
            "final_response": "ok",
            "success": True,
            "metadata": {"n": 100000000000000000000},
        }
        response = api.post(path, {"traces": [item]}, format="json")
        assert response.status_code == 200
        assert response.json()["rejected"][0]["index"] == 0
        assert "metadata" in response.json()["rejected"][0]["reason"]
    else:
        response = api.post(path, body, format="json")
        assert response.status_code == 422
        assert "metadata" in str(response.json()["detail"])
    assert not AgentTrace.objects.exists()


@pytest.mark.parametrize("field", ["tool_args", "tool_result"])
def test_tool_call_json_with_big_numbers_is_refused(api, field):
    api.post("/api/v1/metrics/traces", {"session_id": "s1", "user_query": "q", "agent_name": "a"}, format="json")
    call = {"tool_name": "t", "tool_args": {}, "tool_result": None, field: {"n": [1, 1e20]}}
    response = api.post("/api/v1/metrics/traces/s1/tool-calls", call, format="json")
    assert response.status_code == 422
    assert field in str(response.json()["detail"])
    assert not ToolCall.objects.exists()


def test_already_stored_big_numbers_still_render(api):
    # Rows written before the check (or by the admin, or in-process) must not make a list 500
    # for everyone: the renderer falls back to an encoder without the 64-bit limit.
    BotFactory(harness_context={"n": 10**20, "neg": -(10**30), "keys": {"1": 2**64}})
    response = api.get("/api/v1/bots")
    assert response.status_code == 200
    assert response.json()[0]["harness_context"]["n"] == 10**20


def test_float_stored_as_jsonb_numeric_renders(api, on_postgres):
    # Reproduces the original report: on PostgreSQL 1e20 comes back from jsonb as an int.
    bot = BotFactory(harness_context={"n": 1e20})
    bot.refresh_from_db()
    assert bot.harness_context["n"] == 10**20
    response = api.get("/api/v1/bots")
    assert response.status_code == 200
    assert response.json()[0]["harness_context"]["n"] == 10**20


# --- NUL characters in the URL ---------------------------------------------------------------
# PostgreSQL refuses a NUL in any text parameter ("A string literal cannot contain NUL"), so an id or
# filter carrying one used to reach the database and come back as a 500.

NUL_PATHS = [
    "/api/v1/metrics/trace/a%00b",
    "/api/v1/metrics/history/a%00b",
    "/api/v1/bots/a%00b",
    "/api/v1/rubrics/a%00b",
    "/api/v1/test-sets/a%00b",
    "/api/v1/datasets/a%00b",
]


@pytest.mark.parametrize("path", NUL_PATHS)
def test_nul_in_an_api_path_is_404(api, path):
    response = api.get(path)
    assert response.status_code == 404
    assert response.json()["detail"]


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/rubrics",
        "/api/v1/test-sets",
        "/api/v1/runs",
        "/api/v1/metrics/history",
        "/api/v1/trace/history",
        "/api/v1/bots",
    ],
)
@pytest.mark.parametrize("query", ["agent_id=%00", "status=a%00", "x%00=1"])
def test_nul_in_a_query_parameter_is_422_naming_it(api, path, query):
    response = api.get(f"{path}?{query}")
    assert response.status_code == 422
    detail = response.json()["detail"]
    assert detail[0]["loc"][0] == "query"
    assert "NUL" in detail[0]["msg"]


def test_nul_in_a_console_filter_or_path_is_refused(admin_client):
    assert admin_client.get("/console/runs/?agent_id=%00").status_code == 400
    assert admin_client.get("/console/traces/a%00b/").status_code == 404
    assert admin_client.get("/admin/traces/agenttrace/?q=%00").status_code == 400


def test_nul_reaches_postgres_as_an_error_without_the_guard(on_postgres):
    # Why the guard exists: the database itself refuses the value.
    with pytest.raises(DataError, match="NUL"):
        AgentTrace.objects.filter(session_id="a\x00b").exists()


def test_nul_in_an_api_form_field_is_422(api):
    response = api.post("/api/v1/bots", "name=a%00b", content_type="application/x-www-form-urlencoded")
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["body", "name"]


def test_multipart_bodies_are_left_to_the_views(api):
    # The middleware must not consume a body a view reads raw: the import still answers, not a 500.
    response = api.post(
        "/api/v1/test-sets/import?format=csv&agent_id=64f1c0ffee0000000000a001&name=x",
        {"file": "type,name\n"},
        format="multipart",
    )
    assert response.status_code < 500


def test_the_trace_contract_path_answers_json_like_the_rest_of_the_api(api):
    """`/trace` is the TRACE contract's own path outside /api/: its refusals are the API's JSON,
    not the pages' plain text (schemathesis found the text/plain 400 as an undocumented type)."""
    response = api.post("/trace?x=%00", {"query": "q"}, format="json")
    assert response.status_code == 422
    assert response["Content-Type"] == "application/json"
    assert response.json()["detail"][0]["loc"] == ["query", "x"]
