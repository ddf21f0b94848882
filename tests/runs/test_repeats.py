"""Repeated trials (issue 16, item 1): each item runs `repeats` times, each attempt its own
conversation, transcript and verdicts; the run reports the mean pass rate with its Wilson interval,
pass^k, pass@k and flaky items; an item passes only if every attempt passed; nothing is served from
a cache."""

import re

import pytest
from django.test import TestCase

from apps.core.errors import InvalidInputError
from apps.core.models import Project
from apps.runs import selectors, services
from apps.runs.models import EvaluationResult, EvaluationRun
from apps.runs.schemas import RunCreateIn
from apps.runs.stats import tango_interval, wilson_interval
from tests.bots.factories import make_bot_spec
from tests.fakes.bot_server import FakeBotServer, knowledge_bot
from tests.runs.factories import PLAN_AGENT, PLAN_TEST_SET
from tests.runs.factories import REPEAT_ITEMS as ITEMS
from tests.runs.factories import repeat_answers as answers

pytestmark = pytest.mark.django_db


def create(**extra):
    with TestCase.captureOnCommitCallbacks(execute=True):
        return services.run_create(
            project=Project.objects.default(),
            data=RunCreateIn.of(
                **{
                    "agent_id": PLAN_AGENT,
                    "test_set_id": PLAN_TEST_SET,
                    "judge_model": "heuristic",
                    "concurrency": 2,
                    **extra,
                }
            ),
        )


@pytest.fixture
def repeated(plan):
    plan["items"] = ITEMS
    with FakeBotServer(answers) as bot:
        plan["bot"] = make_bot_spec(adapter="http", endpoint_url=bot.url)
        run = create(repeats=3)
    run.refresh_from_db()
    return run, bot


def test_every_item_runs_repeats_times_each_attempt_its_own_conversation(repeated):
    run, bot = repeated
    assert run.status == "completed" and (run.repeats, run.total, run.completed) == (3, 9, 9)
    attempts = sorted(run.results.values_list("item_name", "attempt"))
    assert attempts == [(name, n) for name in ("always", "never", "sometimes") for n in (1, 2, 3)]
    # Nine bot calls, nine conversations: no attempt was answered from another's (or a cache).
    conversations = [r["conversation_id"] for r in bot.requests]
    assert len(conversations) == 9 and len(set(conversations)) == 9
    case = ITEMS[0]["item_id"]
    assert f"{run.run_id}:{case}" in conversations and f"{run.run_id}:{case}:3" in conversations


def test_the_run_reports_pass_rate_interval_pass_hat_k_pass_at_k_and_flaky_items(repeated, api):
    run, _ = repeated
    # Attempts passed: sometimes 2 of 3, never 0, always 3: 5 of 9.
    assert (run.passed, run.failed) == (5, 4)
    body = api.get(f"/api/v1/runs/{run.run_id}").json()
    assert body["repeats"] == 3 and body["pass_rate"] == round(5 / 9, 4)
    assert body["pass_rate_ci"] == wilson_interval(5, 9)
    assert (body["pass_hat_k"], body["pass_at_k"], body["flaky_items"]) == (round(1 / 3, 4), round(2 / 3, 4), 1)
    # Stored when the run finished, and the same as computed from the results.
    assert (
        selectors.run_trial_figures(run=run)["items_judged"],
        run.items_passed_all,
        run.items_passed_any,
        run.flaky_items,
    ) == (3, 1, 2, 1)
    assert selectors.item_figures(run=run) == {
        "items_done": 3,
        "items_passed_all": 1,
        "items_passed_any": 2,
        "flaky_items": 1,
    }


def test_items_show_their_attempts_and_the_canonical_verdict(repeated, api):
    run, _ = repeated
    items = api.get(f"/api/v1/runs/{run.run_id}/items").json()
    assert (items["total"], items["has_more"]) == (3, False)
    by_name = {i["item_name"]: i for i in items["items"]}
    sometimes = by_name["sometimes"]
    assert [a["outcome"] for a in sometimes["attempts"]] == ["passed", "failed", "passed"]
    # All attempts must pass for the item to pass: a flaky item is failed, never green.
    assert (sometimes["outcome"], sometimes["flaky"], sometimes["pass_rate"]) == ("failed", True, round(2 / 3, 4))
    assert (sometimes["passed_all"], sometimes["passed_any"]) == (False, True)
    assert (by_name["never"]["outcome"], by_name["never"]["flaky"]) == ("failed", False)
    assert (by_name["always"]["outcome"], by_name["always"]["passed_all"]) == ("passed", True)
    flaky = api.get(f"/api/v1/runs/{run.run_id}/items?flaky=true").json()
    assert [i["item_name"] for i in flaky["items"]] == ["sometimes"]
    page = api.get(f"/api/v1/runs/{run.run_id}/items?limit=2&offset=0").json()
    assert len(page["items"]) == 2 and page["has_more"] is True
    results = api.get(f"/api/v1/runs/{run.run_id}/results").json()
    assert sorted(a["attempt"] for r in results for a in r["attempts"]) == [1, 1, 1, 2, 2, 2, 3, 3, 3]
    assert all(a["fingerprint"] == "" for r in results for a in r["attempts"])  # no verdicts: nothing judged them


def test_the_results_list_has_one_entry_per_item_with_its_attempts_nested(repeated, api):
    """The contract: "an array of results, one per test item". With repeats the entry's fields are
    its deciding attempt's: the first failed one of a failed item, so what it says failed is what
    failed the item, and passed = criteria_passed AND rubric_passed still holds."""
    run, _ = repeated
    results = api.get(f"/api/v1/runs/{run.run_id}/results").json()
    assert [r["item_name"] for r in results] == ["sometimes", "never", "always"]
    sometimes, never, always = results
    assert [(a["attempt"], a["outcome"], a["passed"]) for a in sometimes["attempts"]] == [
        (1, "passed", True),
        (2, "failed", False),
        (3, "passed", True),
    ]
    by_attempt = {r.attempt: r for r in run.results.filter(item_name="sometimes")}
    assert [a["result_id"] for a in sometimes["attempts"]] == [str(by_attempt[n].result_id) for n in (1, 2, 3)]
    # The item failed (not every attempt passed): its entry is attempt 2's, the one that failed.
    assert (sometimes["passed"], sometimes["outcome"], sometimes["flaky"]) == (False, "failed", True)
    assert (sometimes["attempt"], sometimes["result_id"]) == (2, str(by_attempt[2].result_id))
    assert sometimes["output"] == by_attempt[2].output and sometimes["criteria_passed"] is False
    assert (never["passed"], never["flaky"], never["attempt"]) == (False, False, 1)
    assert (always["passed"], always["outcome"], always["flaky"], always["attempt"]) == (True, "passed", False, 1)
    assert len(always["attempts"]) == 3

    # Filtered on the item's verdict, and paged by item.
    assert [r["item_name"] for r in api.get(f"/api/v1/runs/{run.run_id}/results?passed=true").json()] == ["always"]
    assert [r["item_name"] for r in api.get(f"/api/v1/runs/{run.run_id}/results?passed=false").json()] == [
        "sometimes",
        "never",
    ]
    first = api.get(f"/api/v1/runs/{run.run_id}/results?limit=2")
    assert [r["item_name"] for r in first.json()] == ["sometimes", "never"] and first["X-Has-More"] == "true"
    assert all(len(r["attempts"]) == 3 for r in first.json())
    rest = api.get(f"/api/v1/runs/{run.run_id}/results?limit=2&offset=2")
    assert [r["item_name"] for r in rest.json()] == ["always"] and rest["X-Has-More"] == "false"
    failed_page = api.get(f"/api/v1/runs/{run.run_id}/results?passed=false&limit=1&offset=1").json()
    assert [r["item_name"] for r in failed_page] == ["never"]


def test_a_streamed_results_list_of_a_repeated_run_is_grouped_by_item(repeated, api, monkeypatch):
    from apps.runs.api import views

    run, _ = repeated
    monkeypatch.setattr(views, "RESULTS_INLINE_MAX", 2)  # stream this small run's list
    response = api.get(f"/api/v1/runs/{run.run_id}/results")
    assert response.streaming
    import json

    body = json.loads(b"".join(response.streaming_content))
    assert [(r["item_name"], len(r["attempts"]), r["flaky"]) for r in body] == [
        ("sometimes", 3, True),
        ("never", 3, False),
        ("always", 3, False),
    ]


def test_without_repeats_the_results_list_has_no_attempts(plan, api):
    plan["items"] = ITEMS
    with FakeBotServer(answers) as bot:
        plan["bot"] = make_bot_spec(adapter="http", endpoint_url=bot.url)
        run = create()
    results = api.get(f"/api/v1/runs/{run.run_id}/results").json()
    assert len(results) == 3 and all("attempts" not in r and "flaky" not in r and r["attempt"] == 1 for r in results)
    page = api.get(f"/api/v1/runs/{run.run_id}/results?limit=2").json()
    assert len(page) == 2 and all("attempts" not in r for r in page)


def test_a_running_run_reports_its_figures_so_far(plan, monkeypatch, api):
    plan["items"] = ITEMS[2:]
    monkeypatch.setattr(services, "_enqueue", lambda ids: None)  # keep attempts queued; run them by hand
    with FakeBotServer(answers) as bot:
        plan["bot"] = make_bot_spec(adapter="http", endpoint_url=bot.url)
        run = create(repeats=2, concurrency=1)
        first = run.results.get(state="queued")
        assert first.attempt == 1  # attempt by attempt
        services.result_execute(result_pk=first.pk)
    body = api.get(f"/api/v1/runs/{run.run_id}").json()
    assert body["status"] == "running" and (body["completed"], body["pass_hat_k"], body["pass_at_k"]) == (1, 1.0, 1.0)


@pytest.mark.parametrize("repeats", [0, 11, "3", True, 2.5])
def test_repeats_out_of_range_or_not_a_whole_number_writes_nothing(plan, api, repeats):
    response = api.post(
        "/api/v1/runs", {"agent_id": PLAN_AGENT, "test_set_id": str(PLAN_TEST_SET), "repeats": repeats}, format="json"
    )
    assert response.status_code == 422 and "repeats" in str(response.json()["detail"])
    with pytest.raises(InvalidInputError, match="repeats"):
        create(repeats=repeats)
    assert EvaluationRun.objects.count() == 0 and EvaluationResult.objects.count() == 0


def test_a_rerun_keeps_the_repeats(repeated):
    run, _ = repeated
    with TestCase.captureOnCommitCallbacks(execute=False):
        again = services.run_rerun(run=run)
    assert (again.repeats, again.total, again.results.count()) == (3, 9, 9)


def test_llm_judged_repeats_ask_the_judge_anew_for_every_attempt(plan, openai_server):
    """No verdict is reused across attempts: the judge server sees every attempt's request."""
    openai_server.default = {"passed": True, "score": 1.0, "reasoning": "ok"}
    plan["items"] = [{**ITEMS[2], "expected": {"success_criteria": ["Answers the question"]}}]
    run = create(repeats=3, judge_model="judge-model")
    run.refresh_from_db()
    assert run.status == "completed" and run.completed == 3
    assert len(openai_server.chat_requests) == 3
    fingerprints = set(run.results.values_list("fingerprint", flat=True))
    assert len(fingerprints) == 1 and len(fingerprints.pop()) == 12  # one judge, recorded on each result


def test_a_comparison_over_repeats_tests_and_bounds_item_verdicts(plan, repeated, api):
    head, _ = repeated
    with FakeBotServer(knowledge_bot) as bot:  # every attempt of every item answered
        plan["bot"] = make_bot_spec(adapter="http", endpoint_url=bot.url)
        base = create(repeats=3)
    body = api.get(f"/api/v1/runs/{base.run_id}/compare/{head.run_id}").json()
    # Item verdicts (every attempt passed): "sometimes" and "never" went from pass to fail.
    assert body["changes"] == {"both_passed": 1, "both_failed": 0, "pass_to_fail": 2, "fail_to_pass": 0}
    # Test and interval are over the same 3 items and their verdicts (docs/comparison.md), not over attempts.
    assert (body["paired_items"], body["assessed_items"]) == (3, 3)
    assert body["pass_rate_diff_ci"] == tango_interval(gained=0, lost=2, n=3)
    low, high = body["pass_rate_diff_ci"]
    assert -1 < low < -2 / 3 < 0 < high
    assert body["mcnemar_p"] == 0.5 and body["verdict"] == "within_noise"  # 2 of 2 discordant: p = 0.5


def test_the_run_page_shows_pass_hat_k_pass_at_k_and_flaky_items(repeated, client):
    from tests.core.factories import UserFactory

    run, _ = repeated
    client.force_login(UserFactory(is_staff=True))
    page = client.get(f"/console/runs/{run.run_id}/").content.decode()

    # Four labelled figures, each with its denominator.
    def card(name):
        return re.search(rf'<div class="card trial" id="{name}-card">(.*?)</div>', page, re.S).group(1)

    assert "33%" in card("pass-hat-k") and "pass^3" in card("pass-hat-k") and "1/3 items" in card("pass-hat-k")
    assert "67%" in card("pass-at-k") and "pass@3" in card("pass-at-k") and "2/3 items" in card("pass-at-k")
    assert '<span id="flaky-items">1</span>/3' in card("flaky") and "flaky items" in card("flaky")
    mean = card("mean-pass-rate")
    assert "56%" in mean and "5/9 attempts" in mean and "95% CI 27–81%" in mean
    # The table: one row per item, its attempts as chips; only the flaky item says so.
    rows = re.findall(r'<td class="item-name">(.*?)</td>', page)
    assert len(rows) == 3
    chips = {re.search(r'">([a-z]+)</a>', r).group(1): re.findall(r'class="chip (\w+)"', r) for r in rows}
    assert chips == {"sometimes": ["passed", "failed", "passed"], "never": ["failed"] * 3, "always": ["passed"] * 3}
    assert [">flaky<" in r for r in rows] == [">sometimes<" in r for r in rows]
    # The flaky item's row is its failed attempt's: it links there and says which attempt failed.
    failed_attempt = run.results.get(item_name="sometimes", attempt=2)
    sometimes = next(r for r in rows if ">sometimes<" in r)
    assert sometimes.startswith(f'<a href="/console/results/{failed_attempt.result_id}/">')
    for result in run.results.filter(item_name="sometimes"):
        assert (
            f'href="/console/results/{result.result_id}/" title="attempt {result.attempt} of 3: {result.outcome}'
            in page
        )
    assert (
        '<span id="shown-count">3</span> items shown, each with its 3 attempts' in page
        and "repeats 3 (every item run 3 times)" in page
    )
    live = client.get(f"/console/runs/{run.run_id}/live/").json()
    assert "pass^3" in live["cards"]


def test_without_repeats_the_run_page_has_a_row_per_result_and_no_chips(plan, client):
    from tests.core.factories import UserFactory

    plan["items"] = ITEMS
    with FakeBotServer(answers) as bot:
        plan["bot"] = make_bot_spec(adapter="http", endpoint_url=bot.url)
        run = create()
    client.force_login(UserFactory(is_staff=True))
    page = client.get(f"/console/runs/{run.run_id}/").content.decode()
    assert len(re.findall(r'<td class="item-name">', page)) == 3
    assert "attempt-chips" not in page and 'id="pass-hat-k-card"' not in page and "repeats-note" not in page


def test_with_one_attempt_no_item_is_flaky(plan, api):
    plan["items"] = ITEMS
    with FakeBotServer(answers) as bot:
        plan["bot"] = make_bot_spec(adapter="http", endpoint_url=bot.url)
        run = create()
    assert api.get(f"/api/v1/runs/{run.run_id}/items?flaky=true").json() == {"items": [], "total": 0, "has_more": False}
    steady = api.get(f"/api/v1/runs/{run.run_id}/items?flaky=false").json()
    assert steady["total"] == 3 and [i["item_name"] for i in steady["items"]] == ["sometimes", "never", "always"]


def test_a_cancelled_run_reports_the_figures_of_the_attempts_it_finished(plan, monkeypatch, api):
    plan["items"] = ITEMS[2:]
    monkeypatch.setattr(services, "_enqueue", lambda ids: None)
    with FakeBotServer(answers) as bot:
        plan["bot"] = make_bot_spec(adapter="http", endpoint_url=bot.url)
        run = create(repeats=2, concurrency=1)
        services.result_execute(result_pk=run.results.get(state="queued").pk)
    services.run_cancel(run=run)
    body = api.get(f"/api/v1/runs/{run.run_id}").json()
    assert body["status"] == "cancelled" and (body["completed"], body["pass_hat_k"], body["pass_at_k"]) == (1, 1.0, 1.0)
