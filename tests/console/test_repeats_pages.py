"""Issue 20 point 4 and two run-page items of point 6 in the console: a run with repeats is one row
per item with its attempts as chips (filtered, sorted and paged by item, and live), queue items say
which run and which attempt they are, and the results table sorts by a whitelisted column."""

import re

import pytest
from django.utils import timezone

from apps.queues.models import QueueKind
from apps.runs.models import EvaluationResult
from tests.queues.factories import QueueItemFactory, ReviewQueueFactory
from tests.runs.factories import EvaluationResultFactory, EvaluationRunFactory, criterion, rule

pytestmark = pytest.mark.django_db

# Per item, the verdict of each of its three attempts: True passed, False failed, None unassessed.
ATTEMPTS = {
    "Sometimes answers": (True, False, True),
    "Never answers": (False, False, False),
    "Always answers": (True, True, True),
    "Cannot be judged": (True, None, True),
}


def repeated_run(**extra):
    run = EvaluationRunFactory(repeats=3, label="three each", **extra)
    for position, (name, verdicts) in enumerate(ATTEMPTS.items()):
        for attempt, verdict in enumerate(verdicts, start=1):
            # A skipped high-severity rule leaves the attempt unassessed (fail-closed).
            rules = (
                [rule("SAFE", True, "high")] if verdict is not None else [rule("SAFE", False, "high", status="skipped")]
            )
            EvaluationResultFactory(
                run=run,
                position=position,
                attempt=attempt,
                item_name=name,
                duration_ms=100 * (position + 1) + attempt,
                criteria_scores=[criterion("Answers", verdict is not False)],
                rubric_scores=rules,
                finished_at=timezone.now(),
            )
    return run


def rows_of(page: str) -> list[str]:
    return re.findall(r'<tr class="(?:passed|failed)"[^>]*>.*?</tr>', page, re.S)


def names(page: str) -> list[str]:
    return re.findall(r'<td class="item-name"><a href="/console/results/[^"]+">([^<]+)</a>', page)


def test_a_repeated_run_is_one_row_per_item_with_its_verdict_and_chips(staff_client):
    run = repeated_run()
    page = staff_client.get(f"/console/runs/{run.run_id}/").content.decode()
    rows = {name: row for name, row in zip(names(page), rows_of(page))}
    assert len(rows) == 4
    # Not-passed items first (failed and unassessed alike, as before), then test set order.
    assert names(page) == ["Sometimes answers", "Never answers", "Cannot be judged", "Always answers"]
    chips = {name: re.findall(r'class="chip (\w+)"', row) for name, row in rows.items()}
    assert chips["Sometimes answers"] == ["passed", "failed", "passed"]
    assert chips["Cannot be judged"] == ["passed", "unassessed", "passed"]
    # The item verdict: passed only if every attempt passed; flaky where they disagree.
    assert "FAIL" in rows["Sometimes answers"] and ">flaky<" in rows["Sometimes answers"]
    assert "UNASSESSED" in rows["Cannot be judged"] and ">flaky<" not in rows["Cannot be judged"]
    assert "PASS" in rows["Always answers"] and ">flaky<" not in rows["Always answers"]
    assert "2/3" in rows["Sometimes answers"] and "3/3" in rows["Always answers"]
    # Verdict counts are summed over the attempts; the failures are the deciding attempt's, named.
    assert '2 pass</span> · <span class="fail">1 fail' in rows["Sometimes answers"]
    assert "attempt 2:" in rows["Sometimes answers"]


def test_a_repeated_run_filters_on_the_item_verdict(staff_client):
    run = repeated_run()
    url = f"/console/runs/{run.run_id}/"
    assert names(staff_client.get(url + "?passed=true").content.decode()) == ["Always answers"]
    # "failed" leaves the unassessed item out: it is neither passed nor failed.
    assert names(staff_client.get(url + "?passed=false").content.decode()) == ["Sometimes answers", "Never answers"]
    assert names(staff_client.get(url + "?passed=unassessed").content.decode()) == ["Cannot be judged"]
    assert names(staff_client.get(url + "?q=never").content.decode()) == ["Never answers"]
    page = staff_client.get(url + "?passed=true").content.decode()
    assert '<span id="shown-count">1</span> item shown' in page


def test_a_repeated_run_pages_by_item(staff_client, monkeypatch):
    from apps.runs import selectors

    monkeypatch.setattr(selectors.result_table_page, "__kwdefaults__", {"per_page": 3, "number": None, "sort": None})
    run = repeated_run()
    first = staff_client.get(f"/console/runs/{run.run_id}/").content.decode()
    second = staff_client.get(f"/console/runs/{run.run_id}/?page=2").content.decode()
    assert len(names(first)) == 3 and names(second) == ["Always answers"]
    assert "Page 1 of 2" in first


def test_the_live_view_sends_an_item_row_with_its_attempts_so_far(staff_client):
    run = repeated_run(status="running")
    live = staff_client.get(f"/console/runs/{run.run_id}/live/?after=").json()
    assert len(live["rows"]) == 4
    sometimes = next(r for r in live["rows"] if ">Sometimes answers<" in r)
    assert 'data-row-key="item-0"' in sometimes and sometimes.count('class="chip ') == 3
    live = staff_client.get(f"/console/runs/{run.run_id}/live/?after=&passed=true").json()
    assert [re.search(r'data-row-key="([^"]+)"', r).group(1) for r in live["rows"]] == ["item-2"]


@pytest.mark.parametrize("repeats", [1, 3])
def test_the_results_table_sorts_by_a_whitelisted_column(staff_client, repeats):
    run = repeated_run() if repeats == 3 else EvaluationRunFactory()
    if repeats == 1:
        for position, (name, verdicts) in enumerate(ATTEMPTS.items()):
            EvaluationResultFactory(
                run=run,
                position=position,
                item_name=name,
                duration_ms=100 * (4 - position),
                criteria_scores=[criterion("Answers", verdicts[0] is not False)],
            )
    url = f"/console/runs/{run.run_id}/"
    in_order = ["Sometimes answers", "Never answers", "Always answers", "Cannot be judged"]
    assert names(staff_client.get(url + "?sort=position").content.decode()) == in_order
    assert names(staff_client.get(url + "?sort=-position").content.decode()) == in_order[::-1]
    assert names(staff_client.get(url + "?sort=item").content.decode()) == sorted(in_order)
    by_ms = names(staff_client.get(url + "?sort=ms").content.decode())
    assert by_ms == (in_order if repeats == 3 else in_order[::-1])
    page = staff_client.get(url + "?sort=item").content.decode()
    assert 'aria-sort="ascending"><a class="sort" href="?sort=-item#results"' in page
    assert 'data-live-rows="0"' in page, "rows arrive live only in the default order"
    # A sort that is not a column (or an attempt at SQL) is the default order, not an error.
    default = names(staff_client.get(url).content.decode())
    for bad in ("passed", "item_name", "-", "--item", "position;drop", "__class__"):
        response = staff_client.get(url + f"?sort={bad}")
        assert response.status_code == 200 and names(response.content.decode()) == default
    # The filters keep the sort, and the sort keeps the filters.
    page = staff_client.get(url + "?sort=item&q=answers").content.decode()
    assert '<input type="hidden" name="sort" value="item">' in page
    assert 'href="?sort=-item&amp;q=answers#results"' in page or 'href="?q=answers&amp;sort=-item#results"' in page


def test_the_row_queue_control_is_a_menu_adding_the_deciding_attempt(staff_client):
    ReviewQueueFactory(kind=QueueKind.RUN_RESULT, name="Failed answers")
    run = repeated_run()
    page = staff_client.get(f"/console/runs/{run.run_id}/").content.decode()
    row = next(r for r in rows_of(page) if ">Sometimes answers<" in r)
    assert '<details class="queue-menu">' in row
    failed_attempt = run.results.get(item_name="Sometimes answers", attempt=2)
    assert f'name="target_id" value="{failed_attempt.result_id}"' in row
    assert 'aria-label="Queue for Sometimes answers, attempt 2"' in row


def test_queue_items_say_which_run_and_attempt_they_are(staff_client):
    run = repeated_run()
    queue = ReviewQueueFactory(kind=QueueKind.RUN_RESULT, name="Flaky ones")
    attempt = run.results.get(item_name="Sometimes answers", attempt=2)
    item = QueueItemFactory(queue=queue, result=attempt)
    single = QueueItemFactory(queue=queue)  # a result of a run without repeats, and without a label
    page = staff_client.get(f"/console/queues/{queue.pk}/").content.decode()
    text = re.sub(r"<[^>]+>", "", page)
    assert "run three each · attempt 2 of 3" in re.sub(r"\s+", " ", text)
    assert f'href="/console/runs/{run.run_id}/"' in page
    unlabelled = EvaluationResult.objects.get(pk=single.subject_id).run
    assert (
        f'<a href="/console/runs/{unlabelled.run_id}/">{timezone.localtime(unlabelled.created_at):%Y-%m-%d %H:%M}</a>'
        in page
    )
    review = staff_client.get(f"/console/queues/{queue.pk}/items/{item.pk}/").content.decode()
    heading = re.search(r'<p class="run-of-result" id="review-run">(.*?)</p>', review, re.S).group(1)
    assert (
        re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", heading)).strip()
        == "run three each · attempt 2 of 3 · Sometimes answers"
    )
    other = staff_client.get(f"/console/queues/{queue.pk}/items/{single.pk}/").content.decode()
    assert "attempt" not in re.search(r'<p class="run-of-result" id="review-run">(.*?)</p>', other, re.S).group(1)


def test_an_item_still_running_shows_its_unfinished_attempts(staff_client):
    run = repeated_run(status="running")
    run.results.filter(item_name="Always answers", attempt=3).update(state="running", passed=None, outcome=None)
    live = staff_client.get(f"/console/runs/{run.run_id}/live/?after=").json()
    always = next(r for r in live["rows"] if ">Always answers<" in r)
    assert re.findall(r'class="chip (\w+)"', always) == ["passed", "passed", "pending"]
    assert 'title="attempt 3 of 3: not finished"' in always and "2/2" in always


def test_an_attempts_result_page_names_its_run_and_links_its_sibling_attempts(staff_client):
    run = repeated_run()
    attempts = {r.attempt: r for r in run.results.filter(item_name="Sometimes answers")}
    page = staff_client.get(f"/console/results/{attempts[2].result_id}/").content.decode()
    line = re.search(r'<p id="result-attempt">(.*?)</p>', page, re.S).group(1)
    assert "attempt 2 of 3" in re.sub(r"<[^>]+>", "", line)
    for n, result in attempts.items():
        assert f'href="/console/results/{result.result_id}/" title="attempt {n} of 3: {result.outcome}"' in line
    assert line.count('aria-current="page"') == 1 and "chip failed current" in line
    single = EvaluationResultFactory()
    assert 'id="result-attempt"' not in staff_client.get(f"/console/results/{single.result_id}/").content.decode()


def test_a_repeated_runs_page_reads_a_fixed_number_of_queries_whatever_its_size(staff_client):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    ReviewQueueFactory(kind=QueueKind.RUN_RESULT)
    EvaluationRunFactory(repeats=3)  # so that both runs below have a previous run to compare with
    counts = []
    for items in (2, 60):
        run = EvaluationRunFactory(repeats=3)
        for position in range(items):
            for attempt in (1, 2, 3):
                EvaluationResultFactory(
                    run=run,
                    position=position,
                    attempt=attempt,
                    criteria_scores=[criterion("Answers", attempt != 2 or position % 2 == 0)],
                )
        staff_client.get(f"/console/runs/{run.run_id}/")  # the session's and the run's first reads aside
        with CaptureQueriesContext(connection) as captured:
            page = staff_client.get(f"/console/runs/{run.run_id}/")
        assert page.status_code == 200
        counts.append(len(captured))
    # A page of 50 items (150 attempts) reads no more than one of 2 items: the items' positions are
    # one grouped query, the page's attempts another.
    assert counts[0] == counts[1], counts
