"""One test item, start to finish: talk to the bot, judge the transcript, apply the contract's
pass logic. Pure with respect to the database, so the Celery task, the CLI and the tests share it."""

import json
import logging
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

from django.conf import settings

from apps.bots.adapters import BotError, BotSpec, get_adapter
from apps.core.errors import InvalidInputError
from apps.core.llm.client import get_llm_client
from apps.core.llm.fingerprint import judge_fingerprint

from .judging import heuristic, llm, llm_batch
from .judging.aggregate import item_outcome, rule_in_scope
from .judging.answers import judge_answer
from .judging.types import JUDGE_HEURISTIC, Transcript, Verdict, verdicts_to_json
from .simulated_user import LLMUser
from .simulator import Conversation, ScriptedUser, run_scenario, run_single_turn

logger = logging.getLogger(__name__)


@dataclass
class JudgeChoice:
    """Which judge a run uses: the heuristic one, or an LLM client (`openai:<model>`)."""

    client: object | None = None

    @property
    def label(self) -> str:
        return self.client.judge_label if self.client is not None else JUDGE_HEURISTIC

    @staticmethod
    def model_of(label: str) -> str | None:
        """The LLM model a judge label names (`openai:<model>`), None for the heuristic judge; the
        only parser of the labels that runs and verdicts store."""
        if label == JUDGE_HEURISTIC:
            return None
        provider, _, model = label.partition(":")
        if provider != "openai" or not model:
            raise InvalidInputError(f"Unknown judge {label!r}: expected {JUDGE_HEURISTIC!r} or 'openai:<model>'")
        return model

    @classmethod
    def from_label(cls, label: str) -> "JudgeChoice":
        """The judge a stored label names, rebuilt (in the worker that runs the run's items)."""
        model = cls.model_of(label)
        return cls() if model is None else cls(client=get_llm_client(model=model))


@dataclass
class RunOptions:
    scope_filter: str | None = None
    ids_filter: list[str] | None = None
    judge: JudgeChoice = field(default_factory=JudgeChoice)
    # The rubric version the rules come from, recorded in each rule verdict's fingerprint.
    rubric_version: int | None = None
    # Called between turns and verdicts, so a long item keeps its heartbeat fresh and sees a cancel.
    # Always from the item's own thread: it may touch the database and raise to stop the item.
    heartbeat: Callable[[], None] = lambda: None
    # How many of one item's verdicts are judged at once. The run engine holds at most `concurrency`
    # items in flight, so a run never has more than concurrency x judge_concurrency judge requests open.
    judge_concurrency: int = 1
    # How an LLM judge asks for an item's verdicts (EVALSITE_JUDGE_BATCH): "off", one request per
    # verdict; "on", one request per item for all of them; "auto", one per item while the judge's
    # server takes structured output (json_schema), else one per verdict.
    judge_batch: str = field(default_factory=lambda: settings.EVALSITE_JUDGE_BATCH)
    # Rules judged otherwise than by `judge` (apps.rubrics.models.RuleJudge, as the run recorded them):
    # {rule_id: {"judge_model", "instructions"}}. Such a rule is always asked on its own, never batched.
    rule_judges: dict[str, dict] = field(default_factory=dict)

    @property
    def batched(self) -> bool:
        client = self.judge.client
        if client is None or self.judge_batch == "off":
            return False  # the heuristic judge makes no requests to batch
        return self.judge_batch == "on" or client.takes_json_schema


@dataclass
class ItemOutcome:
    input: dict
    output: dict
    # Verdicts in their stored shape (Verdict.to_json), as the result row keeps them.
    criteria_scores: list[dict] | None = None
    criteria_passed: bool | None = None
    rubric_scores: list[dict] | None = None
    rubric_passed: bool | None = None
    passed: bool = False
    scores: dict | None = None
    duration_ms: int = 0
    external_trace_id: str | None = None
    error: str | None = None
    # What the item's LLM calls cost is priced from (apps.runs.costs): each bot turn's usage, and a
    # V1 question's verdict (its usage is not in the stored `scores`).
    bot_usage: list[dict] = field(default_factory=list)
    question_verdict: Verdict | None = None


def _transcript(conversation: Conversation, bot: BotSpec) -> Transcript:
    return Transcript(
        messages=conversation.messages,
        tool_calls=conversation.tool_calls,
        handed_off=any(turn.handoff for turn in conversation.turns),
        bot_tools=[{"tool_name": t.tool_name, "name": t.name, "type": t.type} for t in bot.tools],
    )


def _context(prompt: str, tools: list[tuple[str, str, str]], kbs: set[str]) -> str:
    listed = "\n".join(f"- {name} ({kind}): {description}" for name, kind, description in tools) or "- none"
    return f"System prompt:\n{prompt}\n\nTools:\n{listed}\n\nKnowledge bases: {', '.join(sorted(kbs)) or 'none'}"


def bot_context(bot: BotSpec) -> str:
    """What a rule's judge reads of the bot."""
    tools = [(t.tool_name, t.type, t.description) for t in bot.tools]
    return _context(bot.system_prompt, tools, {d.knowledge_base for d in bot.documents})


def snapshot_context(snapshot: dict) -> str:
    """bot_context from what a run recorded of its bot (bot_config_snapshot), so a stored transcript
    is judged again against the bot as it was, not as it is now."""
    tools = [(t["tool_name"], t.get("type", ""), t.get("description", "")) for t in snapshot.get("tools") or []]
    kbs = {d["knowledge_base"] for d in snapshot.get("documents") or []}
    return _context(snapshot.get("system_prompt", ""), tools, kbs)


def stored_transcript(output: dict | None, snapshot: dict) -> Transcript:
    """The transcript a result stored (its output's messages, tool calls inside the assistant turns),
    for judging it again. A handoff is known only where it ended the conversation (stopped_because):
    a single turn's handoff flag is not stored."""
    messages = (output or {}).get("messages") or []
    assistant = [m for m in messages if m.get("role") == "assistant"]
    return Transcript(
        messages=messages,
        tool_calls=[
            {**call, "turn": n} for n, m in enumerate(assistant, start=1) for call in m.get("tool_calls") or []
        ],
        handed_off=(output or {}).get("stopped_because") == "handoff",
        bot_tools=[
            {"tool_name": t["tool_name"], "name": t.get("name", ""), "type": t.get("type", "")}
            for t in snapshot.get("tools") or []
        ],
    )


def _simulated_user(item: dict, judge: JudgeChoice):
    inputs = item.get("inputs") or {}
    if judge.client is not None and not inputs.get("scripted_turns"):
        return LLMUser(judge.client, goal=(item.get("expected") or {}).get("expected_outcome", ""))
    return ScriptedUser(inputs.get("scripted_turns"))


def _converse(item: dict, bot: BotSpec, conversation_id: str, judge: JudgeChoice) -> Conversation:
    adapter = get_adapter(bot.adapter)
    inputs = item.get("inputs") or {}
    if item.get("type") == "scenario":
        return run_scenario(
            adapter=adapter,
            spec=bot,
            persona=inputs.get("persona", ""),
            initial_message=inputs["initial_message"],
            max_turns=int(inputs.get("max_turns") or 8),
            user=_simulated_user(item, judge),
            conversation_id=conversation_id,
        )
    return run_single_turn(adapter=adapter, spec=bot, message=inputs["message"], conversation_id=conversation_id)


HEURISTIC_FINGERPRINT = judge_fingerprint(judge=JUDGE_HEURISTIC)


def judge_one_criterion(
    criterion: str, transcript: Transcript, judge: JudgeChoice, *, expected_outcome: str = ""
) -> Verdict:
    """One success criterion's verdict from `judge`, attached to the criterion."""
    if judge.client is not None:
        verdict = llm.judge_criterion(judge.client, criterion, transcript, expected_outcome=expected_outcome)
    else:
        verdict = heuristic.judge_criterion(criterion, transcript)
    return verdict.with_fingerprint(HEURISTIC_FINGERPRINT).for_criterion(criterion)


def _criterion_job(criterion: str, transcript: Transcript, expected: dict, judge: JudgeChoice) -> Callable[[], Verdict]:
    def job() -> Verdict:
        return judge_one_criterion(criterion, transcript, judge, expected_outcome=expected.get("expected_outcome", ""))

    return job


def rule_judge(judge: JudgeChoice, override: dict | None) -> tuple[JudgeChoice, str | None]:
    """The judge and instructions of one rule: the run's judge unless the rule has its own model
    (RuleJudge.judge_model: "heuristic" or an LLM model), and its own instructions where its judge is
    an LLM (the heuristic judge reads no prompt)."""
    model = (override or {}).get("judge_model")
    if model:
        judge = JudgeChoice() if model in ("heuristic", JUDGE_HEURISTIC) else JudgeChoice(get_llm_client(model=model))
    instructions = (override or {}).get("instructions") if judge.client is not None else None
    return judge, instructions or None


def judge_one_rule(
    rule: dict,
    transcript: Transcript,
    context: str,
    judge: JudgeChoice,
    rubric_version: int | None,
    *,
    instructions: str | None = None,
) -> Verdict:
    """One rule's verdict from `judge` (with `instructions` for an LLM judge), attached to the rule."""
    if judge.client is not None:
        verdict = llm.judge_rule(judge.client, rule, transcript, bot_context=context, instructions=instructions)
    else:
        verdict = heuristic.judge_rule(rule, transcript)
    return verdict.with_fingerprint(HEURISTIC_FINGERPRINT).for_rule(rule, rubric_version)


def _rule_job(rule: dict, transcript: Transcript, context: str, options: RunOptions) -> Callable[[], Verdict]:
    def job() -> Verdict:
        judge, instructions = rule_judge(options.judge, options.rule_judges.get(rule["id"]))
        return judge_one_rule(rule, transcript, context, judge, options.rubric_version, instructions=instructions)

    return job


def _guarded(
    job: Callable[[], Verdict], subject: Callable[[Verdict], Verdict], judge: JudgeChoice
) -> Callable[[], Verdict]:
    """The job, answering an error verdict for its own subject when it raises: a fault in one
    judgement must not take the item's other verdicts with it."""

    def run() -> Verdict:
        try:
            return job()
        except Exception as exc:
            logger.exception("a verdict could not be judged")
            return subject(Verdict.error(judge.label, f"Judge error: {type(exc).__name__}: {exc}"))

    return run


def _judge_all(
    jobs: list[tuple[Callable[[], Verdict], Callable[[Verdict], Verdict]]], options: RunOptions
) -> list[Verdict]:
    """Run independent verdict jobs, at most options.judge_concurrency at once, and return their
    verdicts in the jobs' order (the rubric's and criteria's order, as stored). The heartbeat runs in
    this thread after every verdict, so a cancel stops the item here: jobs not started are dropped,
    the ones under way finish (a judge call cannot be interrupted) and are discarded."""
    guarded = [_guarded(job, subject, options.judge) for job, subject in jobs]
    # The heuristic judge only computes: threads would add overhead and no overlap (the GIL).
    workers = min(options.judge_concurrency, len(guarded)) if options.judge.client is not None else 1
    if workers <= 1:
        verdicts = []
        for job in guarded:
            verdicts.append(job())
            options.heartbeat()
        return verdicts
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="judge")
    try:
        futures = [pool.submit(job) for job in guarded]
        pending = set(futures)
        while pending:
            pending = wait(pending, return_when=FIRST_COMPLETED).not_done
            options.heartbeat()
        return [future.result() for future in futures]
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _judge_batched(
    jobs: list[tuple[Callable[[], Verdict], Callable[[Verdict], Verdict]]],
    options: RunOptions,
    *,
    criteria: list[str],
    rules: list[dict],
    transcript: Transcript,
    expected: dict,
    context: str,
) -> list[Verdict]:
    """The item's LLM verdicts (`jobs`: criteria, then rules) from one batched request. Subjects
    its answer gave no usable verdict for are judged by their own job, as in per-verdict mode, so
    they carry the per-verdict fingerprint; a failed request leaves every verdict an error."""
    if not jobs:
        return []
    # A rule with its own judge (RuleJudge) is asked by its own job: the batch is the run judge's.
    batched = [rule for rule in rules if rule["id"] not in options.rule_judges]
    try:
        answers = (
            []
            if not (criteria or batched)
            else llm_batch.judge_item(
                options.judge.client,
                criteria=criteria,
                rules=batched,
                transcript=transcript,
                expected_outcome=expected.get("expected_outcome", ""),
                bot_context=context,
            )
        )
    except Exception as exc:  # a bug, not an LLM error: the item's verdicts say so, the item goes on
        logger.exception("the batched judgement could not be made")
        error = Verdict.error(options.judge.label, f"Judge error: {type(exc).__name__}: {exc}")
        answers = [error] * (len(criteria) + len(batched))
    by_rule = dict(zip([rule["id"] for rule in batched], answers[len(criteria) :], strict=True))
    answered = answers[: len(criteria)] + [by_rule.get(rule["id"]) for rule in rules]
    options.heartbeat()
    retried = iter(_judge_all([job for job, verdict in zip(jobs, answered, strict=True) if verdict is None], options))
    return [
        subject(verdict) if verdict is not None else next(retried)
        for verdict, (_job, subject) in zip(answered, jobs, strict=True)
    ]


def execute_test_item(
    *, item: dict, bot: BotSpec, rubric: dict | None, options: RunOptions, conversation_id: str
) -> ItemOutcome:
    """A V2 test-set item: criteria and (when the run has a rubric) the rules in scope."""
    started = time.perf_counter()
    item_input = dict(item.get("inputs") or {})
    try:
        conversation = _converse(item, bot, conversation_id, options.judge)
    except BotError as exc:
        not_judged = Verdict.error(options.judge.label, f"Not judged: the bot failed ({exc.reason}).")
        criteria = [not_judged.for_criterion(c) for c in (item.get("expected") or {}).get("success_criteria") or []]
        return ItemOutcome(
            input=item_input,
            output={"messages": []},
            criteria_scores=verdicts_to_json(criteria),
            criteria_passed=False,
            rubric_scores=[] if rubric else None,
            rubric_passed=False if rubric else None,
            passed=False,
            duration_ms=int((time.perf_counter() - started) * 1000),
            error=f"Bot error: {exc.reason}",
        )
    options.heartbeat()
    transcript = _transcript(conversation, bot)
    expected = item.get("expected") or {}
    success_criteria = expected.get("success_criteria") or []
    in_scope = [
        r
        for r in (rubric or {}).get("rules") or []
        if rule_in_scope(r, scope_filter=options.scope_filter, ids_filter=options.ids_filter)
    ]
    context = bot_context(bot)
    # Criteria and rules in one pool, so an item's judge calls overlap across both lists.
    jobs = [
        (_criterion_job(c, transcript, expected, options.judge), lambda v, c=c: v.for_criterion(c))
        for c in success_criteria
    ] + [
        (_rule_job(r, transcript, context, options), lambda v, r=r: v.for_rule(r, options.rubric_version))
        for r in in_scope
    ]
    verdicts = (
        _judge_batched(
            jobs,
            options,
            criteria=success_criteria,
            rules=in_scope,
            transcript=transcript,
            expected=expected,
            context=context,
        )
        if options.batched
        else _judge_all(jobs, options)
    )
    tool_checks = heuristic.tool_verdicts(expected=expected, transcript=transcript)
    criteria = verdicts[: len(success_criteria)] + [
        v.with_fingerprint({**HEURISTIC_FINGERPRINT, "criterion": v.key}) for v in tool_checks
    ]
    rules = verdicts[len(success_criteria) :] if rubric is not None else None
    criteria_passed, rubric_passed, passed, _ = item_outcome(criteria, rules)
    return ItemOutcome(
        input=item_input,
        output={"messages": conversation.messages, "stopped_because": conversation.stopped_because},
        criteria_scores=verdicts_to_json(criteria),
        criteria_passed=criteria_passed,
        rubric_scores=verdicts_to_json(rules),
        rubric_passed=rubric_passed,
        passed=passed,
        duration_ms=int((time.perf_counter() - started) * 1000),
        external_trace_id=conversation.external_trace_id,
        bot_usage=_bot_usage(conversation),
    )


def _bot_usage(conversation: Conversation) -> list[dict]:
    return [dict(turn.usage) for turn in conversation.turns if turn.usage]


def execute_question(*, question: dict, bot: BotSpec, options: RunOptions, conversation_id: str) -> ItemOutcome:
    """A V1 question-set item: one turn, scored against the expected answer into `scores`."""
    started = time.perf_counter()
    item_input = {"message": question["question"], "expected_answer": question.get("expected_answer", "")}
    try:
        conversation = _converse(
            {"type": "single_turn", "inputs": {"message": question["question"]}}, bot, conversation_id, options.judge
        )
    except BotError as exc:
        return ItemOutcome(
            input=item_input,
            output={"messages": []},
            passed=False,
            scores={"correctness": {"score": None, "comment": json.dumps({"error": exc.reason})}},
            duration_ms=int((time.perf_counter() - started) * 1000),
            error=f"Bot error: {exc.reason}",
        )
    answer = conversation.messages[-1]["content"]
    verdict = judge_answer(
        options.judge, question=question["question"], answer=answer, expected=question.get("expected_answer", "")
    )
    comment = {
        "passed": verdict.passed,
        "status": verdict.status,
        "judge": verdict.judge,
        "reasoning": verdict.reasoning,
    }
    return ItemOutcome(
        input=item_input,
        output={"messages": conversation.messages},
        scores={"correctness": {"score": verdict.score, "comment": json.dumps(comment)}},
        passed=verdict.counts_as_passed,
        duration_ms=int((time.perf_counter() - started) * 1000),
        external_trace_id=conversation.external_trace_id,
        bot_usage=_bot_usage(conversation),
        question_verdict=verdict,
    )
