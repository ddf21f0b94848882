import csv
import io
import json

import pytest

from apps.testsets.models import TestSet, TestSetVersion
from tests.bots.factories import BotFactory
from tests.testsets.factories import SuiteFactory, make_test_set_payload

pytestmark = pytest.mark.django_db


@pytest.fixture
def bot():
    return BotFactory(tool_names=["search_kb", "live_handoff"])


@pytest.fixture
def test_set(api, bot):
    """The test set as the API shows it (GET), with characters that trip up CSV and JSON writers."""
    items = make_test_set_payload(bot.agent_id)["items"]
    items[0]["name"] = 'Quotes "and", commas'
    items[0]["inputs"]["message"] = "Line one\nLine two, with ünïcödé ✓"
    return api.get(f"/api/v1/test-sets/{SuiteFactory(bot=bot, items=items).test_set_id}").json()


@pytest.mark.parametrize(
    "fmt, media", [("json", "application/json"), ("jsonl", "application/x-ndjson"), ("csv", "text/csv")]
)
def test_export_import_round_trip(api, bot, test_set, fmt, media):
    tid = test_set["test_set_id"]
    exported = api.get(f"/api/v1/test-sets/{tid}/export?format={fmt}")
    assert exported.status_code == 200 and exported["Content-Type"].startswith(media)
    assert f"v1.{fmt}" in exported["Content-Disposition"]

    # Re-importing the unchanged file into the same test set publishes nothing.
    same = api.post(f"/api/v1/test-sets/{tid}/import?format={fmt}", data=exported.content, content_type=media)
    assert same.status_code == 200 and same.json()["version"] == 1

    # Imported as a new test set, the items are identical, ids included.
    created = api.post(
        f"/api/v1/test-sets/import?format={fmt}&agent_id={bot.agent_id}&name=Copy",
        data=exported.content,
        content_type=media,
    )
    assert created.status_code == 201, created.json()
    assert created.json()["items"] == test_set["items"] and created.json()["name"] == "Copy"


def test_csv_shape_and_edited_import_publishes_a_version(api, test_set):
    tid = test_set["test_set_id"]
    text = api.get(f"/api/v1/test-sets/{tid}/export?format=csv").content.decode()
    rows = list(csv.DictReader(io.StringIO(text)))
    assert rows[0]["name"] == 'Quotes "and", commas' and rows[0]["message"].startswith("Line one\nLine two")
    assert json.loads(rows[1]["scripted_turns"]) == ["How many days carry over?", "Merci — and the rest?"]
    rows[1]["max_turns"] = "12"
    rows[1]["success_criteria"] = "Says 5 days\nSays the rest is forfeited"  # hand-edited: one per line
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    response = api.post(f"/api/v1/test-sets/{tid}/import", data=out.getvalue().encode(), content_type="text/csv")
    assert response.status_code == 200 and response.json()["version"] == 2
    scenario = response.json()["items"][1]
    assert scenario["inputs"]["max_turns"] == 12
    assert scenario["expected"]["success_criteria"] == ["Says 5 days", "Says the rest is forfeited"]
    assert scenario["item_id"] == test_set["items"][1]["item_id"]
    assert TestSetVersion.objects.get(version=2).changelog == "Imported from CSV"


def test_json_file_carries_its_own_name_and_agent(api, test_set):
    exported = api.get(f"/api/v1/test-sets/{test_set['test_set_id']}/export?format=json").content
    response = api.post("/api/v1/test-sets/import", data=exported, content_type="application/json")
    assert response.status_code == 201 and response.json()["name"] == test_set["name"]
    assert response.json()["test_set_id"] != test_set["test_set_id"]


def test_older_version_export(api, bot, test_set):
    tid = test_set["test_set_id"]
    api.put(f"/api/v1/test-sets/{tid}", {**test_set, "name": "v2"}, format="json")
    v1 = json.loads(api.get(f"/api/v1/test-sets/{tid}/export?format=json&version=1").content)
    assert v1["version"] == 1 and v1["name"] == test_set["name"]
    assert api.get(f"/api/v1/test-sets/{tid}/export?version=x").status_code == 422


@pytest.mark.parametrize(
    "query, body, media, fragment",
    [
        ("format=xml", b"<a/>", "application/xml", "format must be one of"),
        ("", b"[]", "application/octet-stream", "Name the file format"),
        ("format=json", b"{broken", "application/json", "Not valid JSON"),
        ("format=json", b'{"no": "items"}', "application/json", "items"),
        (
            "format=jsonl",
            b'{"type": "single_turn", "name": "a", "inputs": {"message": "m"}}\nnot json\n',
            "application/x-ndjson",
            "JSONL line 2",
        ),
        ("format=csv", b"type,name,colour\nsingle_turn,a,red\n", "text/csv", "Unknown CSV columns: colour"),
        ("format=csv", b"type,name,max_turns\nscenario,a,many\n", "text/csv", "max_turns: not a whole number"),
        ("format=csv", b"type,name,message\nsingle_turn,a,\n", "text/csv", "needs inputs.message"),
        ("format=csv", b"\xff\xfe", "text/csv", "UTF-8"),
        ("format=csv", b"", "text/csv", "empty"),
    ],
)
def test_bad_files_are_422_and_write_nothing(api, bot, test_set, query, body, media, fragment):
    tid = test_set["test_set_id"]
    response = api.post(f"/api/v1/test-sets/{tid}/import?{query}", data=body, content_type=media)
    assert response.status_code == 422, response.content
    assert fragment in json.dumps(response.json()["detail"], ensure_ascii=False)
    assert TestSetVersion.objects.count() == 1


def test_new_import_needs_agent_and_name(api, bot):
    body = b'[{"type": "single_turn", "name": "a", "inputs": {"message": "m"}}]'
    response = api.post("/api/v1/test-sets/import?format=json", data=body, content_type="application/json")
    assert response.status_code == 422 and "agent_id and name" in response.json()["detail"]
    response = api.post(
        f"/api/v1/test-sets/import?format=json&agent_id={bot.agent_id}&name=N",
        data=body,
        content_type="application/json",
    )
    assert response.status_code == 201
    assert TestSet.objects.count() == 1


FORMULAS = {
    "name": '=HYPERLINK("http://evil.example","x")',
    "message": "+1+cmd|' /C calc'!A0",
    "expected_outcome": "-2 days",
    "persona": "@SUM(A1)",
    "initial_message": "\tleading tab",
}


def test_csv_cells_cannot_start_a_spreadsheet_formula_and_still_round_trip(api, bot):
    # Issue 12, item 10: a cell starting with = + - @ (or a tab / CR) runs as a formula when a
    # reviewer opens the export in a spreadsheet. Prefixed with ' it is text; import removes it.
    body = make_test_set_payload(bot.agent_id)
    body["items"][0]["name"] = FORMULAS["name"]
    body["items"][0]["inputs"]["message"] = FORMULAS["message"]
    body["items"][0]["expected"]["expected_outcome"] = FORMULAS["expected_outcome"]
    scenario = body["items"][1]
    scenario["inputs"]["persona"], scenario["inputs"]["initial_message"] = (
        FORMULAS["persona"],
        FORMULAS["initial_message"],
    )
    body["items"][1]["name"] = "'=already quoted"
    created = api.post("/api/v1/test-sets", body, format="json").json()

    text = api.get(f"/api/v1/test-sets/{created['test_set_id']}/export?format=csv").content.decode()
    for row in csv.DictReader(io.StringIO(text)):
        for column, cell in row.items():
            assert cell[:1] not in ("=", "+", "-", "@", "\t", "\r"), (column, cell)
    rows = list(csv.DictReader(io.StringIO(text)))
    assert rows[0]["name"] == "'" + FORMULAS["name"] and rows[1]["persona"] == "'@SUM(A1)"

    copy = api.post(
        f"/api/v1/test-sets/import?format=csv&agent_id={bot.agent_id}&name=Copy",
        data=text.encode(),
        content_type="text/csv",
    )
    assert copy.status_code == 201, copy.json()
    assert copy.json()["items"] == created["items"]
