"""An item's verdicts judged concurrently: the per-item bound holds and is really used, the stored
order stays the criteria's and rubric's, one failed judgement leaves the others, and the heartbeat
(the cancel check) runs in the item's own thread."""

import json
import threading
import time

import pytest

from apps.core.llm.client import get_llm_client
from apps.runs.executor import JudgeChoice, RunOptions, execute_test_item
from apps.runs.judging import llm
from tests.bots.factories import make_bot_spec
from tests.runs.factories import PTO_ITEM

CRITERIA = ["criterion-alpha", "criterion-beta", "criterion-gamma"]
RULES = [
    {
        "id": f"RULE_{n}",
        "name": f"Rule {n}",
        "severity": "medium",
        "component_scope": "prompt",
        "component_ids": [],
        "evaluation_criteria": {"pass_conditions": [f"condition-{n}"], "fail_conditions": []},
    }
    for n in range(4)
]
SUBJECTS = CRITERIA + [r["id"] for r in RULES]  # the order verdicts are asked for and stored in
ITEM = {**PTO_ITEM, "expected": {**PTO_ITEM["expected"], "success_criteria": CRITERIA}}


def _subject(body: dict) -> str:
    text = body["messages"][1]["content"]
    return next(s for s in SUBJECTS if s in text)


def answer_by_subject(server, *, delay, fail: frozenset = frozenset()):
    """Each request answered about the verdict it asks for (its reasoning names it), after
    delay(subject) seconds; subjects in `fail` get a 400 the client does not retry."""

    def reply(body):
        subject = _subject(body)
        time.sleep(delay(subject))
        if subject in fail:
            return 400, {"error": {"message": "bad request", "type": "invalid_request_error"}}, None
        content = json.dumps({"passed": True, "score": 1.0, "reasoning": f"judged {subject}"})
        return (
            200,
            {
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": body.get("model", ""),
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            },
            None,
        )

    for _ in SUBJECTS:
        server.push(reply)


def run_item(**options):
    return execute_test_item(
        item=ITEM,
        bot=make_bot_spec(),
        rubric={"rules": RULES},
        options=RunOptions(judge=JudgeChoice(get_llm_client()), **options),
        conversation_id="c",
    )


def stored_subjects(out) -> list[str]:
    return [c["criterion"] for c in out.criteria_scores][: len(CRITERIA)] + [r["rule_id"] for r in out.rubric_scores]


@pytest.mark.parametrize("limit", [1, 3])
def test_an_items_judge_requests_overlap_up_to_the_per_item_bound_and_never_past_it(openai_server, limit):
    answer_by_subject(openai_server, delay=lambda s: 0.15)
    started = time.perf_counter()
    out = run_item(judge_concurrency=limit)
    elapsed = time.perf_counter() - started
    assert len(openai_server.chat_requests) == len(SUBJECTS) and out.passed
    assert openai_server.peak_in_flight <= limit
    if limit > 1:
        # Really concurrent: more than one request at the judge at once, and the item took about
        # ceil(7 / 3) rounds of 0.15 s rather than 7.
        assert openai_server.peak_in_flight > 1
        assert elapsed < 0.15 * len(SUBJECTS) - 0.2


def test_verdicts_are_stored_in_the_criteria_and_rubric_order_whatever_order_they_finish_in(openai_server):
    # The first asked answers last: finishing order is the reverse of the asking order.
    answer_by_subject(openai_server, delay=lambda s: 0.05 * (len(SUBJECTS) - SUBJECTS.index(s)))
    out = run_item(judge_concurrency=len(SUBJECTS))
    assert stored_subjects(out) == SUBJECTS
    assert [c["reasoning"] for c in out.criteria_scores[: len(CRITERIA)]] == [f"judged {c}" for c in CRITERIA]
    assert [r["reasoning"] for r in out.rubric_scores] == [f"judged {r['id']}" for r in RULES]
    # The heuristic tool verdicts still follow the judged criteria.
    assert [c["criterion"] for c in out.criteria_scores[len(CRITERIA) :]] == [
        "Uses tool search_kb",
        "Does not use tool live_handoff",
    ]


def test_one_failed_judgement_leaves_the_items_other_verdicts(openai_server, monkeypatch):
    answer_by_subject(openai_server, delay=lambda s: 0.02, fail=frozenset({"criterion-beta"}))
    judge_rule = llm.judge_rule

    def faulty_judge_rule(client, rule, transcript, **kwargs):  # a bug, not an LLM error
        if rule["id"] == "RULE_2":
            raise RuntimeError("judge crashed")
        return judge_rule(client, rule, transcript, **kwargs)

    monkeypatch.setattr(llm, "judge_rule", faulty_judge_rule)
    out = run_item(judge_concurrency=4)
    assert stored_subjects(out) == SUBJECTS
    statuses = {c["criterion"]: c["status"] for c in out.criteria_scores} | {
        r["rule_id"]: r["status"] for r in out.rubric_scores
    }
    assert {s for s in SUBJECTS if statuses[s] == "error"} == {"criterion-beta", "RULE_2"}
    assert all(statuses[s] == "ok" for s in SUBJECTS if s not in ("criterion-beta", "RULE_2"))
    crashed = next(r for r in out.rubric_scores if r["rule_id"] == "RULE_2")
    assert crashed["passed"] is None and "RuntimeError: judge crashed" in crashed["reasoning"]
    assert out.error is None and out.passed is False


def test_the_heartbeat_runs_in_the_items_thread_while_verdicts_are_judged(openai_server):
    answer_by_subject(openai_server, delay=lambda s: 0.05)
    threads = []
    run_item(judge_concurrency=3, heartbeat=lambda: threads.append(threading.current_thread()))
    assert len(threads) >= 3 and set(threads) == {threading.current_thread()}


class Cancelled(Exception):
    pass


def test_a_cancel_seen_by_the_heartbeat_stops_the_item_and_drops_verdicts_not_started(openai_server):
    answer_by_subject(openai_server, delay=lambda s: 0.1)
    calls = []

    def heartbeat():
        calls.append(1)
        if len(calls) > 1:  # the first beat follows the bot's turn, the second the first verdict
            raise Cancelled()

    with pytest.raises(Cancelled):
        run_item(judge_concurrency=2, heartbeat=heartbeat)
    # The two under way when the cancel came finished; nothing more was asked.
    assert len(openai_server.chat_requests) < len(SUBJECTS)
    assert openai_server.in_flight == 0
