"""Runs on real Celery worker processes: the per-run concurrency limit across workers, and a worker
killed mid-item whose run the reaper recovers."""

import signal
import threading
import time

import pytest

from apps.bots.schemas import BotIn
from apps.bots.services import bot_create
from apps.core.models import Project
from apps.rubrics.schemas import RubricContent
from apps.rubrics.services import rubric_create
from apps.runs import services
from apps.runs.demo import load_demo_evaluation_data
from apps.runs.models import EvaluationResult, EvaluationRun
from apps.runs.schemas import RunCreateIn
from apps.testsets.demo import DEMO_TEST_SET_ID
from apps.testsets.schemas import TestSetContent
from apps.testsets.services import testset_create
from tests.fakes.bot_server import FakeBotServer

from .worker import broker_for_tests, celery_worker, sender, stop_worker, wait_for

# transaction=True: a real worker process reads and writes these rows through its own connection, so
# they must be committed.
pytestmark = [pytest.mark.celery_integration, pytest.mark.django_db(transaction=True)]


class Overlap:
    """Counts the requests being served at once and, until `want` of them have been, holds each one.
    A test that asserts requests really ran side by side then gets that overlap from the fake, not from
    how quickly a busy machine schedules the workers' threads. Once `want` were in flight together
    (`reached`), or after `patience` seconds without that (`gave_up`), nothing is held any more: a run
    that really serialises fails the assertion on `reached` instead of hanging."""

    def __init__(self, want: int | None = None, patience: float = 10.0):
        self.want = want
        self.patience = patience
        self.in_flight = 0
        self.peak = 0
        self.reached = False
        self.gave_up = False
        self.changed = threading.Condition()

    def enter(self) -> None:
        with self.changed:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            if self.want is None or self.in_flight >= self.want:
                self.reached = True
                self.changed.notify_all()
            if not self.changed.wait_for(lambda: self.reached or self.gave_up, timeout=self.patience):
                self.gave_up = True
                self.changed.notify_all()

    def leave(self) -> None:
        with self.changed:
            self.in_flight -= 1


class CountingBot:
    """Answers after a pause, and remembers the most conversations it ever served at once (holding
    the first ones until `hold_until` are open together, see Overlap)."""

    def __init__(self, pause: float, first_request_pause: float | None = None, hold_until: int | None = None):
        self.pause = pause
        self.first_request_pause = first_request_pause
        self.overlap = Overlap(hold_until)
        self.served = 0
        self.lock = threading.Lock()

    @property
    def peak(self) -> int:
        return self.overlap.peak

    def __call__(self, request):
        with self.lock:
            self.served += 1
            first = self.served == 1
        self.overlap.enter()
        try:
            time.sleep(self.first_request_pause if first and self.first_request_pause else self.pause)
        finally:
            self.overlap.leave()
        return 200, {
            "reply": "Full-time employees accrue 15 days per year.",
            "tool_calls": [{"name": "search_kb", "arguments": {"query": "pto"}, "result": ["PTO Policy"]}],
        }


def http_bot(url: str) -> str:
    bot = bot_create(
        project=Project.objects.default(),
        data=BotIn.model_validate(
            {
                "name": "HTTP bot under test",
                "adapter": "http",
                "endpoint_url": url,
                "tools": [
                    {"tool_name": "search_kb", "name": "Search", "type": "knowledge_base"},
                    {"tool_name": "live_handoff", "name": "Handoff", "type": "human_handoff"},
                ],
            }
        ),
    )
    return bot.agent_id


def route_through(monkeypatch, app):
    # The test process runs tasks eagerly; what it dispatches must cross the broker instead.
    monkeypatch.setattr(
        services, "_enqueue", lambda ids: [app.send_task("apps.runs.tasks.execute_result", args=[pk]) for pk in ids]
    )


def test_concurrency_limit_holds_across_two_workers(tmp_path, monkeypatch):
    load_demo_evaluation_data()
    broker_url, options = broker_for_tests(tmp_path)
    app = sender(broker_url, options)
    route_through(monkeypatch, app)
    behaviour = CountingBot(pause=0.1, hold_until=2)
    with (
        FakeBotServer(behaviour) as bot,
        celery_worker(broker_url, tmp_path, concurrency=2),
        celery_worker(broker_url, tmp_path, concurrency=2),
    ):
        run = services.run_create(
            project=Project.objects.default(),
            data=RunCreateIn(
                agent_id=http_bot(bot.url), test_set_id=DEMO_TEST_SET_ID, concurrency=2, judge_model="heuristic"
            ),
        )
        app.send_task("apps.runs.tasks.start_run", args=[run.pk])
        assert wait_for(lambda: EvaluationRun.objects.get(pk=run.pk).status == "completed", timeout=120)
    run.refresh_from_db()
    assert run.completed == run.total == 5
    # Four worker slots were free, but the run asked for two at a time: never more (the bot counted every
    # conversation it served at once), and truly two side by side (it held the first until a second came).
    assert behaviour.peak == 2
    assert behaviour.overlap.reached and not behaviour.overlap.gave_up
    assert all(r.attempts == 1 for r in run.results.all())


def test_a_killed_worker_is_recovered_by_the_reaper(tmp_path, monkeypatch, settings):
    load_demo_evaluation_data()
    broker_url, options = broker_for_tests(tmp_path)
    app = sender(broker_url, options)
    route_through(monkeypatch, app)
    behaviour = CountingBot(pause=0.05, first_request_pause=60)  # the first conversation hangs
    with FakeBotServer(behaviour) as bot:
        agent_id = http_bot(bot.url)
        with celery_worker(broker_url, tmp_path) as doomed:
            run = services.run_create(
                project=Project.objects.default(),
                data=RunCreateIn(
                    agent_id=agent_id, test_set_id=DEMO_TEST_SET_ID, concurrency=1, judge_model="heuristic"
                ),
            )
            app.send_task("apps.runs.tasks.start_run", args=[run.pk])
            assert wait_for(lambda: run.results.filter(state="running").exists(), timeout=60)
            # Killed only once the hanging request is at the bot: killed earlier (between the item
            # turning `running` and its POST, a window a loaded machine widens), the retry would be
            # the bot's first request and hang instead.
            assert wait_for(lambda: behaviour.served >= 1, timeout=60)
            stop_worker(doomed, signal.SIGKILL)  # the machine is gone: no cleanup, no ack
        stuck = run.results.get(state="running")

        settings.EVALSITE_RUN_HEARTBEAT_TIMEOUT_SECONDS = 2
        time.sleep(2.5)
        assert services.runs_reap() >= 1
        with celery_worker(broker_url, tmp_path, extra_env={"EVALSITE_RUN_HEARTBEAT_TIMEOUT_SECONDS": "2"}):
            finished = wait_for(
                lambda: EvaluationRun.objects.get(pk=run.pk).status == "completed", timeout=120, interval=0.5
            )
            if not finished:
                # The broker may redeliver the killed task too; reaping again is what the beat task does.
                services.runs_reap()
                finished = wait_for(lambda: EvaluationRun.objects.get(pk=run.pk).status == "completed", timeout=60)
    assert finished
    run.refresh_from_db()
    assert run.completed == run.total == 5
    recovered = EvaluationResult.objects.get(pk=stuck.pk)
    assert recovered.state == "done" and recovered.attempts == 2 and recovered.error is None


def test_a_run_never_opens_more_than_concurrency_times_per_item_judge_requests(tmp_path, monkeypatch, openai_server):
    # Every judge reply is counted while it is being answered; the first ones are held until three are
    # open at once, so the overlap asserted below is made by the fake server, not won in a race.
    overlap = Overlap(want=3)

    def judge(body: dict) -> dict:
        overlap.enter()
        try:
            return {"passed": True, "score": 1.0, "reasoning": "Met."}
        finally:
            overlap.leave()

    openai_server.default = judge
    broker_url, options = broker_for_tests(tmp_path)
    app = sender(broker_url, options)
    route_through(monkeypatch, app)
    worker_env = {
        "DJANGO_SETTINGS_MODULE": "tests.integration.settings_llm_judge",
        "EVALSITE_TEST_OPENAI_BASE_URL": openai_server.url,
        "EVALSITE_JUDGE_CONCURRENCY_PER_ITEM": "2",
    }
    with FakeBotServer(CountingBot(pause=0.05)) as bot:
        agent_id = http_bot(bot.url)
        test_set = testset_create(
            project=Project.objects.default(),
            content=TestSetContent.model_validate(
                {
                    "agent_id": agent_id,
                    "name": "judge bound",
                    "items": [
                        {
                            "type": "single_turn",
                            "name": f"item {i}",
                            "inputs": {"message": f"PTO question {i}?"},
                            "expected": {"success_criteria": [f"Criterion {c} of item {i}" for c in range(3)]},
                        }
                        for i in range(4)
                    ],
                }
            ),
        )
        rubric = rubric_create(
            project=Project.objects.default(),
            content=RubricContent.model_validate(
                {
                    "agent_id": agent_id,
                    "name": "judge bound",
                    "rules": [
                        {
                            "id": f"RULE_{r}",
                            "name": f"Rule {r}",
                            "severity": "medium",
                            "category": "c",
                            "description": "d",
                            "evaluation_criteria": {"pass_conditions": ["is fine"], "fail_conditions": []},
                        }
                        for r in range(3)
                    ],
                }
            ),
        )
        # Two workers with two slots each: four items could run, but the run allows two.
        with (
            celery_worker(broker_url, tmp_path, worker_env, concurrency=2),
            celery_worker(broker_url, tmp_path, worker_env, concurrency=2),
        ):
            run = services.run_create(
                project=Project.objects.default(),
                data=RunCreateIn(
                    agent_id=agent_id,
                    test_set_id=test_set.pk,
                    rubric_id=rubric.pk,
                    concurrency=2,
                    judge_model="judge-model",
                ),
            )
            app.send_task("apps.runs.tasks.start_run", args=[run.pk])
            assert wait_for(lambda: EvaluationRun.objects.get(pk=run.pk).status == "completed", timeout=120)
    run.refresh_from_db()
    assert run.completed == run.total == 4 and run.passed == 4
    assert len(openai_server.chat_requests) == 4 * 6
    # Never past concurrency x per-item (2 x 2), counted by the server over each whole request; and more
    # than one item's share (2) at once, which the held replies guarantee unless the run serialises.
    assert openai_server.peak_in_flight <= 4
    assert overlap.reached and not overlap.gave_up and overlap.peak >= 3
