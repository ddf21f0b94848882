"""Issue 15, points 1, 5 and 6: the result page puts the item, the answer and what was expected
beside the verdicts; the run page's counts agree with each other and follow the reviews; the run
page updates while the run goes and says when no worker picks it up."""

import re
import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django.utils.html import escape

from apps.runs.models import EvaluationResult, EvaluationRun
from tests.runs.factories import (
    PTO_CRITERIA,
    PTO_ITEM,
    EvaluationResultFactory,
    EvaluationRunFactory,
    criterion,
    results_bulk_create,
    rule,
    store_verdicts,
)

pytestmark = pytest.mark.django_db


def text(response) -> str:
    return re.sub(r"\s+", " ", response.content.decode())


def row_of(page: str, result) -> str:
    match = re.search(rf'<tr [^>]*data-result-id="{result.result_id}".*?</tr>', page)
    assert match, f"no row for {result.item_name}"
    return match.group(0)


# Point 1 -------------------------------------------------------------------------------------------


def test_result_page_shows_input_answer_and_expected_before_the_verdicts(staff_client):
    result = EvaluationResultFactory(
        run=EvaluationRunFactory(),
        position=0,
        item={**PTO_ITEM, "tags": ["hr"]},
        output={
            "messages": [
                {"role": "user", "content": "How many PTO days do I accrue per month?"},
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {"name": "search_kb", "arguments": {"q": "PTO"}, "result": "1.5 days", "success": True}
                    ],
                },
                {"role": "assistant", "content": "You accrue 1.5 days of PTO per month.", "tool_calls": []},
            ]
        },
        criteria_scores=[criterion("Response includes the monthly accrual of 1.5 days", True)],
        rubric_scores=[rule("BRIEF", False, "medium")],
    )
    page = text(staff_client.get(f"/console/results/{result.result_id}/"))
    subject = page[page.index('id="result-subject"') : page.index('id="verdicts"')]
    assert "How many PTO days do I accrue per month?" in subject
    assert re.search(r'id="final-answer">.*You accrue 1.5 days of PTO per month.', subject)
    assert escape(PTO_CRITERIA[0]) in subject, "the expected outcome, formatted"
    assert "<code>search_kb</code>" in subject and "<code>live_handoff</code>" in subject
    assert "tools called:" in subject
    # The whole test set as one line of JSON is gone; the item is on the page.
    assert "(JSON)" not in page.replace("Rubric v1 (JSON)", "") and "/api/v1/test-sets/" not in page
    assert page.index('id="final-answer"') < page.index('id="rule-BRIEF"')
    # Nothing fails the item; the medium rule warns, and its verdict is marked as a warning.
    assert 'class="verdict flagged warning" id="rule-BRIEF"' in page
    assert "Fails:" not in page and re.search(r'badge warn">warning</span>\s*<a href="#rule-BRIEF">', page)
    assert '<details id="transcript-section">' in page, "single turn: the transcript folds away"


def test_result_page_of_a_scenario_opens_its_transcript_and_shows_the_persona(staff_client):
    scenario = {
        "type": "scenario",
        "name": "Carry-over",
        "inputs": {
            "persona": "An employee with 8 PTO days left.",
            "initial_message": "Can I carry PTO over?",
            "max_turns": 4,
        },
        "expected": {"expected_outcome": "The employee knows the carry-over limit."},
    }
    result = EvaluationResultFactory(
        run=EvaluationRunFactory(),
        position=0,
        item_type="scenario",
        item=scenario,
        criteria_scores=[criterion("ok", False)],
    )
    page = text(staff_client.get(f"/console/results/{result.result_id}/"))
    assert "An employee with 8 PTO days left." in page and "Can I carry PTO over?" in page
    assert "The employee knows the carry-over limit." in page
    assert '<details id="transcript-section" open>' in page
    assert re.search(r'<span class="fail">Fails:</span> <a href="#criterion-0">ok</a>', page)


def test_result_page_of_a_question_and_of_an_unreached_bot(staff_client):
    run = EvaluationRunFactory(test_set_id=None, test_set_version=None, rubric_id=None, dataset_id=uuid.uuid4())
    result = EvaluationResultFactory(
        run=run,
        position=0,
        item_type="question",
        item={"question": "Who approves PTO?", "expected_answer": "Your manager."},
        output={"messages": []},
        error="Bot unreachable",
    )
    page = text(staff_client.get(f"/console/results/{result.result_id}/"))
    assert "Who approves PTO?" in page and "Your manager." in page
    assert "No answer (the bot was not reached)." in page and "Bot unreachable" in page


# Point 6 -------------------------------------------------------------------------------------------


def test_rows_count_pass_fail_skipped_and_warn_on_lesser_rules(staff_client):
    run = EvaluationRunFactory()
    warned = EvaluationResultFactory(
        run=run,
        position=0,
        criteria_scores=[criterion("ok", True)],
        rubric_scores=[
            rule("BRIEF", False, "medium"),
            rule("R1", True, "high"),
            rule("S1", False, status="skipped"),
            rule("S2", False, status="skipped"),
            rule("S3", False, status="skipped"),
        ],
    )
    failed = EvaluationResultFactory(
        run=run,
        position=1,
        criteria_scores=[criterion("ok", True), criterion("x", False)],
        rubric_scores=[rule("R1", False, "high"), rule("LOW", False, "low")],
    )
    page = text(staff_client.get(f"/console/runs/{run.run_id}/"))
    row = row_of(page, warned)
    # Its skipped rules are high-severity (the factory's default): fail-closed, the item is unassessed.
    assert "UNASSESSED" in row and re.search(
        r'1 pass</span> · <span class="muted">0 fail</span> · <span class="warn">1 warn</span> · '
        r'<span class="muted">3 skipped',
        row,
    ), "skipped rules are counted apart"
    assert 'class="fail"' not in row.split('class="failures"')[1], "a medium failure does not show as a failure"
    assert re.search(r'badge warn">warning</span> <a href="[^"]+#rule-BRIEF">BRIEF \(medium\)', row)
    row = row_of(page, failed)
    assert re.search(
        r'<div class="fail"><a href="[^"]+#rule-R1">R1 \(high\)</a></div>'
        r'<div class="fail"><a href="[^"]+#criterion-1">x</a></div>'
        r'<div class="warn"><span class="badge warn">warning</span> <a href="[^"]+#rule-LOW">',
        row,
    )
    assert re.search(
        r'0 pass</span> · <span class="fail">1 fail</span> · <span class="warn">1 warn</span></span>\s*</td>', row
    )
    assert re.search(r'1 pass</span> · <span class="fail">1 fail</span></span>\s*</td>', row), "criteria"
    # The cards count what the rows count: 2 of 4 assessed rules passed, 3 not assessable.
    # A failed medium or low rule is a failed rule (one that does not fail the item), not a "warning".
    assert re.search(
        r'id="rules-passed">1/4</span> <span class="label" id="rules-failed">rubric rules passed '
        r"\(3 failed \(1 high, 2 medium/low\), 3 not assessable\)",
        page,
    )
    assert re.search(r'id="criteria-passed">2/3</span> <span class="label">criteria passed \(1 failed\)', page)
    assert 'id="unassessed-banner"' not in page, "3 skipped of 7 is not most"


def test_failures_follow_the_human_verdict_after_an_override(staff_client):
    run = EvaluationRunFactory()
    result = EvaluationResultFactory(
        run=run, position=0, criteria_scores=[criterion("ok", True)], rubric_scores=[rule("R1", False, "high")]
    )
    assert "#rule-R1" in row_of(text(staff_client.get(f"/console/runs/{run.run_id}/")), result)
    staff_client.post(f"/console/results/{result.result_id}/", {"kind": "rule", "key": "R1", "passed": "true"})
    row = row_of(text(staff_client.get(f"/console/runs/{run.run_id}/")), result)
    assert "#rule-R1" not in row and "(1 reviewed)" in row and "badge pass" in row
    drill = text(staff_client.get(f"/console/results/{result.result_id}/"))
    assert 'id="what-failed"' not in drill and 'class="verdict" id="rule-R1"' in drill
    # And a reviewer failing a passed criterion makes it the failure.
    staff_client.post(f"/console/results/{result.result_id}/", {"kind": "criterion", "key": "ok", "passed": "false"})
    row = row_of(text(staff_client.get(f"/console/runs/{run.run_id}/")), result)
    assert re.search(r'<div class="fail"><a href="[^"]+#criterion-0">ok</a></div>', row)


def test_banner_when_most_rules_could_not_be_assessed(staff_client):
    run = EvaluationRunFactory()
    for n in range(3):
        EvaluationResultFactory(
            run=run,
            position=n,
            criteria_scores=[criterion("ok", True)],
            rubric_scores=[rule("R1", True), *(rule(f"S{k}", False, status="skipped") for k in range(4))],
        )
    page = text(staff_client.get(f"/console/runs/{run.run_id}/"))
    banner = page[page.index('id="unassessed-banner"') :]
    assert "skipped 12 of 15 rule verdicts" in banner
    assert "<code>OPENAI_API_KEY</code>" in banner and "<code>EVALSITE_JUDGE_MODEL</code>" in banner


def test_demo_run_with_the_heuristic_judge_has_most_rules_assessed_and_no_banner(staff_client, demo_run):
    # The demo rubric is checkable offline (issue 20): only its two prose rules are skipped.
    page = text(staff_client.get(f"/console/runs/{demo_run.run_id}/"))
    run = EvaluationRun.objects.get(pk=demo_run.pk)
    assert (run.rubric_rules_skipped, run.rubric_rules_total) == (10, 15)
    assert 'id="unassessed-banner"' not in page


# Point 5 -------------------------------------------------------------------------------------------


def _running_run(n_pending: int = 3) -> EvaluationRun:
    run = EvaluationRunFactory(status=EvaluationRun.Status.RUNNING)
    results_bulk_create(
        [
            EvaluationResult(
                run=run,
                position=i,
                test_case_id=uuid.UUID(int=500 + i),
                item_name=f"pending {i}",
                item_type="single_turn",
                item={},
                state="queued",
                heartbeat_at=timezone.now(),
            )
            for i in range(n_pending)
        ]
    )
    EvaluationRun.objects.filter(pk=run.pk).update(total=n_pending)
    return run


def _finish(result: EvaluationResult, passed: bool, finished_at=None):
    finished_at = finished_at or timezone.now()
    EvaluationResult.objects.filter(pk=result.pk).update(
        state="done",
        passed=passed,
        outcome="passed" if passed else "failed",
        criteria_passed=passed,
        finished_at=finished_at,
        duration_ms=4,
    )
    result.finished_at, result.criteria_scores = finished_at, [criterion("ok", passed)]
    store_verdicts([result])
    EvaluationRun.objects.filter(pk=result.run_id).update(completed=result.run.results.done().count())


def test_live_endpoint_sends_cards_and_the_rows_finished_since_the_cursor(staff_client):
    run = _running_run()
    page = text(staff_client.get(f"/console/runs/{run.run_id}/"))
    assert 'data-finished="0"' in page and 'data-cursor=""' in page and "No results yet." in page
    assert f'data-progress-url="/console/runs/{run.run_id}/live/"' in page
    first, second, third = run.results.order_by("position")
    live = staff_client.get(f"/console/runs/{run.run_id}/live/?after=").json()
    assert (live["status"], live["completed"], live["rows"], live["unclaimed"]) == ("running", 0, [], False)
    assert 'id="judge-pass-rate">—' in live["cards"]

    _finish(second, False, timezone.now() - timedelta(minutes=5))  # finished first
    live = staff_client.get(f"/console/runs/{run.run_id}/live/", {"after": ""}).json()
    assert len(live["rows"]) == 1 and f'data-result-id="{second.result_id}"' in live["rows"][0]
    assert 'data-sort-key="0-00000001"' in live["rows"][0] and "FAIL" in live["rows"][0]
    assert 'id="judge-pass-rate">0%' in live["cards"] and 'id="criteria-passed">0/1' in live["cards"]
    cursor = live["cursor"]
    assert cursor == EvaluationResult.objects.get(pk=second.pk).finished_at.isoformat()

    _finish(first, True)
    live = staff_client.get(f"/console/runs/{run.run_id}/live/", {"after": cursor}).json()
    # A short overlap before the cursor is sent again (a result written just before it may commit
    # after it was read); the page keeps one row per result.
    assert [str(second.result_id) in html for html in live["rows"]] == [True, False]
    assert 'id="judge-pass-rate">50%' in live["cards"] and live["cursor"] > cursor
    later = (timezone.now() - timedelta(minutes=1)).isoformat()
    live = staff_client.get(f"/console/runs/{run.run_id}/live/", {"after": later}).json()
    assert [str(first.result_id) in html for html in live["rows"]] == [True], "only what finished since the cursor"
    # The page's filters apply to the rows it is sent.
    failed_only = staff_client.get(f"/console/runs/{run.run_id}/live/", {"after": "", "passed": "false"}).json()
    assert len(failed_only["rows"]) == 1 and str(second.result_id) in failed_only["rows"][0]
    for odd in ("2026-99-99T00:00", "2020-01-01T00:00", "nonsense"):  # impossible, naive, unparsable
        assert staff_client.get(f"/console/runs/{run.run_id}/live/", {"after": odd}).status_code == 200, odd

    _finish(third, True)
    run.refresh_from_db()
    EvaluationRun.objects.filter(pk=run.pk).update(status="completed")
    assert staff_client.get(f"/console/runs/{run.run_id}/live/").json()["finished"] is True


def test_live_endpoint_query_count_does_not_grow_with_results(staff_client):
    def build(n):
        run = _running_run(n)
        now = timezone.now()
        finished = list(EvaluationResult.objects.filter(run=run, position__lt=n // 2))
        EvaluationResult.objects.filter(run=run, position__lt=n // 2).update(
            state="done", passed=True, criteria_passed=True, rubric_passed=True, finished_at=now
        )
        for result in finished:
            result.finished_at, result.criteria_scores = now, [criterion("c", True)]
            result.rubric_scores = [rule("R1", False, "low")]
        store_verdicts(finished)
        return run

    counts = []
    for run in (build(10), build(1000)):
        with CaptureQueriesContext(connection) as captured:
            assert staff_client.get(f"/console/runs/{run.run_id}/live/?after=").status_code == 200
        counts.append(len(captured))
    # The figures are summed by the database (one query on SQLite, a row and a verdict query on
    # PostgreSQL) and the fresh rows are a query of their own; one reads the review queues each row's
    # "add to queue" offers, once for all rows; one counts attempts per item for the repeated-trial
    # figures of a run still going (a GROUP BY, whatever the size).
    assert counts[0] == counts[1] <= 15, counts  # verdicts read as Score rows, one query a page


def test_pending_run_nobody_picks_up_says_how_to_start_a_worker(staff_client):
    run = EvaluationRunFactory(status=EvaluationRun.Status.PENDING)
    page = text(staff_client.get(f"/console/runs/{run.run_id}/"))
    assert '<div class="banner" id="no-worker" role="alert" hidden>' in page, "a fresh pending run: no alarm yet"
    assert staff_client.get(f"/console/runs/{run.run_id}/live/").json()["unclaimed"] is False
    EvaluationRun.objects.filter(pk=run.pk).update(created_at=timezone.now() - timedelta(seconds=61))
    page = text(staff_client.get(f"/console/runs/{run.run_id}/"))
    assert '<div class="banner" id="no-worker" role="alert">' in page
    assert "No worker is consuming the queue." in page
    assert ".venv/bin/celery -A evalsite worker --loglevel=INFO" in page
    assert staff_client.get(f"/console/runs/{run.run_id}/live/").json()["unclaimed"] is True
    # A running run is being consumed, however old.
    EvaluationRun.objects.filter(pk=run.pk).update(status="running")
    assert staff_client.get(f"/console/runs/{run.run_id}/live/").json()["unclaimed"] is False


def test_launch_says_queued_not_started(staff_client, demo, monkeypatch, django_capture_on_commit_callbacks):
    from apps.bots.demo import DEMO_AGENT_ID
    from apps.runs import services
    from apps.testsets.demo import DEMO_TEST_SET_ID

    monkeypatch.setattr(services.tasks.start_run, "delay", lambda pk: None)  # no worker
    with django_capture_on_commit_callbacks(execute=True):
        response = staff_client.post(
            "/console/runs/new/",
            {"agent_id": DEMO_AGENT_ID, "test_set_id": DEMO_TEST_SET_ID, "concurrency": 2},
            follow=True,
        )
    page = text(response)
    assert "Run queued with 5 items." in page and "Run started" not in page
    assert re.search(r'id="run-status">pending<', page)
