"""heuristic:v1 — a deterministic agentic judge that needs no LLM.

It reads the session the way a reviewer skimming a trace would: does a tool call fit what was
asked (operation and resource, from the detected intent or from the query), are its arguments
taken from the query or from earlier results rather than invented, did failed calls get recovered,
does the final answer carry what the tools returned and what the user asked about, and does it
claim an action no successful call performed. Each metric is a weighted sum of named checks, and
its reasoning lists every check passed and failed, so a score can always be traced to its causes.

It is lexical: it cannot tell a paraphrase from a different answer, so it under-scores fluent
answers that restate results in other words. The LLM judge exists for those.
"""

import re
from dataclasses import dataclass, field
from typing import Any

from apps.core.llm.fingerprint import judge_fingerprint
from apps.core.text import AGENTIC_V1

from .base import AgenticVerdict, JudgeInput, JudgeToolCall, MetricResult

LABEL = "heuristic:v1"
# Pinned: heuristic:v1 verdicts depend on exactly this tokenizer, stop list and stemmer.
TEXT = AGENTIC_V1

OPERATION_WORDS: dict[str, set[str]] = {
    "list": {"list", "show", "display", "enumerate", "all", "find", "search", "which"},
    "get": {"get", "show", "describe", "detail", "what", "fetch", "status", "info", "check", "report", "much", "how"},
    "create": {"create", "make", "provision", "add", "launch", "new", "spin", "deploy", "build"},
    "delete": {"delete", "remove", "destroy", "terminate", "drop", "decommission", "tear"},
    "update": {"update", "modify", "change", "resize", "scale", "set", "rename", "edit", "patch"},
    "start": {"start", "boot", "power", "resume"},
    "stop": {"stop", "shutdown", "halt", "pause", "suspend"},
    "restart": {"restart", "reboot"},
}

RESOURCE_ALIASES: dict[str, set[str]] = {
    "k8s": {"kubernetes", "k8s", "cluster"},
    "kubernetes": {"kubernetes", "k8s", "cluster"},
    "vm": {"vm", "virtual", "machine", "instance", "server"},
    "load": {"load", "balancer", "lb"},
    "balancer": {"load", "balancer", "lb"},
    "lb": {"load", "balancer", "lb"},
    "billing": {"billing", "bill", "cost", "spend", "spent", "invoice", "charge", "price", "expense"},
    "cost": {"billing", "bill", "cost", "spend", "spent", "invoice", "charge", "price", "expense"},
    "db": {"db", "database"},
    "database": {"db", "database"},
    "volume": {"volume", "disk", "storage"},
    "storage": {"volume", "disk", "storage", "bucket"},
}

FAILURE_PHRASES = (
    "could not",
    "couldn't",
    "can't",
    "cannot",
    "unable",
    "failed",
    "error",
    "not able",
    "denied",
    "forbidden",
    "was not",
    "wasn't",
    "did not",
    "didn't",
)

# Only the operations that change something can be falsely claimed as done.
MUTATING = {"create", "delete", "update", "start", "stop", "restart"}


def words(text: str | None) -> set[str]:
    return {TEXT.stem(w) for w in TEXT.words(text or "")}


_STEMMED_ALIASES = {TEXT.stem(key): {TEXT.stem(a) for a in aliases} for key, aliases in RESOURCE_ALIASES.items()}


def _expand(tokens: set[str]) -> set[str]:
    out = set(tokens)
    for token in tokens:
        out |= _STEMMED_ALIASES.get(token, set())
    return out


def _operation_words(operation: str | None) -> set[str]:
    if not operation:
        return set()
    op = operation.lower()
    return {TEXT.stem(w) for w in OPERATION_WORDS.get(op, set()) | {op}}


def _scalars(value: Any, limit: int = 200) -> list[str]:
    """String and number leaves of a JSON value, for grounding and answer checks."""
    out: list[str] = []
    stack = [value]
    while stack and len(out) < limit:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))
        elif isinstance(item, bool) or item is None:
            continue
        elif isinstance(item, (int, float)):
            out.append(str(item))
        elif isinstance(item, str) and item.strip():
            out.append(item.strip())
    return out


def _appears(value: str, text_lower: str, text_words: set[str]) -> bool:
    """A value appears in a text when it is a substring, or every word of it does (stemmed)."""
    value_lower = value.lower()
    if len(value_lower) >= 2 and value_lower in text_lower:
        return True
    value_words = words(value_lower)
    return bool(value_words) and value_words <= text_words


@dataclass
class _Checks:
    passed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    score: float = 0.0

    def check(self, ok: bool | float, weight: float, passed: str, failed: str) -> None:
        fraction = float(ok) if not isinstance(ok, bool) else (1.0 if ok else 0.0)
        self.score += weight * fraction
        if fraction >= 1.0:
            self.passed.append(passed)
        elif fraction <= 0.0:
            self.failed.append(failed)
        else:
            self.failed.append(f"{failed} (partly: {fraction:.0%})")

    def result(self) -> MetricResult:
        parts = []
        if self.passed:
            parts.append("Passed: " + "; ".join(self.passed) + ".")
        if self.failed:
            parts.append("Failed: " + "; ".join(self.failed) + ".")
        return MetricResult.ok(self.score, " ".join(parts))


class _Session:
    """Facts about one session that all three metrics use, computed once."""

    def __init__(self, data: JudgeInput):
        self.data = data
        self.query_lower = data.query.lower()
        self.query_words = words(data.query)
        self.answer = data.final_response or ""
        self.answer_lower = self.answer.lower()
        self.answer_words = words(self.answer)
        self.operation = (data.operation or self._operation_from_query() or "").lower() or None
        self.op_words = _operation_words(self.operation)
        resource_tokens = words((data.resource_type or "").replace("_", " "))
        self.resource_words = _expand(resource_tokens) - {""}
        intent_tokens = words((data.intent or "").replace("_", " "))
        self.intent_words = _expand(intent_tokens)
        self.calls = list(data.tool_calls)
        self.fits = [self._fit(c) for c in self.calls]
        self.grounding = [self._grounded_args(i) for i in range(len(self.calls))]

    def _operation_from_query(self) -> str | None:
        for op, synonyms in OPERATION_WORDS.items():
            if self.query_words & {TEXT.stem(w) for w in synonyms | {op}}:
                return op
        return None

    def _fit(self, call: JudgeToolCall) -> tuple[bool, bool]:
        """(operation matches, resource matches) for a tool name such as list_k8s_clusters."""
        tool_words = _expand(words(call.tool_name.replace("_", " ").replace("-", " ")))
        op_match = bool(tool_words & self.op_words)
        target = self.resource_words or (_expand(self.query_words) - TEXT.stopwords - self.op_words)
        resource_match = bool(tool_words & target)
        return op_match, resource_match

    def _grounded_args(self, index: int) -> tuple[int, int, list[str]]:
        """(grounded, total, ungrounded values) of a call's argument values: grounded when the value
        appears in the query or in the result of an earlier call."""
        earlier = " ".join(" ".join(_scalars(c.tool_result)) for c in self.calls[:index] if c.success).lower()
        earlier_words = words(earlier)
        values = _scalars(self.calls[index].tool_args)
        ungrounded = [
            v
            for v in values
            if not (_appears(v, self.query_lower, self.query_words) or _appears(v, earlier, earlier_words))
        ]
        return len(values) - len(ungrounded), len(values), ungrounded

    def matching_calls(self) -> list[int]:
        return [i for i, (op, res) in enumerate(self.fits) if op and res]

    def relevant(self, index: int) -> bool:
        op, res = self.fits[index]
        grounded, total, _ = self.grounding[index]
        return res or (op and total == 0) or (total > 0 and grounded == total)

    def unrecovered_failures(self) -> list[JudgeToolCall]:
        out = []
        for i, call in enumerate(self.calls):
            if call.success:
                continue
            recovered = any(
                later.success and (later.tool_name == call.tool_name or self.fits[i + 1 + j] == (True, True))
                for j, later in enumerate(self.calls[i + 1 :])
            )
            if not recovered:
                out.append(call)
        return out

    def result_values(self) -> list[str]:
        values: list[str] = []
        for call in self.calls:
            if call.success:
                values.extend(v for v in _scalars(call.tool_result) if not _is_bare_number(v))
        return list(dict.fromkeys(values))[:50]

    def query_entities(self) -> list[str]:
        """Argument values the user named in the query (a datacenter, a VM name)."""
        values = []
        for call in self.calls:
            values.extend(
                v
                for v in _scalars(call.tool_args)
                if not _is_bare_number(v) and _appears(v, self.query_lower, self.query_words)
            )
        return list(dict.fromkeys(values))

    def admits_failure(self) -> bool:
        return any(p in self.answer_lower for p in FAILURE_PHRASES)


def _is_bare_number(value: str) -> bool:
    return bool(re.fullmatch(r"-?\d+(\.\d+)?", value))


class HeuristicAgenticJudge:
    label = LABEL
    fingerprint = judge_fingerprint(judge=LABEL)
    parallel = False

    def evaluate(self, data: JudgeInput) -> AgenticVerdict:
        session = _Session(data)
        return AgenticVerdict(
            judge=LABEL,
            task_adherence=self._task_adherence(session),
            tool_call_accuracy=self._tool_call_accuracy(session),
            intent_resolution=self._intent_resolution(session),
            fingerprint=self.fingerprint,
        )

    def _intent_resolution(self, s: _Session) -> MetricResult:
        if not s.data.query.strip():
            return MetricResult.skipped("No user query to resolve.")
        c = _Checks()
        if s.data.intent or s.data.operation:
            c.check(
                bool(s.op_words & s.query_words),
                0.15,
                f"the operation '{s.operation}' matches the query",
                f"the operation '{s.operation}' is not what the query asks for",
            )
        else:
            c.check(False, 0.15, "", "no intent was detected")
        if s.resource_words:
            c.check(
                bool(s.resource_words & _expand(s.query_words)),
                0.15,
                f"the resource '{s.data.resource_type}' matches the query",
                f"the resource '{s.data.resource_type}' is not mentioned in the query",
            )
        else:
            c.check(False, 0.15, "", "no resource type was detected")
        matching_ok = [i for i in s.matching_calls() if s.calls[i].success]
        if s.operation or s.resource_words:
            c.check(
                bool(matching_ok),
                0.3,
                "a successful tool call carried out the intent",
                "no successful tool call carried out the intent",
            )
        else:
            c.check(False, 0.3, "", "without a detected intent no tool call can be tied to it")
        c.check(bool(s.answer.strip()), 0.15, "the agent gave a final answer", "the agent gave no final answer")
        entities = s.query_entities()
        target = s.resource_words | {w for e in entities for w in words(e)}
        c.check(
            bool(target & s.answer_words) if target else bool(s.answer_words & (s.query_words - TEXT.stopwords)),
            0.15,
            "the answer is about what was asked",
            "the answer does not mention what was asked about",
        )
        if s.data.success is None:
            c.check(
                not s.unrecovered_failures(),
                0.1,
                "no tool call failed without recovery",
                "a tool call failed without recovery",
            )
        else:
            c.check(s.data.success, 0.1, "the agent reported success", "the agent reported failure")
        return c.result()

    def _tool_call_accuracy(self, s: _Session) -> MetricResult:
        if not s.calls:
            if s.data.operation or s.data.intent:
                return MetricResult.ok(
                    0.0, f"Failed: no tool was called although the intent '{s.data.intent or s.operation}' needs one."
                )
            return MetricResult.skipped("No tool calls and no detected intent that would need one.")
        c = _Checks()
        matching = s.matching_calls()
        partial = [i for i, (op, res) in enumerate(s.fits) if op or res]
        best = 1.0 if matching else (0.5 if partial else 0.0)
        names = ", ".join(dict.fromkeys(call.tool_name for call in s.calls))
        c.check(
            best,
            0.35,
            f"a tool fits the operation and resource ({s.calls[matching[0]].tool_name})" if matching else "",
            f"no tool fits both the operation '{s.operation}' and the resource "
            f"'{s.data.resource_type or 'of the query'}' (called: {names})",
        )
        grounded = sum(g for g, _, _ in s.grounding)
        total = sum(t for _, t, _ in s.grounding)
        ungrounded = [v for _, _, vs in s.grounding for v in vs]
        c.check(
            grounded / total if total else 1.0,
            0.25,
            "every argument value comes from the query or an earlier result"
            if total
            else "the calls take no arguments that could be invented",
            f"argument values not found in the query or earlier results: {', '.join(ungrounded[:5])}",
        )
        irrelevant = [s.calls[i].tool_name for i in range(len(s.calls)) if not s.relevant(i)]
        c.check(
            1.0 - len(irrelevant) / len(s.calls),
            0.2,
            "every call is relevant to the request",
            f"calls unrelated to the request: {', '.join(irrelevant)}",
        )
        failures = s.unrecovered_failures()
        c.check(
            1.0 - len(failures) / len(s.calls),
            0.2,
            "no failed call was left unrecovered"
            if not any(not x.success for x in s.calls)
            else "every failed call was recovered by a later successful call",
            f"failed calls not recovered: {', '.join(f.tool_name for f in failures)}",
        )
        return c.result()

    def _task_adherence(self, s: _Session) -> MetricResult:
        if not s.answer.strip():
            return MetricResult.ok(0.0, "Failed: the agent gave no final answer, so the task was not done.")
        c = _Checks()
        entities = s.query_entities()
        resource_hit = bool(s.resource_words & s.answer_words) if s.resource_words else None
        entity_hits = [e for e in entities if _appears(e, s.answer_lower, s.answer_words)]
        parts = [x for x in (resource_hit, len(entity_hits) / len(entities) if entities else None) if x is not None]
        goal = (
            sum(float(x) for x in parts) / len(parts)
            if parts
            else float(bool((s.query_words - TEXT.stopwords - s.op_words) & s.answer_words))
        )
        missing = [e for e in entities if e not in entity_hits]
        c.check(
            goal,
            0.3,
            "the answer addresses the requested resource and names from the query",
            "the answer misses the requested "
            + (f"names ({', '.join(missing)})" if missing else f"resource ({s.data.resource_type or 'topic'})"),
        )
        values = s.result_values()
        if values:
            shown = [v for v in values if _appears(v, s.answer_lower, s.answer_words)]
            c.check(
                len(shown) / len(values),
                0.25,
                "the answer reports what the tools returned",
                "tool results missing from the answer: " + ", ".join(v for v in values if v not in shown)[:200],
            )
        elif s.calls and not any(call.success for call in s.calls):
            c.check(
                s.admits_failure(),
                0.25,
                "the answer reports that the tools failed",
                "every tool call failed but the answer does not say so",
            )
        else:
            c.check(True, 0.25, "no tool results needed reporting", "")
        matching_ok = [i for i in s.matching_calls() if s.calls[i].success]
        c.check(
            bool(matching_ok),
            0.25,
            "a successful tool call backs the answer",
            "no successful tool call that fits the request backs the answer",
        )
        if s.operation in MUTATING and not matching_ok:
            c.check(
                s.admits_failure(),
                0.1,
                "the answer does not claim an action that did not happen",
                f"the answer claims a '{s.operation}' that no successful tool call performed",
            )
        else:
            c.check(True, 0.1, "the answer claims nothing the tool calls contradict", "")
        if s.data.success is not None:
            c.check(s.data.success, 0.1, "the agent completed the task", "the agent reported the task as failed")
        else:
            c.check(
                not s.unrecovered_failures(),
                0.1,
                "no unrecovered tool failure",
                "an unrecovered tool failure left the task incomplete",
            )
        return c.result()
