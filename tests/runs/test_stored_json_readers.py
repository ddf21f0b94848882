"""Readers of a run's stored results survive any JSON value already stored: a bot's answer may
carry tool arguments with ints past 64 bits (jsonb keeps them, Python reads them back as ints) or
deep nesting. The results API, the console's run and result pages, its CSV and JSONL exports and
the admin all answer."""

import csv
import io
import json

import pytest

from apps.runs.models import EvaluationResult
from tests.runs.factories import EvaluationResultFactory, EvaluationRunFactory
from tests.stored_json import STORED

pytestmark = pytest.mark.django_db


@pytest.fixture(params=STORED.values(), ids=STORED.keys())
def stored(request):
    value = request.param
    run = EvaluationRunFactory()
    result = EvaluationResultFactory(run=run, position=0)
    output = {
        "messages": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": "done",
                "tool_calls": [{"name": "t", "arguments": value, "result": value, "success": True}],
            },
        ],
        "tool_calls": [{"name": "t", "arguments": value, "result": value, "success": True}],
    }
    EvaluationResult.objects.filter(pk=result.pk).update(output=output, input={"message": "hi", "odd": value})
    return run, result, value


def _body(response) -> str:
    return (b"".join(response.streaming_content) if response.streaming else response.content).decode()


def test_results_api(api, stored):
    run, result, _ = stored
    for url in (
        f"/api/v1/runs/{run.run_id}/results",
        f"/api/v1/results/{result.result_id}",
        f"/api/v1/runs/{run.run_id}",
    ):
        response = api.get(url)
        assert response.status_code == 200, (url, response.content[:300])
        json.loads(_body(response))


def test_console_pages_and_exports(admin_client, stored):
    run, result, _ = stored
    for url in (f"/console/runs/{run.run_id}/", f"/console/results/{result.result_id}/"):
        assert admin_client.get(url).status_code == 200, url
    exported = admin_client.get(f"/console/runs/{run.run_id}/export.csv")
    assert exported.status_code == 200
    assert [row["answer"] for row in csv.DictReader(io.StringIO(_body(exported)))] == ["done"]
    exported = admin_client.get(f"/console/runs/{run.run_id}/export.jsonl")
    assert exported.status_code == 200
    assert [json.loads(line)["answer"] for line in _body(exported).splitlines()] == ["done"]


def test_admin_pages(admin_client, stored):
    run, result, _ = stored
    for url in (
        "/admin/runs/evaluationresult/",
        f"/admin/runs/evaluationresult/{result.pk}/change/",
        f"/admin/runs/evaluationrun/{run.pk}/change/",
    ):
        assert admin_client.get(url).status_code == 200, url


@pytest.mark.parametrize("value", STORED.values(), ids=STORED.keys())
def test_run_judges_read_such_a_transcript(openai_server, value):
    """What the run's judges are given (a transcript from the stored answer) with the same values:
    every judge's prompt is built and a verdict comes back."""
    from apps.core.llm.client import get_llm_client
    from apps.runs.judging import heuristic, llm, llm_batch
    from apps.runs.judging.types import Transcript
    from tests.runs.factories import RUBRIC_SNAPSHOT

    call = {"name": "search_kb", "arguments": value, "result": value, "success": True}
    transcript = Transcript(
        messages=[
            {"role": "user", "content": "PTO?"},
            {"role": "assistant", "content": "1.5 days.", "tool_calls": [call]},
        ],
        tool_calls=[call],
    )
    rule = RUBRIC_SNAPSHOT["rules"][0]
    assert heuristic.judge_criterion("States the accrual rate", transcript).status
    assert heuristic.judge_rule(rule, transcript).status
    openai_server.push_json({"passed": True, "score": 0.9, "reasoning": "ok"})
    openai_server.push_json({"passed": True, "score": 0.9, "reasoning": "ok"})
    assert llm.judge_criterion(get_llm_client(), "States the accrual rate", transcript).status == "ok"
    assert llm.judge_rule(get_llm_client(), rule, transcript, bot_context="").status == "ok"
    openai_server.push_json({"criteria": [], "rules": []})
    verdicts = llm_batch.judge_item(
        get_llm_client(), criteria=["States the accrual rate"], rules=[], transcript=transcript
    )
    assert len(verdicts) == 1
    assert "TOOL CALL search_kb" in openai_server.chat_requests[0]["messages"][1]["content"]
