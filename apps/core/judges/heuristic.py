"""heuristic:v1 — a deterministic agentic judge that needs no LLM.

It scores by checks a reviewer would make first, each reported in the reasoning as passed or failed:
the tools called against the query, the detected intent, the operation and the resource type; tool
arguments against the query (and earlier tool results); the tool results against the final answer
(the names a tool returned should appear in it); failed tool calls, unless a later call recovered.
Each metric is the weighted share of its checks that passed. It reads words, not meaning: a
paraphrase it does not know fails a check an LLM judge would pass, which is why the label says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .base import JudgeInput, JudgeToolCall, Judgement, MetricVerdict

LABEL = "heuristic:v1"

# Words that express each operation, in queries, intents, tool names and answers.
OPERATION_WORDS: dict[str, set[str]] = {
    "list": {"list", "show", "all", "find", "display", "enumerate", "which", "what", "get", "view", "search"},
    "get": {"get", "show", "describe", "detail", "details", "status", "what", "fetch", "read", "info", "view",
            "check", "report", "spend", "cost"},
    "create": {"create", "add", "new", "provision", "make", "launch", "deploy", "spin", "build", "allocate"},
    "delete": {"delete", "remove", "destroy", "terminate", "drop", "decommission", "purge"},
    "update": {"update", "modify", "change", "resize", "scale", "set", "edit", "rename", "patch", "upgrade"},
    "start": {"start", "boot", "power", "resume", "enable"},
    "stop": {"stop", "shutdown", "halt", "pause", "disable", "suspend"},
    "restart": {"restart", "reboot", "reset", "cycle"},
}
# Words in an answer that claim an operation was carried out.
DONE_WORDS: dict[str, set[str]] = {
    "create": {"created", "provisioned", "provisioning", "launched", "deployed", "added", "built"},
    "delete": {"deleted", "removed", "destroyed", "terminated", "dropped"},
    "update": {"updated", "modified", "changed", "resized", "scaled", "renamed", "upgraded"},
    "start": {"started", "booted", "resumed"},
    "stop": {"stopped", "halted", "paused"},
    "restart": {"restarted", "rebooted"},
}
FAILURE_WORDS = {"could", "couldn", "cannot", "can't", "unable", "failed", "fail", "error", "not", "denied",
                 "forbidden", "sorry", "unfortunately", "permission", "need", "requires"}
ALIASES: dict[str, set[str]] = {
    "k8s": {"kubernetes", "k8s"},
    "kubernetes": {"kubernetes", "k8s"},
    "vm": {"vm", "virtual", "machine", "instance", "server"},
    "lb": {"lb", "load", "balancer"},
    "db": {"db", "database"},
    "cost": {"cost", "spend", "spent", "billing", "bill", "invoice"},
    "billing": {"billing", "cost", "spend", "spent", "bill", "invoice"},
}
STOPWORDS = {"the", "a", "an", "in", "on", "of", "for", "to", "and", "or", "with", "my", "our", "me", "is", "are",
             "be", "please", "can", "you", "i", "we", "it", "its", "that", "this", "at", "by", "from", "named",
             "called", "as", "do", "does", "did", "there", "any", "some", "last", "their", "them", "they", "how"}
# Keys whose values name what a tool returned; when a result has none, any short string is used.
NAME_KEYS = {"name", "id", "title", "hostname", "display_name", "identifier", "slug", "key"}
MAX_RESULT_VALUES = 50
_WORD = re.compile(r"[a-z0-9]+(?:[-.][a-z0-9]+)*")


def _singular(word: str) -> str:
    if len(word) > 3 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def words(text: str | None) -> set[str]:
    """Lower-case words and their singulars; identifiers split on _ too (list_k8s_clusters)."""
    if not text:
        return set()
    found: set[str] = set()
    for token in _WORD.findall(str(text).lower().replace("_", " ")):
        found.add(token)
        found.add(_singular(token))
        for part in re.split(r"[-.]", token):
            if part:
                found.add(part)
                found.add(_singular(part))
    return found


def _expand(tokens: set[str]) -> set[str]:
    expanded = set(tokens)
    for token in tokens:
        expanded |= ALIASES.get(token, set())
    return expanded


def _resource_words(resource_type: str | None) -> set[str]:
    return _expand(words(resource_type)) - STOPWORDS


def _operation_words(operation: str | None) -> set[str]:
    if not operation:
        return set()
    op = operation.lower().strip()
    return OPERATION_WORDS.get(op, {op}) | {op}


def _scalars(value: Any, depth: int = 0):
    """Leaf values of a JSON value (keys excluded)."""
    if depth > 8:
        return
    if isinstance(value, dict):
        for item in value.values():
            yield from _scalars(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            yield from _scalars(item, depth + 1)
    elif value is not None and not isinstance(value, bool):
        yield value


def result_names(result: Any) -> list[str]:
    """What a tool returned that an answer should mention: values of name-like keys, else short strings."""
    named: list[str] = []

    def walk(value, depth=0):
        if depth > 8 or len(named) >= MAX_RESULT_VALUES:
            return
        if isinstance(value, dict):
            for key, item in value.items():
                key_l = str(key).lower()
                if isinstance(item, (str, int)) and not isinstance(item, bool) and (
                        key_l in NAME_KEYS or key_l.endswith("_name") or key_l.endswith("_id")):
                    named.append(str(item))
                else:
                    walk(item, depth + 1)
        elif isinstance(value, list):
            for item in value:
                walk(item, depth + 1)

    walk(result)
    if not named:
        named = [str(v) for v in _scalars(result) if isinstance(v, str) and 2 <= len(v) <= 64][:MAX_RESULT_VALUES]
    seen: dict[str, None] = {}
    for name in named:
        if name.strip():
            seen.setdefault(name.strip(), None)
    return list(seen)


def _mentioned(value: str, text_lower: str, text_words: set[str]) -> bool:
    value_l = value.lower().strip()
    if not value_l:
        return False
    if value_l in text_lower:
        return True
    value_words = words(value_l) - STOPWORDS
    return bool(value_words) and value_words <= text_words


def _number_mentioned(value: float, text: str) -> bool:
    for raw in re.findall(r"\d+(?:\.\d+)?", text):
        if float(raw) == float(value):
            return True
    return False


@dataclass
class Checks:
    """Weighted checks for one metric; the score is the weighted share that passed."""

    passed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    earned: float = 0.0
    possible: float = 0.0

    def check(self, ok: bool, weight: float, passed: str, failed: str, partial: float | None = None) -> None:
        """Record a check; `partial` (0..1) gives a share of the weight instead of all or nothing."""
        self.possible += weight
        share = partial if partial is not None else (1.0 if ok else 0.0)
        self.earned += weight * share
        (self.passed if ok else self.failed).append(passed if ok else failed)

    def verdict(self) -> MetricVerdict:
        if self.possible == 0:
            raise ValueError("no checks were made")
        parts = []
        if self.passed:
            parts.append("Passed: " + "; ".join(self.passed) + ".")
        if self.failed:
            parts.append("Failed: " + "; ".join(self.failed) + ".")
        return MetricVerdict.ok(self.earned / self.possible, " ".join(parts))


@dataclass
class _Context:
    item: JudgeInput
    query_words: set[str]
    query_lower: str
    response: str
    response_lower: str
    response_words: set[str]
    op_words: set[str]
    resource_words: set[str]
    intent_words: set[str]
    unrecovered_failures: list[JudgeToolCall]

    @classmethod
    def build(cls, item: JudgeInput) -> _Context:
        response = item.final_response or ""
        return cls(
            item=item,
            query_words=_expand(words(item.query)),
            query_lower=item.query.lower(),
            response=response,
            response_lower=response.lower(),
            response_words=_expand(words(response)),
            op_words=_operation_words(item.operation),
            resource_words=_resource_words(item.resource_type),
            intent_words=_expand(words(item.intent)) - STOPWORDS,
            unrecovered_failures=_unrecovered_failures(item.tool_calls),
        )

    def call_matches(self, call: JudgeToolCall) -> tuple[bool, bool]:
        """(matches the operation, matches the resource type or intent) by the tool's name."""
        name_words = _expand(words(call.tool_name))
        op_match = bool(self.op_words and name_words & self.op_words)
        target = self.resource_words or (self.intent_words - self.op_words)
        resource_match = bool(target and name_words & target)
        return op_match, resource_match

    def relevant_result_names(self) -> list[str]:
        """Names returned by successful calls that serve the request: results of an unrelated tool are
        not evidence that the request was answered."""
        names = []
        for call in self.item.tool_calls:
            if not call.success:
                continue
            op, res = self.call_matches(call)
            if op or res or not (self.op_words or self.resource_words):
                names += result_names(call.tool_result)
        return names

    def mentions_resource(self) -> bool:
        return bool(self.resource_words & self.response_words)

    def acknowledges_failure(self) -> bool:
        return bool(words(self.response) & FAILURE_WORDS)


def _unrecovered_failures(calls: tuple[JudgeToolCall, ...]) -> list[JudgeToolCall]:
    """Failed calls with no later successful call of the same tool."""
    failures = []
    for i, call in enumerate(calls):
        if call.success:
            continue
        if not any(later.success and later.tool_name == call.tool_name for later in calls[i + 1:]):
            failures.append(call)
    return failures


def _grounded_arguments(ctx: _Context, index: int) -> tuple[int, int, list[str]]:
    """(grounded, total, ungrounded values) of a call's scalar arguments: each should come from the
    query or from what an earlier tool returned."""
    call = ctx.item.tool_calls[index]
    earlier_text = " ".join(
        " ".join(str(v) for v in _scalars(c.tool_result)) for c in ctx.item.tool_calls[:index]
    ).lower()
    earlier_words = words(earlier_text)
    grounded, total, missing = 0, 0, []
    for value in _scalars(call.tool_args):
        total += 1
        if isinstance(value, (int, float)):
            ok = _number_mentioned(value, ctx.item.query) or _number_mentioned(value, earlier_text)
        else:
            text = str(value)
            ok = _mentioned(text, ctx.query_lower, ctx.query_words) or _mentioned(text, earlier_text, earlier_words)
        if ok:
            grounded += 1
        else:
            missing.append(f"{value!r}")
    return grounded, total, missing


class HeuristicAgenticJudge:
    label = LABEL

    def judge(self, item: JudgeInput) -> Judgement:
        ctx = _Context.build(item)
        return Judgement(
            judge=self.label,
            task_adherence=self._task_adherence(ctx),
            tool_call_accuracy=self._tool_call_accuracy(ctx),
            intent_resolution=self._intent_resolution(ctx),
            usage=None,
        )

    # --- tool call accuracy ---------------------------------------------------------------

    def _tool_call_accuracy(self, ctx: _Context) -> MetricVerdict:
        calls = ctx.item.tool_calls
        if not calls:
            if ctx.op_words or ctx.resource_words:
                return MetricVerdict.ok(0.0, f"Failed: no tool was called, though the {ctx.item.operation or 'requested'} "
                                             f"operation on {ctx.item.resource_type or 'the resource'} needs one.")
            return MetricVerdict.skipped("No tool calls, and no operation or resource type that would need one.")
        checks = Checks()
        matches = [ctx.call_matches(call) for call in calls]
        primary = [c.tool_name for c, (op, res) in zip(calls, matches) if op and res]
        if ctx.op_words or ctx.resource_words:
            wanted = " and ".join(
                part for part in (f"operation '{ctx.item.operation}'" if ctx.op_words else "",
                                  f"resource '{ctx.item.resource_type}'" if ctx.resource_words else "") if part)
            half = [c.tool_name for c, (op, res) in zip(calls, matches) if op or res]
            checks.check(bool(primary), 0.35, f"a tool matching {wanted} was called ({', '.join(primary)})",
                         f"no tool matches {wanted}" + (f" (closest: {', '.join(half)})" if half else ""),
                         partial=None if primary else (0.4 if half else 0.0))
        relevant = []
        irrelevant = []
        for index, (call, (op, res)) in enumerate(zip(calls, matches)):
            grounded, total, _missing = _grounded_arguments(ctx, index)
            tool_words = _expand(words(call.tool_name)) - STOPWORDS
            in_query = bool(tool_words & ctx.query_words)
            # A helper call (check_quota before create_vm) is relevant when its arguments come from the query.
            if op or res or in_query or (total and grounded == total):
                relevant.append(call.tool_name)
            else:
                irrelevant.append(call.tool_name)
        checks.check(not irrelevant, 0.2, f"every call relates to the request ({', '.join(relevant)})",
                     f"calls unrelated to the request: {', '.join(irrelevant)}",
                     partial=len(relevant) / len(calls))
        grounded_total, args_total, ungrounded = 0, 0, []
        for index, call in enumerate(calls):
            grounded, total, missing = _grounded_arguments(ctx, index)
            grounded_total += grounded
            args_total += total
            ungrounded += [f"{call.tool_name}.{m}" for m in missing]
        if args_total:
            checks.check(not ungrounded, 0.25, f"all {args_total} argument values appear in the query or earlier results",
                         f"argument values not found in the query or earlier results: {', '.join(ungrounded[:8])}",
                         partial=grounded_total / args_total)
        failed_calls = [c for c in calls if not c.success]
        if failed_calls:
            recovered = len(failed_calls) - len(ctx.unrecovered_failures)
            checks.check(not ctx.unrecovered_failures, 0.2,
                         f"{len(failed_calls)} failed call(s), all retried successfully",
                         "failed calls not recovered: " + ", ".join(
                             f"{c.tool_name} ({(c.error or 'no error message')[:80]})" for c in ctx.unrecovered_failures),
                         partial=recovered / len(failed_calls))
        else:
            checks.check(True, 0.2, "every tool call succeeded", "")
        duplicates = len(calls) - len({(c.tool_name, repr(sorted(c.tool_args.items(), key=str))) for c in calls})
        failed_retries = sum(1 for c in calls if not c.success)
        if duplicates > failed_retries:
            checks.check(False, 0.1, "", f"{duplicates} repeated identical call(s)", partial=0.0)
        return checks.verdict()

    # --- intent resolution ----------------------------------------------------------------

    def _intent_resolution(self, ctx: _Context) -> MetricVerdict:
        item = ctx.item
        checks = Checks()
        # Recognised: the detected intent fits the query.
        checks.check(bool(item.intent), 0.1, f"an intent was detected ({item.intent})", "no intent was detected")
        if ctx.op_words:
            checks.check(bool(ctx.op_words & ctx.query_words), 0.125,
                         f"operation '{item.operation}' fits the query",
                         f"operation '{item.operation}' is not what the query asks for")
        if ctx.resource_words:
            checks.check(bool(ctx.resource_words & ctx.query_words), 0.125,
                         f"resource type '{item.resource_type}' is named in the query",
                         f"resource type '{item.resource_type}' does not appear in the query")
        # Resolved: the answer delivers what was asked.
        if not ctx.response.strip():
            checks.check(False, 0.65, "", "there is no final answer, so the intent was not resolved")
            return checks.verdict()
        content = ctx.query_words - STOPWORDS - ctx.op_words
        covered = content & ctx.response_words
        checks.check(len(covered) >= max(1, len(content) // 2), 0.2,
                     f"the answer addresses the query's subject ({', '.join(sorted(covered)[:6])})",
                     "the answer barely mentions the query's subject"
                     + (f" (missing: {', '.join(sorted(content - covered)[:6])})" if content else ""),
                     partial=(len(covered) / len(content)) if content else 0.0)
        if ctx.resource_words:
            checks.check(ctx.mentions_resource(), 0.15, f"the answer is about the requested {item.resource_type}",
                         f"the answer does not mention the requested {item.resource_type}")
        names = ctx.relevant_result_names()
        if names:
            shown = [n for n in names if _mentioned(n, ctx.response_lower, ctx.response_words)]
            checks.check(len(shown) == len(names), 0.25, f"the answer reports what the tools returned ({len(names)} item(s))",
                         f"the answer leaves out {len(names) - len(shown)} of {len(names)} returned item(s)",
                         partial=len(shown) / len(names))
        if ctx.unrecovered_failures or item.success is False:
            checks.check(False, 0.2, "", "the requested action did not succeed"
                         + (" (the answer says so)" if ctx.acknowledges_failure() else ""),
                         partial=0.25 if ctx.acknowledges_failure() else 0.0)
        else:
            checks.check(True, 0.2, "no failure stands between the user and the result", "")
        return checks.verdict()

    # --- task adherence -------------------------------------------------------------------

    def _task_adherence(self, ctx: _Context) -> MetricVerdict:
        item = ctx.item
        checks = Checks()
        if not ctx.response.strip():
            return MetricVerdict.ok(0.0, "Failed: the agent gave no final answer.")
        checks.check(True, 0.1, "a final answer was given", "")
        # Claimed actions must be backed by successful tool calls (the tool calls are the source of truth).
        # A state a tool returned ("stopped") is a report, not a claim that the agent stopped something.
        result_words = set()
        for call in item.tool_calls:
            result_words |= words(" ".join(str(v) for v in _scalars(call.tool_result)))
        claimed = [op for op, done in DONE_WORDS.items() if done & (ctx.response_words - result_words)]
        successful_words = set()
        for call in item.tool_calls:
            if call.success:
                successful_words |= _expand(words(call.tool_name))
        unbacked = [op for op in claimed
                    if not (OPERATION_WORDS.get(op, {op}) & successful_words)
                    and not ctx.acknowledges_failure()]
        if claimed:
            checks.check(not unbacked, 0.3, f"claimed actions ({', '.join(claimed)}) are backed by successful tool calls",
                         f"the answer claims {', '.join(unbacked)} but no successful tool call did that")
        if ctx.resource_words:
            checks.check(ctx.mentions_resource(), 0.15, f"the answer addresses the requested {item.resource_type}",
                         f"the answer is not about the requested {item.resource_type}")
        # Results are reported faithfully.
        names = ctx.relevant_result_names()
        if names:
            shown = [n for n in names if _mentioned(n, ctx.response_lower, ctx.response_words)]
            checks.check(len(shown) == len(names), 0.25, "the answer reflects the tool results",
                         f"returned items missing from the answer: {', '.join(n for n in names if n not in shown)[:200]}",
                         partial=len(shown) / len(names))
            lists = [c.tool_result for c in item.tool_calls if c.success and isinstance(c.tool_result, list)]
            counts = {len(result) for result in lists}
            stated = {int(n) for n in re.findall(r"\b(\d+)\s+(?:[a-z-]+\s+)?[a-z]+s\b", ctx.response_lower)}
            if lists and stated:
                checks.check(bool(stated & counts), 0.1, "the counts in the answer match the results",
                             f"the answer states {sorted(stated)} but the tools returned {sorted(counts)}")
        elif item.tool_calls and any(c.success for c in item.tool_calls):
            checks.check(False, 0.25, "", "the answer rests on tool results unrelated to the request")
        elif item.tool_calls:
            checks.check(ctx.acknowledges_failure(), 0.25, "the answer reports that the tool calls failed",
                         "every tool call failed but the answer does not say so")
        # The answer sticks to the query's constraints (places, names, quantities it gave).
        constraints = {w for w in words(item.query) - STOPWORDS - ctx.op_words - ctx.resource_words
                       if len(w) > 2 or w.isdigit()}
        if constraints:
            kept = constraints & ctx.response_words
            checks.check(len(kept) >= len(constraints) / 2, 0.2,
                         f"the answer keeps to the query's terms ({', '.join(sorted(kept)[:6])})",
                         f"the answer drops the query's terms ({', '.join(sorted(constraints - kept)[:6])})",
                         partial=len(kept) / len(constraints))
        if ctx.unrecovered_failures or item.success is False:
            checks.check(False, 0.3, "", "the requested task was not carried out")
        if ctx.unrecovered_failures:
            checks.check(ctx.acknowledges_failure(), 0.15, "the answer is honest about the failed step",
                         "a tool call failed but the answer does not acknowledge it")
        return checks.verdict()
