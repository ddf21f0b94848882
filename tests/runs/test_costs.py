"""What a run's LLM calls cost: per result and per run, bot and judge apart, unpriced calls counted
and never priced at $0, from the engine's own records of the calls (apps.runs.costs)."""

import json
from dataclasses import replace
from datetime import date
from decimal import Decimal

import pytest
from django.core.management import CommandError, call_command
from django.test import TestCase

from apps.bots.adapters import ADAPTERS
from apps.core.models import ModelPrice, Project
from apps.core.pricing import PriceBook
from apps.runs import services
from apps.runs.costs import item_cost
from apps.runs.judging.types import Verdict
from apps.runs.models import EvaluationRun
from apps.runs.schemas import RunCreateIn
from tests.core.factories import ProjectFactory, project_key_client
from tests.prometheus_text import sample
from tests.runs.factories import PLAN_AGENT, PLAN_TEST_SET, EvaluationResultFactory, EvaluationRunFactory

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("shipped_prices")]

DAY = date(2026, 1, 1)
# One bot turn: 1M prompt tokens (200k of them cached) and 100k completion tokens.
TURN = {"prompt_tokens": 1_000_000, "completion_tokens": 100_000, "cached_tokens": 200_000, "calls": 1}
# gpt-4o's shipped price: 800k x 2.50 + 200k x 1.25 + 100k x 10.00 per million.
TURN_GPT_4O = Decimal("2.0") + Decimal("0.25") + Decimal("1.0")


def judge_verdict(model: str | None, *, prompt=100_000, completion=10_000, share=None) -> Verdict:
    usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
    if share:
        usage["verdicts_in_request"] = share
    fingerprint = {"judge": "llm", "model": model} if model else None
    return Verdict.of(passed=True, reasoning="", judge=f"openai:{model}", usage=usage, fingerprint=fingerprint)


def cost(**kwargs):
    kwargs.setdefault("bot_turns", [])
    kwargs.setdefault("bot_model", "")
    kwargs.setdefault("verdicts", [])
    return item_cost(book=PriceBook.load(), on=DAY, **kwargs)


def test_no_calls_at_all_cost_null_not_zero():
    # The demo bot and the heuristic judge make no LLM call: nothing priced, nothing unpriced.
    heuristic = Verdict.of(passed=True, reasoning="", judge="heuristic:v1")
    figures = cost(bot_turns=[{}], verdicts=[heuristic])
    assert (figures.bot, figures.judge, figures.total, figures.unpriced_calls) == (None, None, None, 0)


def test_bot_turns_priced_by_the_model_that_answered_else_the_configured_one():
    figures = cost(bot_turns=[{**TURN, "model": "gpt-4o-2024-08-06"}, TURN], bot_model="gpt-4o")
    assert figures.bot == 2 * TURN_GPT_4O and figures.unpriced_calls == 0


def test_an_unpriced_model_is_counted_and_left_out_of_the_amount():
    figures = cost(bot_turns=[{**TURN, "model": "my-finetune", "calls": 3}])
    assert (figures.bot, figures.total, figures.unpriced_calls) == (None, None, 3)


def test_a_call_before_every_valid_from_is_unpriced():
    figures = item_cost(book=PriceBook.load(), on=date(2020, 1, 1), bot_turns=[TURN], bot_model="gpt-4o", verdicts=[])
    assert (figures.bot, figures.unpriced_calls) == (None, 1)


def test_a_mix_of_priced_and_unpriced_sums_the_priced_ones():
    # 100k in at 0.15 + 10k out at 0.60 per million (gpt-4o-mini).
    mini = Decimal("0.015") + Decimal("0.006")
    figures = cost(
        bot_turns=[{**TURN, "model": "gpt-4o"}, {**TURN, "model": "unknown-bot-model"}],
        verdicts=[judge_verdict("gpt-4o-mini"), judge_verdict("unknown-judge"), judge_verdict(None)],
    )
    assert figures.bot == TURN_GPT_4O and figures.judge == mini
    assert figures.total == TURN_GPT_4O + mini and figures.unpriced_calls == 3


def test_a_batched_judge_request_is_priced_once_for_all_its_verdicts():
    batch = [judge_verdict("gpt-4o-mini", share=3) for _ in range(3)]
    figures = cost(verdicts=batch)
    assert figures.judge == Decimal("0.021") and figures.unpriced_calls == 0
    unpriced_batch = [judge_verdict("unknown", share=3) for _ in range(3)]
    assert cost(verdicts=unpriced_batch).unpriced_calls == 1


class UsageReportingBot:
    """The demo bot, reporting what an LLM bot's turn reports: its usage and the model that answered."""

    name = "demo"

    def __init__(self, model: str | None):
        self.model = model
        self.demo = ADAPTERS["demo"]

    def respond(self, spec, messages, *, conversation_id):
        turn = self.demo.respond(spec, messages, conversation_id=conversation_id)
        return replace(turn, usage={**TURN, **({"model": self.model} if self.model else {})})


def run_with_bot():
    with TestCase.captureOnCommitCallbacks(execute=True):
        run = services.run_create(
            project=Project.objects.default(),
            data=RunCreateIn.of(agent_id=PLAN_AGENT, test_set_id=PLAN_TEST_SET, judge_model="heuristic"),
        )
    run.refresh_from_db()
    return run


@pytest.fixture
def llm_bot(plan, monkeypatch):
    def use(model):
        monkeypatch.setitem(ADAPTERS, "demo", UsageReportingBot(model))

    plan["bot"] = replace(plan["bot"], llm_model="gpt-4o")
    return use


def test_a_run_records_each_results_cost_and_the_runs_totals(llm_bot, admin_client):
    llm_bot("gpt-4o-2024-08-06")
    run = run_with_bot()
    assert run.status == "completed"
    results = list(run.results.all())
    assert all(r.bot_cost == TURN_GPT_4O and r.judge_cost is None for r in results)
    assert results[0].bot_usage == [{**TURN, "model": "gpt-4o-2024-08-06"}]
    assert run.bot_cost == 6 * TURN_GPT_4O and run.judge_cost is None and run.unpriced_calls == 0

    body = admin_client.get(f"/api/v1/runs/{run.run_id}").json()
    assert body["cost"] == {
        "bot": "19.500000",
        "judge": None,
        "total": "19.500000",
        "currency": "USD",
        "unpriced_calls": 0,
    }
    entries = admin_client.get(f"/api/v1/runs/{run.run_id}/results").json()
    assert entries[0]["cost"] == {
        "bot": "3.250000",
        "judge": None,
        "total": "3.250000",
        "currency": "USD",
        "unpriced_calls": 0,
    }
    detail = admin_client.get(f"/api/v1/results/{results[0].result_id}").json()
    assert detail["cost"]["total"] == "3.250000"
    assert admin_client.get("/api/v1/runs").json()[0]["cost"]["bot"] == "19.500000"


def test_a_run_of_an_unpriced_bot_has_a_null_amount_and_counts_its_calls(llm_bot, admin_client):
    llm_bot("my-finetune")
    run = run_with_bot()
    assert (run.bot_cost, run.judge_cost, run.unpriced_calls) == (None, None, 6)
    body = admin_client.get(f"/api/v1/runs/{run.run_id}").json()
    assert body["cost"] == {"bot": None, "judge": None, "total": None, "currency": "USD", "unpriced_calls": 6}


def test_a_run_without_llm_calls_costs_null(plan, admin_client):
    run = run_with_bot()
    assert (run.bot_cost, run.judge_cost, run.unpriced_calls) == (None, None, 0)
    assert admin_client.get(f"/api/v1/runs/{run.run_id}").json()["cost"]["total"] is None


def test_a_price_edited_after_the_run_does_not_rewrite_its_bill(llm_bot):
    llm_bot("gpt-4o")
    run = run_with_bot()
    ModelPrice.objects.filter(model="gpt-4o").update(input_per_mtok=Decimal(100))
    run.refresh_from_db()
    assert run.bot_cost == 6 * TURN_GPT_4O


def test_another_projects_costs_never_show():
    """Prices are global; costs are on each project's own runs, which only that project reads."""
    mine, theirs = ProjectFactory(slug="mine"), ProjectFactory(slug="theirs")
    secret = EvaluationRunFactory(project=theirs, bot_cost=Decimal("123.45"), unpriced_calls=7)
    EvaluationResultFactory(run=secret, bot_cost=Decimal("123.45"))
    EvaluationRunFactory(project=mine, bot_cost=Decimal("1.5"))
    client = project_key_client(mine)
    runs = client.get("/api/v1/runs").json()
    assert [r["cost"]["bot"] for r in runs] == ["1.500000"]
    assert client.get(f"/api/v1/runs/{secret.run_id}").status_code == 404
    assert "123.45" not in client.get("/api/v1/runs").content.decode()


# --- evalrun -----------------------------------------------------------------------------------


def evalrun(*extra):
    return call_command(
        "evalrun",
        "--agent",
        PLAN_AGENT,
        "--test-set",
        str(PLAN_TEST_SET),
        "--judge-model",
        "heuristic",
        "--poll",
        "0.01",
        "--timeout",
        "30",
        "--wait",
        *extra,
    )


@pytest.mark.django_db(transaction=True)
def test_evalrun_json_has_the_cost_and_max_cost_fails_over_the_bar(llm_bot, tmp_path, capsys):
    llm_bot("gpt-4o")
    report = tmp_path / "run.json"
    with pytest.raises(CommandError, match=r"the run cost \$19.500000, above --max-cost \$10"):
        evalrun("--max-cost", "10", "--json", str(report))
    cost = json.loads(report.read_text())["run"]["cost"]
    assert cost == {"bot": "19.500000", "judge": None, "total": "19.500000", "currency": "USD", "unpriced_calls": 0}
    assert "cost        : $19.500000 (bot $19.500000, judge unpriced)" in capsys.readouterr().out
    evalrun("--max-cost", "20")


@pytest.mark.django_db(transaction=True)
def test_evalrun_max_cost_fails_closed_on_an_unpriced_call(llm_bot):
    llm_bot("my-finetune")
    with pytest.raises(CommandError, match="6 LLM calls are unpriced"):
        evalrun("--max-cost", "1000")
    evalrun("--max-cost", "1000", "--allow-unpriced")


@pytest.mark.django_db(transaction=True)
def test_evalrun_max_cost_refuses_a_negative_amount_and_needs_wait(plan):
    with pytest.raises(CommandError):
        evalrun("--max-cost", "-1")
    with pytest.raises(CommandError, match="add --wait"):
        call_command("evalrun", "--agent", PLAN_AGENT, "--test-set", str(PLAN_TEST_SET), "--max-cost", "1")


def test_the_run_model_keeps_null_totals_null_until_a_priced_call():
    run = EvaluationRunFactory()
    assert EvaluationRun.objects.get(pk=run.pk).cost.total is None


def test_prometheus_counts_priced_spend_by_project_and_kind(client):
    other = ProjectFactory(slug="other")
    EvaluationRunFactory(bot_cost=Decimal("1.25"), judge_cost=Decimal("0.5"))
    EvaluationRunFactory(bot_cost=Decimal("0.75"), unpriced_calls=4)
    EvaluationRunFactory(project=other, judge_cost=Decimal("2"))
    text = client.get("/metrics").content.decode()
    assert sample(text, "evalsite_cost_usd_total", project="default", kind="bot") == 2.0
    assert sample(text, "evalsite_cost_usd_total", project="default", kind="judge") == 0.5
    assert sample(text, "evalsite_cost_usd_total", project="other", kind="judge") == 2.0
    # Nothing priced is no series, not a $0 one.
    assert sample(text, "evalsite_cost_usd_total", project="other", kind="bot") is None


def llm_judged_run(*, rubric=True):
    from tests.runs.factories import PLAN_RUBRIC

    with TestCase.captureOnCommitCallbacks(execute=True):
        run = services.run_create(
            project=Project.objects.default(),
            data=RunCreateIn.of(
                agent_id=PLAN_AGENT,
                test_set_id=PLAN_TEST_SET,
                rubric_id=PLAN_RUBRIC if rubric else None,
                judge_model="judge-model",
            ),
        )
    run.refresh_from_db()
    return run


def test_every_llm_judge_request_of_an_unpriced_model_is_counted(plan, openai_server, settings):
    from tests.fakes.openai_server import judge_reply

    settings.EVALSITE_JUDGE_BATCH = "off"
    openai_server.default = judge_reply()
    run = llm_judged_run()
    assert run.status == "completed" and run.judge_cost is None
    assert run.unpriced_calls == len(openai_server.chat_requests) > 6


def test_a_batched_llm_judge_is_priced_once_per_request(plan, openai_server, settings):
    from tests.fakes.openai_server import judge_reply

    settings.EVALSITE_JUDGE_BATCH = "on"
    openai_server.default = judge_reply()
    ModelPrice.objects.create(
        model="judge-model", valid_from=date(2020, 1, 1), input_per_mtok=Decimal(1), output_per_mtok=Decimal(2)
    )
    run = llm_judged_run()
    # The fake server reports 11 prompt and 7 completion tokens a request: 11 x 1 + 7 x 2 per million.
    assert len(openai_server.chat_requests) == 6
    assert run.judge_cost == 6 * Decimal("0.000025") and run.unpriced_calls == 0
    assert {r.judge_cost for r in run.results.all()} == {Decimal("0.000025")}
