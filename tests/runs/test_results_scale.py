"""Issue 16 item 7, runs of 100,000 results: the results API pages in the database (limit, offset,
X-Has-More) while its default answer stays the contract's whole list; a run's figures are summed by
the database into a digest that is kept (apps/runs/aggregates.py) and agrees with the Python code
that reads every verdict; a comparison pairs items in the database and lists the first few of each
kind with how many there are; the bootstrap interval does not grow with the number of pairs."""

import json
import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.runs import aggregates, selectors, stats
from apps.runs.api import views
from apps.runs.models import EvaluationResult, EvaluationRun, RunComparison
from tests.runs.factories import (
    EvaluationResultFactory,
    EvaluationRunFactory,
    criterion,
    result_create,
    results_bulk_create,
    rule,
    store_verdicts,
)

pytestmark = pytest.mark.django_db


def results_url(run, query: str = "") -> str:
    return f"/api/v1/runs/{run.run_id}/results" + (f"?{query}" if query else "")


def _run_with(n: int, **run_fields) -> EvaluationRun:
    """A finished run of n results; every third fails a criterion, every fifth fails a high rule."""
    run = EvaluationRunFactory(**run_fields)
    for i in range(n):
        EvaluationResultFactory(
            run=run,
            position=i,
            criteria_scores=[criterion("c", i % 3 != 0)],
            rubric_scores=[rule("R1", i % 5 != 0), rule("LOW", i % 2 == 0, "low")],
        )
    return run


# --- the results API ---------------------------------------------------------------------------------


def test_default_answer_is_the_whole_list_without_paging_headers(api):
    run = _run_with(7)
    response = api.get(results_url(run))
    assert [r["item_name"] for r in response.json()] == [f"item {i}" for i in range(7)]
    assert "X-Has-More" not in response and "Link" not in response


def test_limit_and_offset_page_the_same_list(api):
    run = _run_with(7)
    whole = api.get(results_url(run)).json()
    first = api.get(results_url(run, "limit=3"))
    assert first.json() == whole[:3] and first["X-Has-More"] == "true"
    # The Link header names the next page; following it walks the list to its end.
    pages, response = [first.json()], first
    while response["X-Has-More"] == "true":
        next_url = response["Link"].split(">", 1)[0].lstrip("<")
        assert 'rel="next"' in response["Link"] and "limit=3" in next_url
        response = api.get(next_url)
        pages.append(response.json())
    assert [len(p) for p in pages] == [3, 3, 1] and sum(pages, []) == whole
    assert "Link" not in response
    tail = api.get(results_url(run, "offset=5"))  # the default limit covers the rest
    assert tail.json() == whole[5:] and tail["X-Has-More"] == "false"
    assert api.get(results_url(run, "offset=7")).json() == []
    # Filters apply before paging.
    failed = api.get(results_url(run, "passed=false")).json()
    paged = api.get(results_url(run, "passed=false&limit=2&offset=1"))
    assert paged.json() == failed[1:3] and paged["X-Has-More"] == ("true" if len(failed) > 3 else "false")


@pytest.mark.parametrize(
    "query, field",
    [
        ("limit=0", "limit"),
        ("limit=1001", "limit"),
        ("limit=abc", "limit"),
        ("limit=2.5", "limit"),
        ("offset=-1", "offset"),
        ("offset=x", "offset"),
        ("offset=100000001", "offset"),
    ],
)
def test_page_bounds_are_checked(api, query, field):
    run = _run_with(1)
    response = api.get(results_url(run, query))
    assert response.status_code == 422
    assert [error["loc"] for error in response.json()["detail"]] == [[field]]


def test_a_large_run_streams_the_same_bytes(api, monkeypatch):
    run = _run_with(5)
    inline = api.get(results_url(run))
    assert not inline.streaming
    monkeypatch.setattr(views, "RESULTS_INLINE_MAX", 2)
    monkeypatch.setattr(views, "STREAM_CHUNK_BYTES", 100)  # several chunks
    streamed = api.get(results_url(run))
    assert streamed.streaming and streamed["Content-Type"] == "application/json"
    chunks = list(streamed.streaming_content)
    assert len(chunks) > 2 and b"".join(chunks) == inline.content
    # A number past 64 bits (stored before input validation refused them) still renders exactly.
    EvaluationResult.objects.filter(run=run, position=2).update(output={"messages": [], "tokens": 2**70})
    assert json.loads(b"".join(api.get(results_url(run)).streaming_content))[2]["output"]["tokens"] == 2**70


def test_a_page_reads_the_same_queries_at_any_size_and_depth(api):
    def queries(url):
        with CaptureQueriesContext(connection) as captured:
            assert api.get(url).status_code == 200
        return len(captured)

    small, big = _bulk_run(10), _bulk_run(600)
    queries(results_url(small, "limit=1"))  # the key is looked up once, then kept (EVALSITE_API_KEY_CACHE_SECONDS)
    assert queries(results_url(small, "limit=5&offset=2")) == queries(results_url(big, "limit=50&offset=540"))


def _bulk_run(n: int, **fields) -> EvaluationRun:
    run = EvaluationRunFactory(**fields)
    results_bulk_create(
        [
            EvaluationResult(
                run=run,
                position=i,
                test_case_id=uuid.UUID(int=i + 1),
                item_name=f"item {i}",
                item_type="single_turn",
                state="done",
                item={"tags": ["t"], "priority": "low"},
                criteria_scores=[criterion("c", i % 3 != 0)],
                rubric_scores=[rule("R1", i % 2 == 0)],
                passed=i % 3 != 0 and i % 2 == 0,
                outcome="passed" if i % 3 != 0 and i % 2 == 0 else "failed",
                duration_ms=3,
                finished_at=timezone.now(),
            )
            for i in range(n)
        ]
    )
    EvaluationRun.objects.filter(pk=run.pk).update(total=n, completed=n)
    run.refresh_from_db()
    return run


# --- digests ---------------------------------------------------------------------------------------

ODD_VERDICTS = [
    [
        criterion("plain", True),
        criterion("failed", False),
        criterion("skipped", False, status="skipped"),
        {"criterion": "no status", "passed": True, "score": 0.5},  # stored before statuses existed: ok
        {
            **criterion("errored", False, status="error"),
            "fingerprint": {"judge": "llm", "model": "m", "criterion": "x"},
        },
    ],
    None,  # a V1 question has no criteria
    [],
]
ODD_RULES = [
    [
        rule("R1", True),
        rule("R1", False, "high"),
        rule("W", False, "medium"),
        rule("S", False, status="skipped"),
        rule("E", False, "low", status="error"),
        {"rule_id": "NOSEV", "passed": False, "score": 0, "status": "ok"},
        {
            **rule("F", True, scope=None),
            "fingerprint": {"judge": "llm", "model": "m", "rubric_version": 3, "judge_version": "1"},
        },
    ],
    None,
]
ODD_ITEMS = [{"tags": ["a", "b"], "priority": "high"}, {"tags": "not a list"}, {}, {"tags": ["b", 7]}]


def _odd_run() -> EvaluationRun:
    run = EvaluationRunFactory()
    now = timezone.now()
    results_bulk_create(
        [
            EvaluationResult(
                run=run,
                position=i,
                test_case_id=uuid.UUID(int=i + 1),
                item_type=("single_turn", "scenario")[i % 2],
                state="done",
                item=ODD_ITEMS[i % len(ODD_ITEMS)],
                criteria_scores=ODD_VERDICTS[i % 3],
                rubric_scores=ODD_RULES[i % 2],
                passed=i % 4 == 0,
                outcome=("passed", "failed", "unassessed", None)[i % 4],
                finished_at=None if i == 5 else now - timedelta(seconds=i),
            )
            for i in range(12)
        ]
    )
    # Not finished: not counted. (It has no verdict rows: the engine writes them with the result's
    # state done, in one transaction.)
    result_create(run=run, position=99, test_case_id=uuid.uuid4(), item_type="single_turn", state="pending")
    return run


def _reference_digest(run: EvaluationRun) -> aggregates.RunDigest:
    """The digest summed row by row through the Verdict logic the engine and pages use: what the
    ORM's GROUP BY queries must agree with."""
    digest = aggregates.RunDigest()
    for result in run.results.done().with_verdicts():
        item = result.item if isinstance(result.item, dict) else {}
        digest.rows[(result.item_type, item.get("priority") or "", result.passed, result.outcome)] += 1
        if isinstance(item.get("tags"), list):
            digest.tags.update(tag for tag in item["tags"] if isinstance(tag, str))
        digest.saw_finish(result.finished_at)
        for v in (result.verdicts("criterion") or []) + (result.verdicts("rule") or []):
            key = aggregates._verdict_key(v.kind, v.key, v.rule_name, v.severity, v.component_scope, v.status, v.passed)
            digest.add_verdicts(key, 1, float(v.score) if isinstance(v.score, int | float) else 0.0)
            digest.add_judge(v.fingerprint)
    return digest


def test_digest_in_the_database_agrees_with_the_python_reference():
    run = _odd_run()
    computed = aggregates.compute_digests([run.pk])[(run.pk, False)]
    reference = _reference_digest(run)
    finished = EvaluationResult.objects.done().filter(run=run).values_list("finished_at", flat=True)
    assert computed.rows == reference.rows and computed.tags == reference.tags == {"a", "b"}
    assert computed.verdicts.keys() == reference.verdicts.keys()
    for key, (n, score_sum) in reference.verdicts.items():
        assert computed.verdicts[key][0] == n and computed.verdicts[key][1] == pytest.approx(score_sum), key
    assert (
        computed.judge_fingerprints()
        == reference.judge_fingerprints()
        == [{"judge": "llm", "model": "m", "rubric_version": 3, "judge_version": "1"}, {"judge": "llm", "model": "m"}]
    )
    assert computed.newest == reference.newest == max(f for f in finished if f)
    # Stored on the run and read back, the digest is the same.
    assert aggregates.RunDigest.from_json(computed.to_json()) == computed
    # What the pages read from it, against the row-by-row arithmetic they used before.
    row_figures = selectors.result_rows(
        EvaluationResult.objects.done().filter(run=run).values(*selectors.TABLE_FIELDS), {}
    )
    for kind, counts in (("criterion", "criteria_counts"), ("rule", "rules_counts")):
        assert computed.verdict_counts(kind) == {
            k: sum(r[counts][k] for r in row_figures) for k in ("passed", "failed", "warned", "skipped")
        }
    assert computed.coverage() == {
        k: sum(r["coverage"][k] for r in row_figures) for k in ("scored", "skipped", "errored")
    }
    assert computed.completed == 12 and computed.unassessed == 3 and computed.judge_passed == 3


def test_a_finished_runs_digest_is_kept_until_its_count_moves():
    run = _run_with(3)
    run.refresh_from_db()
    with CaptureQueriesContext(connection) as first:
        digest = aggregates.run_digest(run)
    with CaptureQueriesContext(connection) as again:
        assert aggregates.run_digest(run) == digest
    assert len(first) >= 1 and len(again) == 0, "kept: no query the second time"
    EvaluationResultFactory(run=run, position=3, criteria_scores=[criterion("c", False)])
    run.refresh_from_db()  # the factory moved completed, as the engine does
    assert aggregates.run_digest(run).completed == 4


def test_a_running_runs_digest_sums_what_has_finished_on_every_read():
    run = EvaluationRunFactory(status=EvaluationRun.Status.RUNNING)
    results_bulk_create(
        [
            EvaluationResult(
                run=run, position=i, test_case_id=uuid.UUID(int=i + 1), item_type="single_turn", state="queued"
            )
            for i in range(4)
        ]
    )
    first, second, third, fourth = run.results.order_by("position")

    def finish(result, passed, ago):
        finished_at = timezone.now() - ago
        EvaluationResult.objects.filter(pk=result.pk).update(
            state="done",
            passed=passed,
            outcome="passed" if passed else "failed",
            criteria_passed=passed,
            finished_at=finished_at,
        )
        result.finished_at, result.criteria_scores = finished_at, [criterion("c", passed)]
        store_verdicts([result])
        run.completed = run.results.done().count()  # the engine counts with the write

    finish(first, True, timedelta(minutes=1))
    assert aggregates.run_digest(run).judge_passed == 1
    finish(second, False, timedelta(seconds=1))
    digest = aggregates.run_digest(run)
    assert (digest.completed, digest.judge_passed) == (2, 1)
    # A result stamped long before the others, committed only now, is counted as well.
    finish(third, True, timedelta(hours=1))
    digest = aggregates.run_digest(run)
    assert (digest.completed, digest.judge_passed) == (3, 2)
    assert digest.newest == EvaluationResult.objects.get(pk=second.pk).finished_at
    finish(fourth, True, timedelta(0))
    assert aggregates.run_digest(run).verdict_counts("criterion") == {
        "passed": 3,
        "failed": 1,
        "warned": 0,
        "skipped": 0,
    }
    run.refresh_from_db()
    assert run.digest is None, "nothing is stored while the run goes"


def test_a_finished_runs_digest_is_stored_on_the_run_and_read_in_one_query():
    run = _run_with(3)
    aggregates.run_digest(run)
    fresh = EvaluationRun.objects.get(pk=run.pk)  # what a new server process reads
    assert fresh.digest is not None
    with CaptureQueriesContext(connection) as queries:
        assert aggregates.run_digest(fresh).completed == 3
    assert len(queries) == 0, "the stored digest: no scan of results or scores"


# --- comparison ------------------------------------------------------------------------------------


def _pair(outcomes: list[tuple[bool | None, bool | None]]):
    """Base and head runs; (base passed, head passed) per position, None where the run lacks the item."""
    base, head = EvaluationRunFactory(), EvaluationRunFactory()
    for position, verdicts in enumerate(outcomes):
        for run, passed in zip((base, head), verdicts):
            if passed is not None:
                EvaluationResultFactory(
                    run=run,
                    position=position,
                    criteria_scores=[criterion("c", passed, score=None if passed else 0.25 * (position % 3))],
                )
    base.refresh_from_db()
    head.refresh_from_db()
    return base, head


def test_comparison_lists_the_first_of_each_kind_and_counts_them_all():
    kinds = (
        [(True, False)] * 7
        + [(False, True)] * 3
        + [(False, False)] * 2
        + [(True, True)] * 4
        + [(None, True), (True, None)]
    )
    base, head = _pair(kinds)
    comparison = selectors.run_comparison(base=base, head=head, shown=2)
    positions = {
        kind: [h["position"] for _, h in comparison[kind]] for kind in ("regressions", "fixes", "still_failing")
    }
    assert positions == {"regressions": [0, 1], "fixes": [7, 8], "still_failing": [10, 11]}
    assert (comparison["regressions_total"], comparison["fixes_total"], comparison["still_failing_total"]) == (7, 3, 2)
    assert (comparison["unchanged_pass"], comparison["new_items"], comparison["dropped"]) == (4, 1, 1)
    # The statistics use every pair, not the ones listed.
    assert comparison["statistics"]["paired_items"] == comparison["statistics"]["assessed_items"] == 16
    assert comparison["statistics"]["changes"] == {
        "both_passed": 4,
        "both_failed": 2,
        "pass_to_fail": 7,
        "fail_to_pass": 3,
    }
    everything = selectors.run_comparison(base=base, head=head, shown=None)
    assert len(everything["regressions"]) == 7 and everything["statistics"] == comparison["statistics"]
    # Criteria whose verdict changed (those of the 10 items that regressed or were fixed), worst first.
    assert comparison["criterion_deltas_total"] == 10 and len(comparison["criterion_deltas"]) == 2
    deltas = [d["delta"] for d in everything["criterion_deltas"]]
    assert deltas == sorted(deltas) and deltas[0] == -1.0


def test_a_comparison_of_finished_runs_is_kept():
    base, head = _pair([(True, False), (False, True), (True, True)])
    with CaptureQueriesContext(connection) as first:
        before = selectors.run_comparison(base=base, head=head)
    with CaptureQueriesContext(connection) as again:
        after = selectors.run_comparison(base=base, head=head)
    assert len(again) < len(first)
    # Kept in the database, so a fresh server process reads it too: the second read pairs nothing.
    stored = RunComparison.objects.get(base=base, head=head)
    assert stored.state == f"{base.status}:{base.completed}:{head.status}:{head.completed}"
    assert not any("GROUP BY" in q["sql"] for q in again.captured_queries)
    assert after["statistics"] == before["statistics"] and after["criterion_deltas"] == before["criterion_deltas"]
    assert after["buckets"] == before["buckets"] and after["regressions_total"] == before["regressions_total"] == 1
    assert [h["result_id"] for _, h in after["regressions"]] == [h["result_id"] for _, h in before["regressions"]]
    assert [(b["result_id"], h["result_id"]) for b, h in after["fixes"]] == [
        (b["result_id"], h["result_id"]) for b, h in before["fixes"]
    ]


def test_a_kept_comparison_of_runs_that_changed_since_is_computed_again():
    base, head = _pair([(True, False), (False, True)])
    selectors.run_comparison(base=base, head=head)
    # The head run gains a finished result (a repaired run, say): the kept core no longer describes it.
    EvaluationResultFactory(run=head, position=2, criteria_scores=[criterion("c", False, score=0.0)])
    head.refresh_from_db()
    comparison = selectors.run_comparison(base=base, head=head)
    assert comparison["new_items"] == 1 and comparison["regressions_total"] == 1
    assert RunComparison.objects.filter(base=base, head=head).count() == 1
    assert RunComparison.objects.get(base=base, head=head).state.endswith(f":{head.completed}")


def test_a_running_runs_comparison_is_not_kept():
    base, head = _pair([(True, False)])
    EvaluationRun.objects.filter(pk=head.pk).update(status=EvaluationRun.Status.RUNNING)
    head.refresh_from_db()
    assert selectors.run_comparison(base=base, head=head)["regressions_total"] == 1
    assert not RunComparison.objects.exists()


def test_a_pairing_reads_back_from_json_equal():
    from apps.runs import comparison as pairing

    base, head = _pair([(True, False), (False, True), (True, True), (None, True), (True, None)])
    items = pairing.pair_items(base_pk=base.pk, head_pk=head.pk, keep=10)
    assert None in {v for pair in items.groups for v in pair}  # new and dropped items: a verdict missing
    again = pairing.Pairing.from_json(json.loads(json.dumps(items.to_json())))
    assert again == items


# --- the interval at scale -------------------------------------------------------------------------


def test_statistics_over_a_hundred_thousand_pairs():
    pairs = [(True, True)] * 80_000 + [(True, False)] * 6_000 + [(False, True)] * 2_000 + [(False, False)] * 12_000
    result = stats.paired_statistics(pairs)
    low, high = result["pass_rate_diff_ci"]
    assert low < -0.04 < high < 0, "brackets the difference of -4 points"
    assert stats.paired_statistics(list(reversed(pairs)))["pass_rate_diff_ci"] == [low, high], "order does not matter"
    assert json.dumps(result)  # plain numbers


def test_criterion_changes_count_the_last_verdict_of_a_repeated_criterion():
    base, head = EvaluationRunFactory(), EvaluationRunFactory()
    # Item 0: its base verdicts on "x" end with a fail, as its head one: unchanged. Item 1: they end
    # with a pass, and the head one fails: changed, once.
    for position, base_verdicts in enumerate(
        (
            [criterion("x", True), criterion("x", False)],
            [criterion("x", False), criterion("x", True), criterion("x", False, status="skipped")],
        )
    ):
        EvaluationResultFactory(run=base, position=position, criteria_scores=base_verdicts)
        EvaluationResultFactory(run=head, position=position, criteria_scores=[criterion("x", False)])
    comparison = selectors.run_comparison(base=base, head=head)
    assert comparison["criterion_deltas_total"] == 1
    assert [(d["item_name"], d["base"]["passed"], d["head"]["passed"]) for d in comparison["criterion_deltas"]] == [
        ("item 1", True, False)
    ]


def test_criterion_changes_fold_an_items_attempts_so_each_criterion_is_listed_once():
    # With repeats each item has three results per run. Pairing them result by result listed the
    # criterion 3 x 3 = 9 times on PostgreSQL; folded per run (passed only if every attempt passed,
    # the mean score), item 0's "x" went from 3/3 to 2/3 and is one change, item 1's did not change.
    base, head = EvaluationRunFactory(), EvaluationRunFactory()
    for attempt in (1, 2, 3):
        for position in (0, 1):
            EvaluationResultFactory(
                run=base, position=position, attempt=attempt, criteria_scores=[criterion("x", True)]
            )
            EvaluationResultFactory(
                run=head,
                position=position,
                attempt=attempt,
                criteria_scores=[criterion("x", not (position == 0 and attempt == 2))],
            )
    comparison = selectors.run_comparison(base=base, head=head)
    assert comparison["criterion_deltas_total"] == 1
    [delta] = comparison["criterion_deltas"]
    assert (delta["item_name"], delta["base"]["passed"], delta["head"]["passed"]) == ("item 0", True, False)
    assert (delta["base"]["score"], delta["head"]["score"]) == (1.0, 0.6667)


def test_a_flaky_item_that_regressed_shows_the_attempt_that_failed():
    # Attempts 1 and 3 of the head pass, attempt 2 fails: the item failed, and the answer shown beside
    # "regressed" must be the failing attempt's, not the first (passing) one's.
    base, head = EvaluationRunFactory(repeats=3), EvaluationRunFactory(repeats=3)
    for attempt in (1, 2, 3):
        EvaluationResultFactory(run=base, position=0, attempt=attempt, criteria_scores=[criterion("x", True)])
        EvaluationResultFactory(run=head, position=0, attempt=attempt, criteria_scores=[criterion("x", attempt != 2)])
    comparison = selectors.run_comparison(base=base, head=head)
    [(shown_base, shown_head)] = comparison["regressions"]
    assert EvaluationResult.objects.get(result_id=shown_head["result_id"]).attempt == 2
    assert EvaluationResult.objects.get(result_id=shown_base["result_id"]).attempt == 1
    # Each side says how its item's attempts went, and that the head's disagree.
    assert (shown_head["attempts_passed"], shown_head["attempts_done"], shown_head["flaky"]) == (2, 3, True)
    assert (shown_base["attempts_passed"], shown_base["attempts_done"], shown_base["flaky"]) == (3, 3, False)


def test_criterion_changes_are_one_query_whose_total_counts_past_the_kept_rows():
    # The groups are computed once: the total is a window over them (not a second COUNT query), so
    # it still counts the changes the LIMIT leaves out; keep=0 asks only for the count.
    from apps.runs import comparison as pairing

    base, head = EvaluationRunFactory(), EvaluationRunFactory()
    for position in range(3):
        EvaluationResultFactory(run=base, position=position, criteria_scores=[criterion("x", True)])
        EvaluationResultFactory(run=head, position=position, criteria_scores=[criterion("x", position == 2)])
    with CaptureQueriesContext(connection) as queries:
        rows, total = pairing.criterion_changes(base_pk=base.pk, head_pk=head.pk, keep=1)
    assert len(queries.captured_queries) == 1
    assert total == 2 and [row["item_name"] for row in rows] == ["item 0"]
    assert pairing.criterion_changes(base_pk=base.pk, head_pk=head.pk, keep=0) == ([], 2)
    assert len(pairing.criterion_changes(base_pk=base.pk, head_pk=head.pk, keep=None)[0]) == 2
