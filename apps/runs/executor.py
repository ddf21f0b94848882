"""One test item, start to finish: talk to the bot, judge the transcript, apply the contract's
pass logic. Pure with respect to the database, so the Celery task, the CLI and the tests share it."""

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from apps.bots.adapters import BotError, BotSpec, get_adapter

from .judging import heuristic
from .judging.aggregate import item_outcome, rule_in_scope
from .judging.types import JUDGE_HEURISTIC, Transcript, Verdict
from .simulator import Conversation, ScriptedUser, run_scenario, run_single_turn


@dataclass
class JudgeChoice:
    """Which judge a run uses: the heuristic one, or an LLM client (`openai:<model>`)."""

    client: object | None = None

    @property
    def label(self) -> str:
        return self.client.judge_label if self.client is not None else JUDGE_HEURISTIC


@dataclass
class RunOptions:
    scope_filter: str | None = None
    ids_filter: list[str] | None = None
    judge: JudgeChoice = field(default_factory=JudgeChoice)
    # Called between turns and verdicts, so a long item keeps its heartbeat fresh and sees a cancel.
    heartbeat: Callable[[], None] = lambda: None


@dataclass
class ItemOutcome:
    input: dict
    output: dict
    criteria_scores: list[dict] | None = None
    criteria_passed: bool | None = None
    rubric_scores: list[dict] | None = None
    rubric_passed: bool | None = None
    passed: bool = False
    scores: dict | None = None
    duration_ms: int = 0
    external_trace_id: str | None = None
    error: str | None = None


def _transcript(conversation: Conversation, bot: BotSpec) -> Transcript:
    return Transcript(
        messages=conversation.messages,
        tool_calls=conversation.tool_calls,
        handed_off=any(turn.handoff for turn in conversation.turns),
        bot_tools=[{"tool_name": t.tool_name, "name": t.name, "type": t.type} for t in bot.tools],
    )


def bot_context(bot: BotSpec) -> str:
    tools = "\n".join(f"- {t.tool_name} ({t.type}): {t.description}" for t in bot.tools) or "- none"
    kbs = sorted({d.knowledge_base for d in bot.documents})
    return f"System prompt:\n{bot.system_prompt}\n\nTools:\n{tools}\n\nKnowledge bases: {', '.join(kbs) or 'none'}"


def _simulated_user(item: dict, judge: JudgeChoice):
    inputs = item.get("inputs") or {}
    if judge.client is not None and not inputs.get("scripted_turns"):
        from .simulated_user import LLMUser

        return LLMUser(judge.client, goal=(item.get("expected") or {}).get("expected_outcome", ""))
    return ScriptedUser(inputs.get("scripted_turns"))


def _converse(item: dict, bot: BotSpec, conversation_id: str, judge: JudgeChoice) -> Conversation:
    adapter = get_adapter(bot.adapter)
    inputs = item.get("inputs") or {}
    if item.get("type") == "scenario":
        return run_scenario(adapter=adapter, spec=bot, persona=inputs.get("persona", ""),
                            initial_message=inputs["initial_message"], max_turns=int(inputs.get("max_turns") or 8),
                            user=_simulated_user(item, judge), conversation_id=conversation_id)
    return run_single_turn(adapter=adapter, spec=bot, message=inputs["message"], conversation_id=conversation_id)


def _judge_criteria(item: dict, transcript: Transcript, options: RunOptions) -> list[dict]:
    expected = item.get("expected") or {}
    verdicts = []
    for criterion in expected.get("success_criteria") or []:
        if options.judge.client is not None:
            from .judging import llm

            verdict = llm.judge_criterion(options.judge.client, criterion, transcript,
                                          expected_outcome=expected.get("expected_outcome", ""))
        else:
            verdict = heuristic.judge_criterion(criterion, transcript)
        verdicts.append(verdict.as_criterion(criterion))
        options.heartbeat()
    return verdicts + heuristic.tool_verdicts(expected=expected, transcript=transcript)


def _judge_rules(rules: list[dict], transcript: Transcript, bot: BotSpec, options: RunOptions) -> list[dict]:
    verdicts = []
    context = bot_context(bot)
    for rule in rules:
        if options.judge.client is not None:
            from .judging import llm

            verdict = llm.judge_rule(options.judge.client, rule, transcript, bot_context=context)
        else:
            verdict = heuristic.judge_rule(rule, transcript)
        verdicts.append(verdict.as_rule(rule))
        options.heartbeat()
    return verdicts


def execute_test_item(*, item: dict, bot: BotSpec, rubric: dict | None, options: RunOptions,
                      conversation_id: str) -> ItemOutcome:
    """A V2 test-set item: criteria and (when the run has a rubric) the rules in scope."""
    started = time.perf_counter()
    item_input = dict(item.get("inputs") or {})
    try:
        conversation = _converse(item, bot, conversation_id, options.judge)
    except BotError as exc:
        criteria = [Verdict.error(options.judge.label, f"Not judged: the bot failed ({exc.reason}).").as_criterion(c)
                    for c in (item.get("expected") or {}).get("success_criteria") or []]
        return ItemOutcome(input=item_input, output={"messages": []}, criteria_scores=criteria, criteria_passed=False,
                           rubric_scores=[] if rubric else None, rubric_passed=False if rubric else None,
                           passed=False, duration_ms=int((time.perf_counter() - started) * 1000),
                           error=f"Bot error: {exc.reason}")
    options.heartbeat()
    transcript = _transcript(conversation, bot)
    criteria = _judge_criteria(item, transcript, options)
    rules = None
    if rubric is not None:
        in_scope = [r for r in rubric.get("rules") or []
                    if rule_in_scope(r, scope_filter=options.scope_filter, ids_filter=options.ids_filter)]
        rules = _judge_rules(in_scope, transcript, bot, options)
    criteria_passed, rubric_passed, passed = item_outcome(criteria, rules)
    return ItemOutcome(
        input=item_input,
        output={"messages": conversation.messages, "stopped_because": conversation.stopped_because},
        criteria_scores=criteria, criteria_passed=criteria_passed,
        rubric_scores=rules, rubric_passed=rubric_passed, passed=passed,
        duration_ms=int((time.perf_counter() - started) * 1000),
        external_trace_id=conversation.external_trace_id,
    )


def execute_question(*, question: dict, bot: BotSpec, options: RunOptions, conversation_id: str) -> ItemOutcome:
    """A V1 question-set item: one turn, scored against the expected answer into `scores`."""
    from .judging.answers import judge_answer

    started = time.perf_counter()
    item_input = {"message": question["question"], "expected_answer": question.get("expected_answer", "")}
    try:
        conversation = _converse({"type": "single_turn", "inputs": {"message": question["question"]}}, bot,
                                 conversation_id, options.judge)
    except BotError as exc:
        return ItemOutcome(input=item_input, output={"messages": []}, passed=False,
                           scores={"correctness": {"score": None, "comment": json.dumps({"error": exc.reason})}},
                           duration_ms=int((time.perf_counter() - started) * 1000), error=f"Bot error: {exc.reason}")
    answer = conversation.messages[-1]["content"]
    verdict = judge_answer(options.judge, question=question["question"], answer=answer,
                           expected=question.get("expected_answer", ""))
    comment = {"passed": verdict.passed, "status": verdict.status, "judge": verdict.judge,
               "reasoning": verdict.reasoning}
    return ItemOutcome(
        input=item_input, output={"messages": conversation.messages},
        scores={"correctness": {"score": verdict.score, "comment": json.dumps(comment)}},
        passed=verdict.counts_as_passed, duration_ms=int((time.perf_counter() - started) * 1000),
        external_trace_id=conversation.external_trace_id,
    )
