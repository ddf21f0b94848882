"""Run reads as QuerySet methods, run_get / run_find, and the re-run service."""

import uuid

import pytest
from django.utils import timezone

from apps.core.errors import InvalidInputError, NotFoundError
from apps.core.models import Project
from apps.runs import selectors, services
from apps.runs.judging.types import RULE, Verdict
from apps.runs.models import EvaluationResult, EvaluationRun
from apps.runs.schemas import RunCreateIn
from tests.bots.factories import BotFactory
from tests.runs.factories import PLAN_AGENT as AGENT
from tests.runs.factories import PLAN_RUBRIC as RUBRIC_ID
from tests.runs.factories import PLAN_TEST_SET as TEST_SET
from tests.runs.factories import result_create

pytestmark = pytest.mark.django_db


def stored_run(**fields) -> EvaluationRun:
    fields.setdefault("agent_id", AGENT)
    fields.setdefault("test_set_id", TEST_SET)
    fields.setdefault("test_set_version", 1)
    fields.setdefault("status", EvaluationRun.Status.COMPLETED)
    return EvaluationRun.objects.create(project=Project.objects.default(), **fields)


def stored_result(run: EvaluationRun, position: int, *, state=EvaluationResult.State.DONE, rules=None):
    return result_create(
        run=run,
        position=position,
        test_case_id=uuid.UUID(int=position + 1),
        item_type="single_turn",
        state=state,
        rubric_scores=rules,
    )


def rule_json(rule_id: str, passed: bool, scope: str | None = "prompt") -> dict:
    return (
        Verdict.of(passed=passed, reasoning="why", judge="heuristic:v1")
        .for_rule({"id": rule_id, "severity": "high", "component_scope": scope})
        .to_json()
    )


class TestRunQuerySet:
    def test_with_bot_names_names_live_bots_and_leaves_deleted_ones_none(self):
        bot = BotFactory(name="Helpdesk")
        mine, orphan = stored_run(agent_id=bot.agent_id), stored_run(agent_id="f" * 24)
        names = {r.pk: r.bot_name_value for r in EvaluationRun.objects.with_bot_names()}
        assert names == {mine.pk: "Helpdesk", orphan.pk: None}
        bot.name = "Helpdesk v2"
        bot.save()
        # Runs keep the agent_id, not the name: a renamed bot shows its new name.
        assert EvaluationRun.objects.with_bot_names().get(pk=mine.pk).bot_name_value == "Helpdesk v2"

    def test_newest_first_breaks_ties_by_id(self):
        first, second = stored_run(), stored_run()
        EvaluationRun.objects.update(created_at=timezone.now())
        assert list(EvaluationRun.objects.newest_first()) == [second, first]

    def test_of_same_test_set_matches_test_set_or_question_set(self):
        run, same = stored_run(), stored_run(test_set_version=2)
        stored_run(test_set_id=uuid.UUID(int=99))
        v1 = stored_run(test_set_id=None, test_set_version=None, dataset_id=uuid.UUID(int=3))
        assert set(EvaluationRun.objects.of_same_test_set(run)) == {run, same}
        assert set(EvaluationRun.objects.of_same_test_set(v1)) == {v1}

    def test_status_counts(self):
        stored_run(), stored_run(), stored_run(status=EvaluationRun.Status.RUNNING)
        assert EvaluationRun.objects.status_counts() == {"completed": 2, "running": 1}


class TestResultQuerySet:
    def test_done_and_in_flight(self):
        run = stored_run()
        done = stored_result(run, 0)
        queued = stored_result(run, 1, state=EvaluationResult.State.QUEUED)
        running = stored_result(run, 2, state=EvaluationResult.State.RUNNING)
        stored_result(run, 3, state=EvaluationResult.State.PENDING)
        # Through the run's related manager too: the engine reads run.results.done().
        assert list(run.results.done()) == [done]
        assert set(run.results.in_flight()) == {queued, running}

    def test_rule_verdicts_reads_every_stored_rule_verdict(self):
        run = stored_run(rubric_id=RUBRIC_ID, rubric_version=1)
        stored_result(run, 0, rules=[rule_json("R1", True), rule_json("R2", False, scope=None)])
        stored_result(run, 1, rules=None)
        stored_result(run, 2, rules=[rule_json("R1", False)])
        verdicts = run.results.done().rule_verdicts()
        assert [(v.kind, v.key, v.passed) for v in verdicts] == [
            (RULE, "R1", True),
            (RULE, "R2", False),
            (RULE, "R1", False),
        ]
        assert selectors.run_live_component_scores(run=run) == {
            "prompt": {"score": 0.5, "total": 2, "passed": 1},
            "general": {"score": 0.0, "total": 1, "passed": 0},
        }


class TestRunGetAndFind:
    def test_get_raises_and_find_returns_none_for_an_unknown_run(self):
        with pytest.raises(NotFoundError):
            selectors.run_get(project=Project.objects.default(), run_id=uuid.uuid4())
        assert selectors.run_find(project=Project.objects.default(), run_id=uuid.uuid4()) is None

    def test_both_return_a_known_run(self):
        run = stored_run()
        assert (
            selectors.run_get(project=Project.objects.default(), run_id=run.run_id)
            == run
            == selectors.run_find(project=Project.objects.default(), run_id=run.run_id)
        )


class TestRunRerun:
    def test_pins_the_same_versions_judge_and_settings(
        self, plan, django_capture_on_commit_callbacks, django_user_model
    ):
        user = django_user_model.objects.create_user("reviewer")
        first = services.run_create(
            project=Project.objects.default(),
            data=RunCreateIn(
                agent_id=AGENT,
                test_set_id=TEST_SET,
                test_set_version=1,
                rubric_id=RUBRIC_ID,
                rubric_version=1,
                concurrency=2,
                component_scope_filter="prompt",
                component_ids_filter=["p1"],
                judge_model="heuristic",
            ),
        )
        with django_capture_on_commit_callbacks() as callbacks:
            again = services.run_rerun(run=first, created_by=user)
        assert again.pk != first.pk and again.status == EvaluationRun.Status.PENDING
        assert len(callbacks) == 1  # its start is queued once the transaction commits
        fields = (
            "agent_id",
            "test_set_id",
            "test_set_version",
            "rubric_id",
            "rubric_version",
            "concurrency",
            "component_scope_filter",
            "component_ids_filter",
            "judge",
        )
        assert [getattr(again, f) for f in fields] == [getattr(first, f) for f in fields]
        assert again.created_by == user

    def test_keeps_an_llm_judge(self, plan, settings):
        settings.OPENAI_API_KEY = "sk-test"
        first = stored_run(judge="openai:gpt-4o-mini", test_set_version=2)
        assert services.run_rerun(run=first).judge == "openai:gpt-4o-mini"

    def test_an_llm_judge_without_an_llm_configured_is_refused(self, plan, settings):
        settings.OPENAI_API_KEY, settings.OPENAI_BASE_URL = "", ""
        first = stored_run(judge="openai:gpt-4o-mini")
        with pytest.raises(InvalidInputError, match="needs an LLM"):
            services.run_rerun(run=first)
        assert EvaluationRun.objects.count() == 1

    def test_a_question_set_run_is_run_again_without_a_rubric(self, plan):
        first = stored_run(test_set_id=None, test_set_version=None, dataset_id=uuid.UUID(int=3))
        again = services.run_rerun(run=first)
        assert (again.dataset_id, again.test_set_id, again.rubric_id, again.total) == (first.dataset_id, None, None, 1)
