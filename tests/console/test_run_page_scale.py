"""Issue 16 item 7 in the console: the run page filters, orders and pages its table in the database,
and each filter keeps the meaning it had when rows were filtered in Python; the live view sends at
most a page of rows, the first in the table's order."""

import re
import uuid

import pytest
from django.utils import timezone

from apps.runs import selectors
from apps.runs.models import EvaluationResult, EvaluationRun
from tests.runs.factories import (
    EvaluationResultFactory,
    EvaluationRunFactory,
    criterion,
    results_bulk_create,
    rule,
)

pytestmark = pytest.mark.django_db

ITEMS = [
    {"tags": ["hr", "pto"], "priority": "high"},
    {"tags": ["it"], "priority": "low"},
    {"tags": "hr"},
    {"priority": "medium"},
    {"tags": ["hr", 3]},
]
RULES = [
    [rule("R1", False, "high")],
    [rule("R2", False, "low"), rule("R3", True, "medium")],
    [rule("S", False, status="skipped")],
    [rule("E", False, "medium", status="error")],
    None,
    [{"rule_id": "OLD", "severity": "high", "passed": False, "score": 0}],
]  # stored before statuses: ok


def _varied_run(n: int = 30) -> EvaluationRun:
    run = EvaluationRunFactory()
    for i in range(n):
        EvaluationResultFactory(
            run=run,
            position=i,
            item_name=f"{('Refund', 'pto', 'Wifi')[i % 3]} question {i}",
            item_type=("single_turn", "scenario")[i % 2],
            item=ITEMS[i % len(ITEMS)],
            criteria_scores=[criterion("c", i % 4 != 1)],
            rubric_scores=RULES[i % len(RULES)],
        )
    return run


def _names(client, run, query: str) -> list[str]:
    page = client.get(f"/console/runs/{run.run_id}/?{query}").content.decode()
    return re.findall(r'<td[^>]*><a href="/console/results/[^"#]+">([^<]+)</a></td>', page)


def test_each_filter_means_what_it_meant_over_rows_in_python(staff_client):
    run = _varied_run()
    everything = selectors.result_rows(EvaluationResult.objects.filter(run=run).values(*selectors.TABLE_FIELDS), {})
    ordered = sorted(everything, key=lambda r: (bool(r["passed"]), r["position"]))
    cases = {
        "passed=true": lambda r: r["passed"] is True,
        "passed=false": lambda r: r["outcome"] == "failed",  # never the unassessed
        "passed=unassessed": lambda r: r["outcome"] == "unassessed",
        "item_type=scenario": lambda r: r["item_type"] == "scenario",
        "tag=hr": lambda r: isinstance((r["item"] or {}).get("tags"), list) and "hr" in r["item"]["tags"],
        "priority=high": lambda r: r["priority"] == "high",
        "failed_severity=high": lambda r: "high" in r["failed_severities"],
        "failed_severity=medium": lambda r: "medium" in r["failed_severities"],
        "failed_severity=low": lambda r: "low" in r["failed_severities"],
        "q=PTO": lambda r: "pto" in r["item_name"].lower(),
        "q=question 1": lambda r: "question 1" in r["item_name"],
        "passed=false&tag=hr&item_type=single_turn": lambda r: (
            r["outcome"] == "failed"
            and r["item_type"] == "single_turn"
            and isinstance((r["item"] or {}).get("tags"), list)
            and "hr" in r["item"]["tags"]
        ),
    }
    assert _names(staff_client, run, "") == [r["item_name"] for r in ordered], "failed first, then test set order"
    for query, keep in cases.items():
        expected = [r["item_name"] for r in ordered if keep(r)]
        assert expected, f"{query} keeps something"
        assert _names(staff_client, run, query) == expected, query


def test_search_and_unassessed_are_offered_and_kept_across_pages(staff_client):
    run = EvaluationRunFactory()
    results_bulk_create(
        [
            EvaluationResult(
                run=run,
                position=i,
                test_case_id=uuid.UUID(int=i + 1),
                item_name=f"item {i:03d}",
                item_type="single_turn",
                state="done",
                item={},
                criteria_scores=[criterion("c", i % 2 == 0)],
                passed=i % 2 == 0,
                outcome="passed" if i % 2 == 0 else ("unassessed" if i % 3 else "failed"),
            )
            for i in range(130)
        ]
    )
    EvaluationRun.objects.filter(pk=run.pk).update(total=130, completed=130)
    page = staff_client.get(f"/console/runs/{run.run_id}/?passed=unassessed&page=2").content.decode()
    assert '<option value="unassessed" selected>' in page and 'name="q"' in page
    unassessed = [i for i in range(130) if i % 2 and i % 3]
    assert "Page 2 of 1" not in page and re.findall(r">item (\d+)<", page) == [f"{i:03d}" for i in unassessed]
    # Three pages of 50: the last holds the rest, in order, and the links carry the filters.
    third = staff_client.get(f"/console/runs/{run.run_id}/?q=item&page=3").content.decode()
    odd_then_even = [i for i in range(130) if i % 2] + [i for i in range(130) if i % 2 == 0]
    assert re.findall(r">item (\d+)<", third) == [f"{i:03d}" for i in odd_then_even[100:]]
    assert "Page 3 of 3" in third and 'href="?q=item&amp;page=2"' in third
    assert '(<span id="shown-count">130</span> shown' in third
    # A page past the end is the last one (as before), a page that is not a number the first.
    assert re.findall(r">item (\d+)<", staff_client.get(f"/console/runs/{run.run_id}/?page=99").content.decode()) == [
        f"{i:03d}" for i in odd_then_even[100:]
    ]
    assert "Page 1 of 3" in staff_client.get(f"/console/runs/{run.run_id}/?page=x").content.decode()


def test_live_view_sends_at_most_a_page_the_first_in_table_order(staff_client):
    run = EvaluationRunFactory(status=EvaluationRun.Status.RUNNING)
    now = timezone.now()
    results_bulk_create(
        [
            EvaluationResult(
                run=run,
                position=i,
                test_case_id=uuid.UUID(int=i + 1),
                item_name=f"item {i:03d}",
                item_type="single_turn",
                state="done",
                item={},
                criteria_scores=[criterion("c", i % 5 != 0)],
                passed=i % 5 != 0,
                outcome="passed" if i % 5 else "failed",
                finished_at=now,
            )
            for i in range(120)
        ]
    )
    EvaluationRun.objects.filter(pk=run.pk).update(total=120, completed=120)
    live = staff_client.get(f"/console/runs/{run.run_id}/live/", {"after": ""}).json()
    names = [re.search(r">item (\d+)<", row).group(1) for row in live["rows"]]
    failed, passed = [i for i in range(120) if i % 5 == 0], [i for i in range(120) if i % 5]
    assert names == [f"{i:03d}" for i in (failed + passed)[: selectors.RESULTS_PER_PAGE]]
    assert live["cursor"] == now.isoformat()
    assert 'id="judge-pass-rate">80%' in live["cards"], "the cards count every result, not the rows sent"
