"""Issue 21, low finding: a CSV export wrote a carriage return inside a value unquoted (a reader that
splits lines on CR saw a line starting `=cmd|…`), and a formula after leading whitespace was not
neutralised. Every CSV evalsite writes (a run's results in the console, a test set's export) quotes
values holding CR or LF and guards a formula even after leading spaces."""

import csv
import io

import pytest

from apps.core.spreadsheet import from_spreadsheet, spreadsheet_safe
from tests.bots.factories import BotFactory
from tests.runs.factories import EvaluationResultFactory, EvaluationRunFactory, criterion
from tests.testsets.factories import SuiteFactory, make_test_set_payload

pytestmark = pytest.mark.django_db
CMD = "=cmd|' /C calc'!A0"
HOSTILE = ["before\r" + CMD, "before\n" + CMD, " " + CMD, "\u00a0\t " + CMD, "  +1", " @SUM(A1)"]


def _lines_split_on_cr_or_lf_outside_quotes_never_start_a_formula(text: str):
    # A naive reader splits on any CR or LF; inside a quoted value that is the value's own text, which
    # a CSV reader keeps together, so only unquoted line starts count.
    quoted, start = False, True
    for char in text:
        if start and not quoted:
            assert char not in "=+-@", text
        start = False
        if char == '"':
            quoted = not quoted
        elif char in "\r\n" and not quoted:
            start = True


def test_run_export_quotes_cr_and_lf_and_guards_formulas_after_spaces(reader_client):
    run = EvaluationRunFactory()
    for n, answer in enumerate(HOSTILE):
        EvaluationResultFactory(
            run=run,
            position=n,
            item_name=answer,
            criteria_scores=[criterion("ok", True)],
            output={"messages": [{"role": "assistant", "content": answer}]},
        )
    response = reader_client.get(f"/console/runs/{run.run_id}/export.csv")
    text = b"".join(response.streaming_content).decode()
    _lines_split_on_cr_or_lf_outside_quotes_never_start_a_formula(text)
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    assert sorted(row["answer"] for row in rows) == sorted(spreadsheet_safe(a) for a in HOSTILE)
    assert {row["item"] for row in rows if row["item"].lstrip().startswith("'")} == {
        "' " + CMD,
        "'\u00a0\t " + CMD,
        "'  +1",
        "' @SUM(A1)",
    }


def test_test_set_csv_export_quotes_cr_and_lf_guards_formulas_and_imports_back_exactly(api):
    bot = BotFactory()
    items = make_test_set_payload(bot.agent_id)["items"][:1]
    tid = SuiteFactory(bot=bot, items=items).test_set_id
    for value in HOSTILE:
        before = api.get(f"/api/v1/test-sets/{tid}").json()
        before["items"][0]["name"] = value
        before["items"][0]["inputs"]["message"] = value
        put = api.put(f"/api/v1/test-sets/{tid}", before, format="json")
        assert put.status_code == 200, put.content
        text = api.get(f"/api/v1/test-sets/{tid}/export?format=csv").content.decode()
        _lines_split_on_cr_or_lf_outside_quotes_never_start_a_formula(text)
        imported = api.post(f"/api/v1/test-sets/{tid}/import?format=csv", data=text.encode(), content_type="text/csv")
        assert imported.status_code == 200, imported.content
        assert imported.json()["items"][0]["name"] == value
        assert imported.json()["items"][0]["inputs"]["message"] == value


@pytest.mark.parametrize(
    "value", ["plain", "-", "'", "''", "'=x", " '=x", "' =x", "\t", "x\r=y", "'\r", "", " "] + HOSTILE
)
def test_the_guard_and_its_inverse(value):
    guarded = spreadsheet_safe(value)
    assert from_spreadsheet(guarded) == value
    assert not guarded.lstrip().startswith(("=", "+", "-", "@"))
