from datetime import timedelta

import pytest
from django.test import TestCase
from django.utils import timezone

from apps.core.errors import ConflictError, InvalidInputError, NotFoundError
from apps.core.models import Project
from apps.runs import selectors, services
from apps.runs.models import EvaluationResult, EvaluationRun, RunComparison
from apps.runs.schemas import RunCreateIn
from tests.bots.factories import make_bot_spec
from tests.fakes.bot_server import FakeBotServer
from tests.runs.factories import PLAN_AGENT, PLAN_DATASET, PLAN_RUBRIC, PLAN_TEST_SET

pytestmark = pytest.mark.django_db


def create(**extra):
    # run_create enqueues the run on commit; the test's transaction never commits, so run what it
    # queued when the block ends (what the django_capture_on_commit_callbacks fixture does).
    with TestCase.captureOnCommitCallbacks(execute=True):
        return services.run_create(
            project=Project.objects.default(),
            data=RunCreateIn.of(
                **{"agent_id": PLAN_AGENT, "test_set_id": PLAN_TEST_SET, "judge_model": "heuristic", **extra}
            ),
        )


def test_run_completes_with_contract_aggregates(plan):
    run = create(rubric_id=PLAN_RUBRIC, concurrency=2)
    run.refresh_from_db()
    assert run.status == "completed" and run.started_at and run.completed_at
    assert (run.total, run.completed) == (6, 6)
    assert (run.passed, run.failed) == (4, 2)  # every third item asks something the handbook lacks
    assert (run.test_set_version, run.rubric_version, run.judge) == (2, 1, "heuristic:v1")
    results = list(run.results.order_by("position"))
    assert all(r.state == "done" and r.attempts == 1 for r in results)
    assert run.criteria_total == sum(len(r.criteria_scores) for r in results)
    assert run.criteria_passed == sum(1 for r in results for c in r.criteria_scores if c["passed"])
    assert run.rubric_rules_total == 18 and run.rubric_rules_passed == sum(
        1 for r in results for v in r.rubric_scores if v["passed"]
    )
    assert set(run.component_scores) == {"prompt", "knowledge_base", "function"}
    assert run.component_scores["function"] == {"score": 1.0, "total": 6, "passed": 6}


def test_a_finished_runs_comparison_with_the_previous_run_is_kept_when_it_finishes(plan):
    first = create(rubric_id=PLAN_RUBRIC)
    assert not RunComparison.objects.exists()  # the first run of its test set: nothing to compare with
    second = create(rubric_id=PLAN_RUBRIC)
    second.refresh_from_db()
    kept = RunComparison.objects.get()
    assert (kept.base_id, kept.head_id) == (first.pk, second.pk)
    assert kept.state == f"completed:6:completed:{second.completed}"
    # What the page then reads is that row: the same figures as a comparison computed now.
    assert kept.core["statistics"] == selectors.run_comparison(base=first, head=second)["statistics"]
    assert kept.core["statistics"]["paired_items"] == 6


def test_no_rubric_means_null_component_scores(plan):
    run = create()
    run.refresh_from_db()
    assert run.component_scores is None and run.rubric_rules_total == 0
    assert all(r.rubric_scores is None and r.rubric_passed is None for r in run.results.all())


def test_v1_question_set_run(plan, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        run = services.run_create(
            project=Project.objects.default(),
            data=RunCreateIn.of(agent_id=PLAN_AGENT, dataset_id=PLAN_DATASET, judge_model="heuristic"),
        )
    run.refresh_from_db()
    result = run.results.get()
    assert run.status == "completed" and result.item_type == "question"
    assert result.scores["correctness"]["score"] == 1.0 and result.criteria_scores is None


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"agent_id": "b" * 24}, NotFoundError),
        ({"test_set_id": None}, InvalidInputError),
        ({"dataset_id": PLAN_DATASET}, InvalidInputError),
        ({"concurrency": 0}, InvalidInputError),
        ({"concurrency": 33}, InvalidInputError),
        ({"component_scope_filter": "everything"}, InvalidInputError),
        ({"rubric_version": 3}, InvalidInputError),
        ({"judge_model": "gpt-4o"}, InvalidInputError),
    ],
)
def test_invalid_runs_write_nothing(plan, kwargs, error):
    with pytest.raises(error):
        create(**kwargs)
    assert EvaluationRun.objects.count() == 0 and EvaluationResult.objects.count() == 0


def test_bot_failures_fail_items_and_the_run_goes_on(plan):
    calls = {"n": 0}

    def flaky(request):
        calls["n"] += 1
        return (500, {"error": "boom"}) if calls["n"] % 2 else (200, {"reply": "1.5 days per month", "tool_calls": []})

    with FakeBotServer(flaky) as bot:
        plan["bot"] = make_bot_spec(adapter="http", endpoint_url=bot.url)
        run = create()
    run.refresh_from_db()
    assert run.status == "completed" and run.completed == 6
    errors = [r.error for r in run.results.order_by("position")]
    assert sum(1 for e in errors if e and "HTTP 500" in e) == 3


def test_redelivered_task_writes_the_result_once(plan, monkeypatch):
    monkeypatch.setattr(services, "_enqueue", lambda ids: None)  # keep items queued, deliver by hand
    run = create(concurrency=1)
    result = run.results.get(state="queued")
    services.result_execute(result_pk=result.pk)
    services.result_execute(result_pk=result.pk)
    run.refresh_from_db()
    assert run.completed == 1 and EvaluationResult.objects.get(pk=result.pk).attempts == 1


def test_never_more_than_concurrency_items_in_flight(plan, monkeypatch, django_capture_on_commit_callbacks):
    queued_batches = []
    monkeypatch.setattr(services, "_enqueue", lambda ids: queued_batches.append(list(ids)))
    run = create(concurrency=4)
    assert run.results.filter(state__in=["queued", "running"]).count() == 4
    with django_capture_on_commit_callbacks(execute=True):
        services.run_dispatch(run_pk=run.pk)
    assert run.results.filter(state__in=["queued", "running"]).count() == 4
    first = run.results.filter(state="queued").order_by("position").first()
    with django_capture_on_commit_callbacks(execute=True):
        services.result_execute(result_pk=first.pk)
    assert run.results.filter(state__in=["queued", "running"]).count() == 4
    assert [len(b) for b in queued_batches] == [4, 1]


def test_reaper_requeues_a_dead_workers_item_then_gives_up(plan, monkeypatch, settings):
    monkeypatch.setattr(services, "_enqueue", lambda ids: None)
    run = create(concurrency=1)
    result = run.results.get(state="queued")
    old = timezone.now() - timedelta(seconds=settings.EVALSITE_RUN_HEARTBEAT_TIMEOUT_SECONDS + 5)
    for attempt in range(1, services.MAX_ATTEMPTS + 1):
        # A worker takes the item and dies without a word.
        EvaluationResult.objects.filter(pk=result.pk).update(state="running", attempts=attempt, heartbeat_at=old)
        assert services.runs_reap() == 1
        state = EvaluationResult.objects.get(pk=result.pk).state
        assert state == ("queued" if attempt < services.MAX_ATTEMPTS else "done")
    failed = EvaluationResult.objects.get(pk=result.pk)
    assert failed.passed is False and "Worker lost" in failed.error
    assert EvaluationRun.objects.get(pk=run.pk).failed == 1


def test_cancel_stops_dispatching_and_twice_is_409(plan, monkeypatch):
    monkeypatch.setattr(services, "_enqueue", lambda ids: None)
    run = create(concurrency=2)
    services.run_cancel(run=run)
    queued = run.results.filter(state="queued").first()
    services.result_execute(result_pk=queued.pk)
    assert EvaluationResult.objects.get(pk=queued.pk).state == "queued"
    assert EvaluationRun.objects.get(pk=run.pk).status == "cancelled"
    with pytest.raises(ConflictError):
        services.run_cancel(run=run)
