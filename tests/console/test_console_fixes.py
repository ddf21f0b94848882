"""Issue 20, point 6: the console fixes seen on the way. The demo bot named as what it is, tool
calls as JSON, permission pages in the console's layout, rule counts that say failed, previous/next
on a result page, "Evaluate now" on a trace page, a launch form that offers only the chosen bot's
test sets and rubrics, and a run's results exported as CSV and JSON Lines."""

import csv
import html
import io
import json
import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from apps.agentic.models import AgentEvaluation
from apps.runs import result_selectors
from apps.runs.forms import RunLaunchForm
from apps.runs.models import EvaluationRun
from tests.bots.factories import BotFactory
from tests.queues.factories import QueueItemFactory
from tests.rubrics.factories import RubricFactory
from tests.runs.factories import EvaluationResultFactory, EvaluationRunFactory, criterion, rule
from tests.testsets.factories import SuiteFactory
from tests.traces.factories import AgentTraceFactory

pytestmark = pytest.mark.django_db


def text(response) -> str:
    return re.sub(r"\s+", " ", response.content.decode())


# -- the demo bot ---------------------------------------------------------------------------------


def test_a_run_of_the_demo_bot_says_it_is_the_offline_demo_bot(staff_client, demo_run):
    # The demo bot is stored with a model, which its adapter never calls.
    assert demo_run.bot_snapshot["adapter"] == "demo" and demo_run.bot_llm_model
    page = text(staff_client.get(f"/console/runs/{demo_run.run_id}/"))
    bot_model = re.search(r'<dd id="bot-model">([^<]*)</dd>', page).group(1)
    assert bot_model == "offline demo bot (built-in, no language model)"
    assert demo_run.bot_llm_model not in bot_model


def test_a_run_of_a_model_backed_bot_names_its_model(staff_client):
    run = EvaluationRunFactory(
        bot_llm_provider="openai",
        bot_llm_model="gpt-4.1",
        bot_snapshot={"adapter": "openai", "llm_provider": "openai", "llm_model": "gpt-4.1"},
    )
    page = text(staff_client.get(f"/console/runs/{run.run_id}/"))
    assert '<dd id="bot-model">openai gpt-4.1</dd>' in page


# -- tool calls as JSON ---------------------------------------------------------------------------


def _result_with_tool_call(arguments, result):
    output = {
        "messages": [
            {"role": "user", "content": "How many PTO days?"},
            {
                "role": "assistant",
                "content": "15 days.",
                "tool_calls": [{"name": "search_kb", "arguments": arguments, "result": result, "success": True}],
            },
        ]
    }
    return EvaluationResultFactory(output=output)


def test_result_page_shows_tool_arguments_and_results_as_json(staff_client):
    long_text = "Employees accrue 1.25 days per month, " * 6
    result = _result_with_tool_call(
        {"query": "what's the PTO policy", "top_k": 3},
        {"passages": [{"title": "PTO Policy", "text": long_text}], "ok": True},
    )
    page = staff_client.get(f"/console/results/{result.result_id}/").content.decode()
    blocks = re.findall(r"<pre>(.*?)</pre>", page, flags=re.S)
    parsed = [json.loads(html.unescape(block)) for block in blocks]
    assert {"query": "what's the PTO policy", "top_k": 3} in parsed
    assert {"passages": [{"title": "PTO Policy", "text": long_text}], "ok": True} in parsed
    # Indented JSON with double quotes: not a Python repr ('query': ..., True) with the long string
    # broken into pieces.
    assert "&quot;query&quot;: &quot;what&#x27;s the PTO policy&quot;" in page
    assert "&#x27;query&#x27;" not in page and "True" not in "".join(blocks)
    assert "\n  &quot;top_k&quot;: 3" in page


def test_tool_call_json_is_escaped(staff_client):
    result = _result_with_tool_call({"query": "</pre><script>alert(1)</script>"}, "plain text result")
    page = staff_client.get(f"/console/results/{result.result_id}/").content.decode()
    assert "<script>alert(1)" not in page
    assert "&lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<pre>&quot;plain text result&quot;</pre>" in page


def test_trace_page_shows_tool_arguments_and_results_as_json(staff_client):
    trace = AgentTraceFactory(
        tool_calls=[
            {
                "tool_name": "list_k8s_clusters",
                "tool_args": {"datacenter": "Delhi"},
                # A result stored as a JSON string is shown as that JSON.
                "tool_result": '[{"name": "prod-01", "status": "running"}]',
            }
        ]
    )
    page = staff_client.get(f"/console/traces/{trace.session_id}/").content.decode()
    assert "<pre>{\n  &quot;datacenter&quot;: &quot;Delhi&quot;\n}</pre>" in page
    assert "&quot;name&quot;: &quot;prod-01&quot;" in page and "\\&quot;" not in page


# -- permission pages -----------------------------------------------------------------------------


def test_a_reader_refused_the_launch_page_gets_the_console_layout_and_a_way_back(reader_client, demo_run):
    run_page = f"http://testserver/console/runs/{demo_run.run_id}/"
    response = reader_client.get("/console/runs/new/", HTTP_REFERER=run_page)
    assert response.status_code == 403
    assert "console/forbidden.html" in [t.name for t in response.templates]
    page = text(response)
    assert 'class="console-nav"' in page and "Log out" in page  # the console's header and navigation
    assert "Your account lacks the 'evaluate' scope." in page
    assert f'id="go-back" href="{run_page}"' in page
    # A referer from elsewhere is no way back: the dashboard is.
    elsewhere = reader_client.get("/console/runs/new/", HTTP_REFERER="https://evil.example/")
    assert 'id="go-back" href="/console/"' in text(elsewhere)
    # POSTs refused the same way.
    refused = reader_client.post(f"/console/runs/{demo_run.run_id}/rerun/")
    assert refused.status_code == 403 and 'id="go-back"' in text(refused)


def test_the_readers_review_page_offers_no_review_keys(reader_client, staff_user):
    staff_client = Client()  # not the `client` fixture, which reader_client logged in as the reader
    staff_client.force_login(staff_user)
    item = QueueItemFactory()
    url = f"/console/queues/{item.queue_id}/items/{item.pk}/"
    reader_keys = re.search(r'<span class="muted keys" id="review-keys">([^<]*)</span>', text(reader_client.get(url)))
    assert reader_keys.group(1) == "keys: j/k next/previous item"
    staff_keys = re.search(r'<span class="muted keys" id="review-keys">([^<]*)</span>', text(staff_client.get(url)))
    assert "p/f pass/fail the current row" in staff_keys.group(1) and "Ctrl/⌘+Enter save" in staff_keys.group(1)


# -- the rules card -------------------------------------------------------------------------------


def _rules_label(client, run) -> str:
    page = text(client.get(f"/console/runs/{run.run_id}/"))
    return re.search(r'<span class="label" id="rules-failed">([^<]*)</span>', page).group(1)


def test_rules_card_counts_failed_medium_and_low_rules_as_failed(staff_client):
    run = EvaluationRunFactory()
    EvaluationResultFactory(
        run=run,
        criteria_scores=[criterion("ok", True)],
        rubric_scores=[rule("R1", True), rule("R2", False, "medium"), rule("R3", False, "low")],
    )
    EvaluationResultFactory(
        run=run,
        criteria_scores=[criterion("ok", True)],
        rubric_scores=[rule("R1", True), rule("R2", False, "medium"), rule("R4", False, status="skipped")],
    )
    label = _rules_label(staff_client, run)
    assert label == "rubric rules passed (3 failed (medium/low), 1 not assessable)"
    assert "warning" not in label


def test_rules_card_splits_failed_rules_by_severity(staff_client):
    run = EvaluationRunFactory()
    EvaluationResultFactory(run=run, rubric_scores=[rule("R1", False, "high"), rule("R2", False, "low")])
    assert _rules_label(staff_client, run) == "rubric rules passed (2 failed (1 high, 1 medium/low))"
    only_high = EvaluationRunFactory()
    EvaluationResultFactory(run=only_high, rubric_scores=[rule("R1", False, "high"), rule("R2", True, "low")])
    assert _rules_label(staff_client, only_high) == "rubric rules passed (1 failed)"


# -- previous / next on a result page -------------------------------------------------------------


def test_result_page_links_to_its_neighbours_in_the_run_table_order(staff_client):
    run = EvaluationRunFactory()
    passed = EvaluationResultFactory(run=run, position=0, criteria_scores=[criterion("ok", True)])
    failed_1 = EvaluationResultFactory(run=run, position=1, criteria_scores=[criterion("bad", False)])
    failed_2 = EvaluationResultFactory(run=run, position=2, criteria_scores=[criterion("bad", False)])
    EvaluationResultFactory(position=1, criteria_scores=[criterion("bad", False)])  # another run's: never a neighbour

    def neighbours(result):
        page = staff_client.get(f"/console/results/{result.result_id}/").content.decode()
        found = dict(re.findall(r'id="(previous-result|next-result)" rel="\w+" href="/console/results/([^/]+)/"', page))
        return found.get("previous-result"), found.get("next-result")

    # The table's order: failed first, then test set order (items 1, 2, 0).
    assert neighbours(failed_1) == (None, str(failed_2.result_id))
    assert neighbours(failed_2) == (str(failed_1.result_id), str(passed.result_id))
    assert neighbours(passed) == (str(failed_2.result_id), None)
    assert "first result" in text(staff_client.get(f"/console/results/{failed_1.result_id}/"))


# -- Evaluate now ---------------------------------------------------------------------------------


def test_staff_evaluate_a_trace_from_its_page(staff_client):
    trace = AgentTraceFactory(tool_calls=[{"tool_name": "list_k8s_clusters"}])
    page = text(staff_client.get(f"/console/traces/{trace.session_id}/"))
    assert 'id="evaluate-now"' in page and "csrfmiddlewaretoken" in page
    response = staff_client.post(f"/console/traces/{trace.session_id}/")
    assert response.status_code == 302
    assert response["Location"] == f"/console/traces/{trace.session_id}/#evaluations"
    evaluation = AgentEvaluation.objects.get(session_id=trace.session_id)
    assert evaluation.trace_id == trace.pk and evaluation.rating
    shown = text(staff_client.get(response["Location"]))
    assert f"Evaluated by {evaluation.judge}: {evaluation.rating}" in shown
    # Again, unchanged: the verdict stands and nothing is stored twice.
    staff_client.post(f"/console/traces/{trace.session_id}/")
    assert AgentEvaluation.objects.filter(session_id=trace.session_id).count() == 1
    assert "Already evaluated" in text(staff_client.get(f"/console/traces/{trace.session_id}/"))


def test_readers_neither_see_nor_use_evaluate_now(reader_client):
    trace = AgentTraceFactory()
    assert 'id="evaluate-now"' not in text(reader_client.get(f"/console/traces/{trace.session_id}/"))
    assert reader_client.post(f"/console/traces/{trace.session_id}/").status_code == 403
    assert not AgentEvaluation.objects.exists()


def test_evaluate_now_on_an_unknown_trace_is_404(staff_client):
    assert staff_client.post("/console/traces/no-such-session/").status_code == 404


# -- the launch form ------------------------------------------------------------------------------


@pytest.fixture
def two_bots(db):
    mine, other = BotFactory(name="Mine"), BotFactory(name="Other")
    return {
        "mine": mine,
        "other": other,
        "mine_set": SuiteFactory(bot=mine, name="Mine set"),
        "other_set": SuiteFactory(bot=other, name="Other set"),
        "mine_rubric": RubricFactory(bot=mine, name="Mine rubric"),
        "other_rubric": RubricFactory(bot=other, name="Other rubric"),
    }


def test_launch_form_marks_each_test_set_and_rubric_with_its_bot(staff_client, two_bots):
    page = staff_client.get("/console/runs/new/").content.decode()
    for name in ("mine", "other"):
        bot = two_bots[name].agent_id
        assert (
            f'data-bot="{bot}" value="{two_bots[name + "_set"].pk}"' in page
            or f'value="{two_bots[name + "_set"].pk}" data-bot="{bot}"' in page
        )
        assert re.search(rf'<option value="{two_bots[name + "_rubric"].pk}"[^>]*data-bot="{bot}"', page)
    assert '<optgroup label="Mine (' in page and "console/launch.js" in page


def test_launch_form_refuses_another_bots_test_set_and_rubric(staff_client, two_bots):
    response = staff_client.post(
        "/console/runs/new/",
        {
            "agent_id": two_bots["mine"].agent_id,
            "test_set_id": str(two_bots["other_set"].pk),
            "rubric_id": str(two_bots["other_rubric"].pk),
            "concurrency": "2",
            "repeats": "1",
        },
    )
    assert response.status_code == 200 and not EvaluationRun.objects.exists()
    errors = response.context["form"].errors
    assert errors["test_set_id"] == [
        "This test set belongs to the bot “Other”, not to the bot chosen above: "
        "choose one of that bot's test sets, or the bot “Other”."
    ]
    assert "belongs to the bot “Other”" in errors["rubric_id"][0]


def test_launch_form_accepts_the_chosen_bots_own(two_bots):
    form = RunLaunchForm(
        data={
            "agent_id": two_bots["mine"].agent_id,
            "test_set_id": str(two_bots["mine_set"].pk),
            "rubric_id": str(two_bots["mine_rubric"].pk),
            "concurrency": "2",
        },
        project=two_bots["mine"].project,
    )
    assert form.is_valid(), form.errors


# -- export ---------------------------------------------------------------------------------------


def _export_run():
    run = EvaluationRunFactory()
    answers = ['=HYPERLINK("http://evil.example")', "+1", "-2 days", "@SUM(A1)", 'plain, with "quotes"\nand a line']
    for n, answer in enumerate(answers):
        EvaluationResultFactory(
            run=run,
            position=n,
            item_name="=cmd()" if n == 0 else f"item {n}",
            criteria_scores=[criterion("ok", n != 1), criterion("two", True)],
            rubric_scores=[rule("R1", True), rule("R2", n != 2, "low"), rule("R3", True, "medium", status="skipped")],
            output={"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": answer}]},
        )
    return run, answers


def _body(response) -> str:
    assert response.streaming
    return b"".join(response.streaming_content).decode()


def test_run_page_links_to_its_exports(staff_client):
    run = EvaluationRunFactory()
    page = staff_client.get(f"/console/runs/{run.run_id}/").content.decode()
    assert f'href="/console/runs/{run.run_id}/export.csv"' in page
    assert f'href="/console/runs/{run.run_id}/export.jsonl"' in page


def test_csv_export_has_every_result_in_table_order_and_is_injection_safe(reader_client):
    run, answers = _export_run()
    response = reader_client.get(f"/console/runs/{run.run_id}/export.csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert response["Content-Disposition"] == f'attachment; filename="run-{run.run_id}-results.csv"'
    rows = list(csv.DictReader(io.StringIO(_body(response))))
    assert list(rows[0]) == list(result_selectors.EXPORT_COLUMNS)
    # Failed first (item 1 failed a criterion), then test set order.
    assert [r["item"] for r in rows] == ["item 1", "'=cmd()", "item 2", "item 3", "item 4"]
    by_item = {r["item"]: r for r in rows}
    assert by_item["item 1"]["outcome"] == "failed" and by_item["item 1"]["passed"] == "false"
    assert by_item["item 1"]["criteria_passed"] == "1" and by_item["item 1"]["criteria_total"] == "2"
    assert by_item["item 2"]["rules_passed"] == "1" and by_item["item 2"]["rules_failed"] == "1"
    assert by_item["item 2"]["rules_failed_medium_low"] == "1" and by_item["item 2"]["rules_not_assessed"] == "1"
    assert by_item["item 3"]["duration_ms"] == "5" and by_item["item 3"]["attempt"] == "1"
    # Cells a spreadsheet would run as a formula start with a quote; other text is left as it is.
    assert by_item["'=cmd()"]["answer"] == "'" + answers[0]
    assert by_item["item 1"]["answer"] == "'+1"
    assert by_item["item 2"]["answer"] == "'-2 days"
    assert by_item["item 3"]["answer"] == "'@SUM(A1)"
    assert by_item["item 4"]["answer"] == answers[4]


def test_jsonl_export_is_one_json_object_per_result(staff_client):
    run, answers = _export_run()
    response = staff_client.get(f"/console/runs/{run.run_id}/export.jsonl")
    assert response["Content-Type"] == "application/x-ndjson"
    lines = _body(response).splitlines()
    records = [json.loads(line) for line in lines]
    assert len(records) == 5 and set(records[0]) == set(result_selectors.EXPORT_COLUMNS)
    # JSON is not run by a spreadsheet: the values are exactly as stored.
    assert records[1] == {
        "item": "=cmd()",
        "attempt": 1,
        "outcome": "passed",
        "passed": True,
        "criteria_passed": 2,
        "criteria_total": 2,
        "rules_passed": 2,
        "rules_failed": 0,
        "rules_failed_medium_low": 0,
        "rules_not_assessed": 1,
        "duration_ms": 5,
        "answer": answers[0],
    }


def test_export_reads_in_chunks_and_misses_no_row(staff_client, monkeypatch):
    """Chunks of two over seven results: each row once, in table order, all from one query (a
    cursor read a chunk at a time, not a query per page of rows)."""
    monkeypatch.setattr(result_selectors, "EXPORT_CHUNK_ROWS", 2)
    run = EvaluationRunFactory()
    for n in range(7):
        EvaluationResultFactory(run=run, position=n, criteria_scores=[criterion("c", n % 3 != 0)])
    EvaluationResultFactory(position=0)  # another run's
    with CaptureQueriesContext(connection) as queries:
        rows = list(result_selectors.result_export_rows(run=run))
    assert [r["item"] for r in rows] == ["item 0", "item 3", "item 6", "item 1", "item 2", "item 4", "item 5"]
    # One cursor over the results, and one query for each chunk's verdicts (Score rows).
    assert len(queries) == 1 + 4


def test_export_of_an_unknown_format_or_run_is_404(staff_client):
    run = EvaluationRunFactory()
    assert staff_client.get(f"/console/runs/{run.run_id}/export.xlsx").status_code == 404
    assert staff_client.get("/console/runs/00000000-0000-0000-0000-000000000000/export.csv").status_code == 404
