from dataclasses import dataclass, field, replace

JUDGE_HEURISTIC = "heuristic:v1"

CRITERION = "criterion"
RULE = "rule"
SEVERITY_ORDER = {"high": 0, "medium": 1, "low": 2}


@dataclass(frozen=True)
class Verdict:
    """One judged criterion or rubric rule. status: ok (passed/score set), skipped (the judge cannot
    assess it) or error (the judge failed); skipped and error count as not passed.

    A judge returns a verdict on nothing in particular (`kind` None); `for_criterion` / `for_rule`
    attach it to what it judged. `to_json` and `from_json` are the only code that knows the stored
    shape (EvaluationResult.criteria_scores and rubric_scores, and the API, which returns them as stored).
    """

    passed: bool | None
    score: float | None
    reasoning: str
    judge: str
    status: str = "ok"
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
    def of(cls, *, passed: bool, reasoning: str, judge: str, score: float | None = None, usage: dict | None = None,
           fingerprint: dict | None = None):
        return cls(passed=passed, score=(1.0 if passed else 0.0) if score is None else round(score, 4),
                   reasoning=reasoning, judge=judge, usage=usage or {}, fingerprint=fingerprint)

    @classmethod
    def skipped(cls, judge: str, reason: str):
        return cls(passed=None, score=None, reasoning=reason, judge=judge, status="skipped")

    @classmethod
    def error(cls, judge: str, reason: str, fingerprint: dict | None = None):
        return cls(passed=None, score=None, reasoning=reason, judge=judge, status="error", fingerprint=fingerprint)

    @property
    def counts_as_passed(self) -> bool:
        return self.status == "ok" and bool(self.passed)

    @property
    def assessed(self) -> bool:
        """A rule the judge says it cannot assess is reported, and counted apart, but neither
        passes nor fails anything."""
        return self.status != "skipped"

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
        return replace(self, kind=RULE, key=rule["id"], rule_name=rule.get("name", ""),
                       severity=rule.get("severity", "medium"), component_scope=rule.get("component_scope"),
                       fingerprint=fingerprint)

    def with_fingerprint(self, fingerprint: dict) -> "Verdict":
        """The verdict with `fingerprint`, unless its judge recorded one already (the LLM judge
        knows the model that answered)."""
        return self if self.fingerprint is not None else replace(self, fingerprint=fingerprint)

    def with_review(self, passed: bool) -> "Verdict":
        # A human verdict is a verdict: it is assessed ("ok") even where the judge errored or skipped.
        return replace(self, passed=passed, status="ok")

    def to_json(self) -> dict:
        """The stored shape, key order included (the API returns it as stored)."""
        common = {"passed": self.passed, "score": self.score, "reasoning": self.reasoning, "status": self.status,
                  "judge": self.judge, **({"usage": self.usage} if self.usage else {}),
                  **({"fingerprint": self.fingerprint} if self.fingerprint is not None else {})}
        if self.kind == RULE:
            return {"rule_id": self.key, "rule_name": self.rule_name, "severity": self.severity, **common,
                    "component_scope": self.component_scope}
        if self.kind == CRITERION:
            return {"criterion": self.key, **common, "kind": self.criterion_kind}
        raise ValueError("A verdict is stored only once it is attached to a criterion or a rule.")

    @classmethod
    def from_json(cls, data: dict, *, kind: str | None = None) -> "Verdict":
        """A stored verdict. Rows written before a field existed read as its default: no status is
        ok (skipped and error came later), no judge is "", no usage is {}, no fingerprint is None.
        `kind` defaults to what the dict names (a rule_id makes a rule)."""
        kind = kind or (RULE if "rule_id" in data else CRITERION)
        common = {"passed": data.get("passed"), "score": data.get("score"), "reasoning": data.get("reasoning", ""),
                  "judge": data.get("judge", ""), "status": data.get("status", "ok"), "usage": data.get("usage") or {},
                  "kind": kind, "fingerprint": data.get("fingerprint")}
        if kind == RULE:
            return cls(**common, key=data.get("rule_id", ""), rule_name=data.get("rule_name", ""),
                       severity=data.get("severity"), component_scope=data.get("component_scope"))
        return cls(**common, key=data.get("criterion", ""), criterion_kind=data.get("kind"))

    @classmethod
    def list_from_json(cls, data: list[dict] | None, *, kind: str) -> list["Verdict"]:
        """A stored column (criteria_scores or rubric_scores); None, for a result without one, is []."""
        return [cls.from_json(item, kind=kind) for item in data or []]


def verdicts_to_json(verdicts: list[Verdict] | None) -> list[dict] | None:
    return None if verdicts is None else [v.to_json() for v in verdicts]


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
        search_names = {t["tool_name"] for t in self.bot_tools
                        if t.get("type") in {"knowledge_base", "kb_search", "search"} or "search" in t["tool_name"]}
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
                lines.append(f"  TOOL CALL {call['name']}({call.get('arguments')}) -> "
                             f"{'ok' if call.get('success', True) else 'FAILED'}: {str(call.get('result'))[:500]}")
        return "\n".join(lines)
