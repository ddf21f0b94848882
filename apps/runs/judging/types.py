import json
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from apps.scores.vocabulary import JudgeStatus, Reason, ScoreKind, ScoreSource, SubjectKind

if TYPE_CHECKING:
    # The judges are plain logic that runs without Django set up (bench/judge_coverage.py): the
    # model is imported only where a verdict becomes a row.
    from apps.scores.models import Score

JUDGE_HEURISTIC = "heuristic:v1"
# How the heuristic judge begins the reasoning of a verdict it skips because only an LLM could give
# it; such a Score carries Reason.NEEDS_LLM_JUDGE.
NEEDS_LLM = "needs an LLM judge"

CRITERION = ScoreKind.CRITERION.value
RULE = ScoreKind.RULE.value
CORRECTNESS = ScoreKind.CORRECTNESS.value
SEVERITY_ORDER = {"high": 0, "medium": 1, "low": 2}


@dataclass(frozen=True)
class Verdict:
    """One judged criterion or rubric rule. status: ok (passed/score set), skipped (the judge cannot
    assess it) or error (the judge failed); skipped and error count as not passed.

    A judge returns a verdict on nothing in particular (`kind` None); `for_criterion` / `for_rule`
    attach it to what it judged. `to_json` and `from_json` are the only code that knows the stored
    shape the API answers (criteria_scores and rubric_scores); `to_score` and `from_score` the only code
    that knows how a verdict is stored (a Score row of subject kind run_result).
    """

    passed: bool | None
    score: float | None
    reasoning: str
    judge: str
    status: str = JudgeStatus.OK.value
    usage: dict = field(default_factory=dict)
    kind: str | None = None  # CRITERION or RULE, as VerdictReview.Kind names them
    # The criterion's text, or the rule's id: what a review names the verdict by.
    key: str = ""
    # Criteria only: success_criterion, should_use_tools or should_not_use_tools (stored as "kind").
    criterion_kind: str | None = None
    # Rules only.
    rule_name: str = ""
    severity: str | None = None
    component_scope: str | None = None
    # What judged it (apps.core.llm.fingerprint, plus the criterion's text or the rule's rubric
    # version); None on verdicts stored before fingerprints existed.
    fingerprint: dict | None = None

    @classmethod
    def of(
        cls,
        *,
        passed: bool,
        reasoning: str,
        judge: str,
        score: float | None = None,
        usage: dict | None = None,
        fingerprint: dict | None = None,
    ):
        return cls(
            passed=passed,
            score=(1.0 if passed else 0.0) if score is None else round(score, 4),
            reasoning=reasoning,
            judge=judge,
            usage=usage or {},
            fingerprint=fingerprint,
        )

    @classmethod
    def skipped(cls, judge: str, reason: str):
        return cls(passed=None, score=None, reasoning=reason, judge=judge, status=JudgeStatus.SKIPPED.value)

    @classmethod
    def error(cls, judge: str, reason: str, fingerprint: dict | None = None):
        return cls(
            passed=None,
            score=None,
            reasoning=reason,
            judge=judge,
            status=JudgeStatus.ERROR.value,
            fingerprint=fingerprint,
        )

    @property
    def counts_as_passed(self) -> bool:
        return self.status == JudgeStatus.OK and bool(self.passed)

    @property
    def assessed(self) -> bool:
        """A rule the judge says it cannot assess is reported, and counted apart, but neither
        passes nor fails anything."""
        return self.status != JudgeStatus.SKIPPED

    @property
    def failed(self) -> bool:
        """As the pass logic counts it: a criterion or rule the judge skipped neither passes nor fails
        (it leaves the item unassessed); one it errored on counts as failed."""
        if not self.assessed:
            return False
        return not self.counts_as_passed

    def for_criterion(self, criterion: str, kind: str = "success_criterion") -> "Verdict":
        fingerprint = {**self.fingerprint, "criterion": criterion} if self.fingerprint is not None else None
        return replace(self, kind=CRITERION, key=criterion, criterion_kind=kind, fingerprint=fingerprint)

    def for_rule(self, rule: dict, rubric_version: int | None = None) -> "Verdict":
        fingerprint = {**self.fingerprint, "rubric_version": rubric_version} if self.fingerprint is not None else None
        return replace(
            self,
            kind=RULE,
            key=rule["id"],
            rule_name=rule.get("name", ""),
            severity=rule.get("severity", "medium"),
            component_scope=rule.get("component_scope"),
            fingerprint=fingerprint,
        )

    def with_fingerprint(self, fingerprint: dict) -> "Verdict":
        """The verdict with `fingerprint`, unless its judge recorded one already (the LLM judge
        knows the model that answered)."""
        return self if self.fingerprint is not None else replace(self, fingerprint=fingerprint)

    def with_review(self, passed: bool) -> "Verdict":
        # A human verdict is a verdict: it is assessed ("ok") even where the judge errored or skipped.
        return replace(self, passed=passed, status=JudgeStatus.OK.value)

    def kept(self) -> dict:
        """The verdict as an alignment trial or an anchor check keeps it beside the one it is set
        against (stored_assessed reads it back as pass/fail): not a Score row, so never in force."""
        return {
            "status": self.status,
            "passed": self.passed,
            "reasoning": self.reasoning[:2000],
            "judge": self.judge,
            "fingerprint": self.fingerprint,
        }

    def to_json(self) -> dict:
        """The stored shape, key order included (the API returns it as stored)."""
        common = {
            "passed": self.passed,
            "score": self.score,
            "reasoning": self.reasoning,
            "status": self.status,
            "judge": self.judge,
            **({"usage": self.usage} if self.usage else {}),
            **({"fingerprint": self.fingerprint} if self.fingerprint is not None else {}),
        }
        if self.kind == RULE:
            return {
                "rule_id": self.key,
                "rule_name": self.rule_name,
                "severity": self.severity,
                **common,
                "component_scope": self.component_scope,
            }
        if self.kind == CRITERION:
            return {"criterion": self.key, **common, "kind": self.criterion_kind}
        raise ValueError("A verdict is stored only once it is attached to a criterion or a rule.")

    @classmethod
    def from_json(cls, data: dict, *, kind: str | None = None) -> "Verdict":
        """A stored verdict. Rows written before a field existed read as its default: no status is
        ok (skipped and error came later), no judge is "", no usage is {}, no fingerprint is None.
        `kind` defaults to what the dict names (a rule_id makes a rule)."""
        kind = kind or (RULE if "rule_id" in data else CRITERION)
        common = {
            "passed": data.get("passed"),
            "score": data.get("score"),
            "reasoning": data.get("reasoning", ""),
            "judge": data.get("judge", ""),
            "status": data.get("status", JudgeStatus.OK.value),
            "usage": data.get("usage") or {},
            "kind": kind,
            "fingerprint": data.get("fingerprint"),
        }
        if kind == RULE:
            return cls(
                **common,
                key=data.get("rule_id", ""),
                rule_name=data.get("rule_name", ""),
                severity=data.get("severity"),
                component_scope=data.get("component_scope"),
            )
        return cls(**common, key=data.get("criterion", ""), criterion_kind=data.get("kind"))

    @classmethod
    def bare(
        cls,
        *,
        kind: str,
        key: str,
        status: str,
        passed: bool | None,
        score: float | None = None,
        criterion_kind: str | None = None,
        rule_name: str = "",
        severity: str | None = None,
        component_scope: str | None = None,
    ) -> "Verdict":
        """A verdict as counted and tabled: what it judged and how it came out, without the judge's
        reasoning, usage or fingerprint (the digest's groups, a results table's rows)."""
        return cls(
            passed=passed,
            score=score,
            reasoning="",
            judge="",
            status=status,
            kind=kind,
            key=key,
            criterion_kind=criterion_kind,
            rule_name=rule_name,
            severity=severity,
            component_scope=component_scope,
        )

    @classmethod
    def list_from_json(cls, data: list[dict] | None, *, kind: str) -> list["Verdict"]:
        """A stored column (criteria_scores or rubric_scores); None, for a result without one, is []."""
        return [cls.from_json(item, kind=kind) for item in data or []]

    def to_score(self, *, result_pk: int, run_pk: int, attempt: int, position: int) -> "Score":
        """The verdict as the row that stores it (unsaved): criteria keyed by their text with their kind
        in `detail`, rules by their id with severity, scope and name. A verdict with no severity or
        scope stores "" (the columns are not null) and reads back as None."""
        if self.kind not in (CRITERION, RULE):
            raise ValueError("A verdict is stored only once it is attached to a criterion or a rule.")
        rule = self.kind == RULE
        from apps.scores.models import Score

        return Score(
            subject_kind=SubjectKind.RUN_RESULT,
            subject_id=result_pk,
            parent_id=run_pk,
            attempt=attempt,
            kind=self.kind,
            key=self.key,
            position=position,
            source=judge_source(self.judge),
            status=self.status,
            reason=skip_reason(self.status, self.reasoning),
            passed=self.passed,
            value=self.score,
            reasoning=self.reasoning or "",
            judge=self.judge or "",
            fingerprint=self.fingerprint,
            usage=self.usage or None,
            severity=(self.severity or "") if rule else "",
            scope=(self.component_scope or "") if rule else "",
            detail={"rule_name": self.rule_name} if rule else {"kind": self.criterion_kind},
        )

    @classmethod
    def from_score(cls, score: "Score") -> "Verdict":
        """The verdict a stored row holds (to_score's inverse)."""
        detail = score.detail or {}
        common = {
            "passed": score.passed,
            "score": score.value,
            "reasoning": score.reasoning,
            "judge": score.judge,
            "status": score.status,
            "usage": score.usage or {},
            "kind": score.kind,
            "key": score.key,
            "fingerprint": score.fingerprint,
        }
        if score.kind == RULE:
            return cls(
                **common,
                rule_name=detail.get("rule_name", ""),
                severity=score.severity or None,
                component_scope=score.scope or None,
            )
        return cls(**common, criterion_kind=detail.get("kind"))


def judge_source(judge: str) -> str:
    """Who gave a verdict: an LLM judge (its label is `openai:<model>`) or code (the heuristic judge)."""
    return ScoreSource.LLM if (judge or "").startswith("openai:") else ScoreSource.CODE


def skip_reason(status: str, reasoning: str) -> str:
    return Reason.NEEDS_LLM_JUDGE if status == JudgeStatus.SKIPPED and (reasoning or "").startswith(NEEDS_LLM) else ""


def stored_assessed(verdict: dict) -> bool | None:
    """A verdict kept as {"status", "passed"} (an alignment trial's, an anchor check's) as pass/fail;
    None where the judge did not assess it (error, skipped)."""
    return verdict["passed"] if verdict["status"] == JudgeStatus.OK and verdict["passed"] is not None else None


def verdicts_to_json(verdicts: list[Verdict] | None) -> list[dict] | None:
    return None if verdicts is None else [v.to_json() for v in verdicts]


def correctness_to_score(scores: dict | None, *, result_pk: int, run_pk: int, attempt: int) -> "Score | None":
    """A V1 result's `scores` ({"correctness": {"score", "comment"}}, the comment a JSON string of the
    judge's passed, status, judge and reasoning, or of the bot's error) as its row; None for none."""
    entry = (scores or {}).get("correctness")
    if entry is None:
        return None
    comment = entry.get("comment")
    try:
        parsed = json.loads(comment) if isinstance(comment, str) else None
    except ValueError:
        parsed = None
    parsed = parsed if isinstance(parsed, dict) else {}
    from apps.scores.models import Score

    row = Score(
        subject_kind=SubjectKind.RUN_RESULT,
        subject_id=result_pk,
        parent_id=run_pk,
        attempt=attempt,
        kind=CORRECTNESS,
        key=CORRECTNESS,
        value=entry.get("score"),
    )
    if "error" in parsed:  # the bot failed: nothing was judged
        row.status, row.source, row.detail = JudgeStatus.ERROR, ScoreSource.CODE, {"error": parsed["error"]}
    else:
        row.status = parsed.get("status") or JudgeStatus.OK
        row.passed, row.judge, row.reasoning = (
            parsed.get("passed"),
            parsed.get("judge") or "",
            parsed.get("reasoning") or "",
        )
        row.source, row.reason = judge_source(row.judge), skip_reason(row.status, row.reasoning)
    # What the stored comment was, where the fields above do not rebuild it exactly (rows older than
    # the comment's present shape): the API answers it as it was.
    if correctness_from_score(row)["correctness"]["comment"] != comment:
        row.detail = {**(row.detail or {}), "comment": comment}
    return row


def correctness_from_score(score: "Score") -> dict:
    """The V1 `scores` dict a correctness row stands for (correctness_to_score's inverse)."""
    detail = score.detail or {}
    if "comment" in detail:
        comment = detail["comment"]
    elif "error" in detail:
        comment = json.dumps({"error": detail["error"]})
    else:
        comment = json.dumps(
            {"passed": score.passed, "status": score.status, "judge": score.judge, "reasoning": score.reasoning}
        )
    return {"correctness": {"score": score.value, "comment": comment}}


@dataclass
class Transcript:
    """What judges see: the conversation and the tool log, plus the bot's tool names."""

    messages: list[dict]
    tool_calls: list[dict]
    handed_off: bool = False
    bot_tools: list[dict] = field(default_factory=list)

    @property
    def assistant_replies(self) -> list[str]:
        return [m["content"] for m in self.messages if m["role"] == "assistant"]

    @property
    def assistant_text(self) -> str:
        return "\n".join(self.assistant_replies)

    def tools_used(self) -> list[str]:
        return [c["name"] for c in self.tool_calls]

    def search_calls(self) -> list[dict]:
        search_names = {
            t["tool_name"]
            for t in self.bot_tools
            if t.get("type") in {"knowledge_base", "kb_search", "search"} or "search" in t["tool_name"]
        }
        return [c for c in self.tool_calls if c["name"] in search_names or "search" in c["name"]]

    def tool_names_in(self, text: str) -> list[str]:
        """Bot tools a criterion or condition names, by tool_name or display name."""
        lowered = text.lower()
        names = []
        for tool in self.bot_tools:
            display = (tool.get("name") or "").lower()
            if tool["tool_name"].lower() in lowered or (display and display in lowered):
                names.append(tool["tool_name"])
        return names

    def as_text(self) -> str:
        lines = []
        for m in self.messages:
            lines.append(f"{m['role'].upper()}: {m['content']}")
            for call in m.get("tool_calls") or []:
                lines.append(
                    f"  TOOL CALL {call['name']}({call.get('arguments')}) -> "
                    f"{'ok' if call.get('success', True) else 'FAILED'}: {str(call.get('result'))[:500]}"
                )
        return "\n".join(lines)
