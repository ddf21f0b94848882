"""The reaper and the heartbeat: a run never stays `running` after its workers die."""

import threading
import time

import pytest
from django.test import TestCase
from django.utils import timezone

from apps.bots.adapters import get_adapter
from apps.core.models import Project
from apps.runs import executor, services
from apps.runs.models import EvaluationResult, EvaluationRun
from apps.runs.schemas import RunCreateIn
from tests.runs.factories import PLAN_AGENT, PLAN_TEST_SET

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


def test_reaper_redispatches_a_run_whose_worker_died_between_items(
    plan, monkeypatch, django_capture_on_commit_callbacks
):
    monkeypatch.setattr(services, "_enqueue", lambda ids: None)  # deliver by hand
    run = create(concurrency=1)
    first = run.results.get(state="queued")
    # The worker records the item's result, then dies before its own run_dispatch: one done item,
    # the others pending, nothing queued or running, so no heartbeat ever goes stale.
    dispatch = services.run_dispatch
    monkeypatch.setattr(services, "run_dispatch", lambda *, run_pk: [])
    services.result_execute(result_pk=first.pk)
    monkeypatch.setattr(services, "run_dispatch", dispatch)
    assert not run.results.filter(state__in=EvaluationResult.IN_FLIGHT).exists()
    assert run.results.filter(state="pending").count() == 5

    with django_capture_on_commit_callbacks(execute=True):
        assert services.runs_reap() >= 1
    queued = run.results.filter(state="queued")
    assert queued.count() == 1

    # Queued items now finish the run the ordinary way, each one dispatching the next.
    monkeypatch.setattr(services, "_enqueue", lambda ids: [services.result_execute(result_pk=pk) for pk in ids])
    with django_capture_on_commit_callbacks(execute=True):
        services.result_execute(result_pk=queued.get().pk)
    run.refresh_from_db()
    assert run.status == "completed" and run.completed == 6


def test_reaper_completes_a_run_whose_last_item_finished_without_finalizing(
    plan, monkeypatch, django_capture_on_commit_callbacks
):
    run = create(concurrency=6)
    # Every item done, the run still `running`: the worker died after the last result committed.
    EvaluationRun.objects.filter(pk=run.pk).update(status="running", completed_at=None)
    with django_capture_on_commit_callbacks(execute=True):
        services.runs_reap()
    run.refresh_from_db()
    assert run.status == "completed" and run.completed_at is not None


def test_reading_a_stuck_run_recovers_it(plan, monkeypatch, django_capture_on_commit_callbacks):
    monkeypatch.setattr(services, "_enqueue", lambda ids: None)
    run = create(concurrency=2)
    # Two items lost between commit and dispatch: back to pending, nothing in flight.
    run.results.filter(state="queued").update(state="pending", heartbeat_at=None)
    with django_capture_on_commit_callbacks(execute=True):
        services.run_recover(project=Project.objects.default(), run_id=run.run_id)
    assert run.results.filter(state="queued").count() == 2


def test_reaper_leaves_a_busy_run_alone(plan, monkeypatch, django_capture_on_commit_callbacks):
    enqueued = []
    monkeypatch.setattr(services, "_enqueue", enqueued.extend)
    run = create(concurrency=2)
    enqueued.clear()
    with django_capture_on_commit_callbacks(execute=True):
        assert services.runs_reap() == 0
    # Its two live items are untouched and nothing more was queued past the concurrency limit.
    assert enqueued == [] and run.results.filter(state="queued").count() == 2


class SlowBot:
    """Answers after a pause longer than the heartbeat timeout, noting the heartbeat it sees."""

    def __init__(self, pause: float, result_pk: int):
        self.pause, self.result_pk, self.seen = pause, result_pk, []
        self.demo = get_adapter("demo")

    def respond(self, spec, messages, *, conversation_id):
        started = timezone.now()
        time.sleep(self.pause)
        self.seen.append((started, EvaluationResult.objects.get(pk=self.result_pk).heartbeat_at))
        # The reaper runs while the turn is still going: the item must not look dead.
        self.reaped = services.runs_reap()
        return self.demo.respond(spec, messages, conversation_id=conversation_id)


# transaction=True: the keep-alive thread writes heartbeats through its own database connection, which
# sees only committed rows and would wait on the row the test's open transaction has locked.
@pytest.mark.django_db(transaction=True)
def test_a_long_bot_turn_keeps_its_heartbeat_alive(plan, monkeypatch, settings):
    settings.EVALSITE_RUN_HEARTBEAT_TIMEOUT_SECONDS = 1
    monkeypatch.setattr(services, "_enqueue", lambda ids: None)
    plan["items"] = plan["items"][:1]
    run = create(concurrency=1)
    result = run.results.get()
    bot = SlowBot(pause=2.0, result_pk=result.pk)
    monkeypatch.setattr(executor, "get_adapter", lambda name: bot)

    services.result_execute(result_pk=result.pk)

    started, heartbeat = bot.seen[0]
    assert heartbeat > started  # refreshed during the turn, not only before it
    assert bot.reaped == 0
    result.refresh_from_db()
    assert result.state == "done" and result.attempts == 1 and not result.error
    assert EvaluationRun.objects.get(pk=run.pk).status == "completed"


# transaction=True: the keep-alive thread writes heartbeats through its own database connection, which
# sees only committed rows and would wait on the row the test's open transaction has locked.
@pytest.mark.django_db(transaction=True)
def test_keepalive_thread_ends_with_the_item(plan, monkeypatch, settings):
    settings.EVALSITE_RUN_HEARTBEAT_TIMEOUT_SECONDS = 1
    monkeypatch.setattr(services, "_enqueue", lambda ids: None)
    run = create(concurrency=1)
    before = threading.active_count()
    services.result_execute(result_pk=run.results.get(state="queued").pk)
    # A worker runs thousands of items: a thread left behind per item would pile up.
    assert threading.active_count() == before
