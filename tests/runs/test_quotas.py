"""Quotas on runs (issue 21): a run's attempts (items x repeats) are bounded, and its judge model is
one the platform allows. A refused launch writes nothing, whichever door it came through."""

import pytest
from django.test import TestCase

from apps.runs.models import EvaluationResult, EvaluationRun
from tests.bots.factories import BotFactory
from tests.testsets.factories import SuiteFactory

pytestmark = pytest.mark.django_db


def _items(n: int) -> list[dict]:
    return [
        {
            "type": "single_turn",
            "name": f"item {i}",
            "inputs": {"message": f"question {i}"},
            "expected": {"success_criteria": ['Response mentions "days"']},
        }
        for i in range(n)
    ]


@pytest.fixture
def big_test_set():
    bot = BotFactory()
    return SuiteFactory(bot=bot, items=_items(5000))


def launch(client, test_set, **extra):
    body = {"agent_id": test_set.bot.agent_id, "test_set_id": str(test_set.pk), "judge_model": "heuristic", **extra}
    with TestCase.captureOnCommitCallbacks(execute=False):
        return client.post("/api/v1/runs", body, format="json")


def test_ten_repeats_of_five_thousand_items_is_refused_with_nothing_written(default_key_api, big_test_set):
    # The audit's attack: an ordinary key asked for 50,000 attempts and got 50,000 result rows.
    response = launch(default_key_api, big_test_set, repeats=10)
    assert response.status_code == 422, response.content
    detail = response.json()["detail"]
    assert "50000" in detail.replace(",", "") and "20000" in detail.replace(",", "")
    assert "EVALSITE_MAX_RUN_ATTEMPTS" in detail
    assert EvaluationRun.objects.count() == 0
    assert EvaluationResult.objects.count() == 0


def test_a_run_at_the_limit_is_accepted(default_key_api, big_test_set, settings):
    settings.EVALSITE_MAX_RUN_ATTEMPTS = 10_000
    response = launch(default_key_api, big_test_set, repeats=2)
    assert response.status_code == 201, response.content
    assert EvaluationResult.objects.count() == 10_000
    settings.EVALSITE_MAX_RUN_ATTEMPTS = 9_999
    assert launch(default_key_api, big_test_set, repeats=2).status_code == 422
    assert EvaluationRun.objects.count() == 1


@pytest.fixture
def small_test_set():
    return SuiteFactory(bot=BotFactory(), items=_items(2))


def test_a_judge_model_the_platform_does_not_allow_is_refused(default_key_api, small_test_set, openai_server):
    response = launch(default_key_api, small_test_set, judge_model="gpt-4o")
    assert response.status_code == 422, response.content
    detail = response.json()["detail"]
    assert "gpt-4o" in detail and "judge-model" in detail and "EVALSITE_JUDGE_MODELS" in detail
    assert EvaluationRun.objects.count() == 0 and EvaluationResult.objects.count() == 0
    assert openai_server.requests == []


def test_the_configured_judge_model_and_the_listed_ones_are_accepted(
    default_key_api, small_test_set, openai_server, settings
):
    settings.EVALSITE_JUDGE_MODELS = ["big-judge"]
    for model in ("judge-model", "big-judge", "heuristic", None):
        response = launch(default_key_api, small_test_set, judge_model=model)
        assert response.status_code == 201, (model, response.content)
    assert list(EvaluationRun.objects.order_by("created_at").values_list("judge", flat=True)) == [
        "openai:judge-model",
        "openai:big-judge",
        "heuristic:v1",
        "openai:judge-model",
    ]
    assert launch(default_key_api, small_test_set, judge_model="other").status_code == 422


def test_the_admin_launch_form_names_the_limit(small_test_set, settings):
    from apps.runs.forms import AdminRunLaunchForm
    from tests.core.factories import UserFactory

    settings.EVALSITE_MAX_RUN_ATTEMPTS = 3
    user = UserFactory(is_staff=True)
    form = AdminRunLaunchForm(
        {
            "agent_id": small_test_set.bot.agent_id,
            "test_set_id": str(small_test_set.pk),
            "concurrency": 1,
            "repeats": 2,
            "judge_model": "heuristic",
        },
        project=small_test_set.project,
    )
    assert form.is_valid(), form.errors
    assert form.launch(user=user) is None
    assert "EVALSITE_MAX_RUN_ATTEMPTS" in str(form.non_field_errors())
    assert EvaluationRun.objects.count() == 0


def test_a_runs_llm_calls_are_billed_to_the_key_that_launched_it(default_key_api, plan, openai_server):
    # The judge's calls are made by the worker, long after the launching request has ended.
    from apps.core.models import KeyUsageDay
    from tests.runs.factories import PLAN_AGENT, PLAN_TEST_SET

    openai_server.default = {"passed": True, "score": 1.0, "reasoning": "ok"}
    body = {"agent_id": PLAN_AGENT, "test_set_id": str(PLAN_TEST_SET), "judge_model": "judge-model", "repeats": 2}
    with TestCase.captureOnCommitCallbacks(execute=True):
        response = default_key_api.post("/api/v1/runs", body, format="json")
    assert response.status_code == 201, response.content
    run = EvaluationRun.objects.get()
    assert run.status == "completed"
    calls = len(openai_server.chat_requests)
    assert calls > 0
    usage = KeyUsageDay.objects.get()
    assert (usage.api_key_id, usage.llm_calls, usage.input_tokens) == (run.api_key_id, calls, 11 * calls)
