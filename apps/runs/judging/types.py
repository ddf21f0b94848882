from dataclasses import dataclass, field

JUDGE_HEURISTIC = "heuristic:v1"


@dataclass
class Verdict:
    """One judged criterion or rule. status: ok (passed/score set), skipped (the judge cannot
    assess it) or error (the judge failed); skipped and error count as not passed."""

    passed: bool | None
    score: float | None
    reasoning: str
    judge: str
    status: str = "ok"
    usage: dict = field(default_factory=dict)

    @classmethod
    def of(cls, *, passed: bool, reasoning: str, judge: str, score: float | None = None, usage: dict | None = None):
        return cls(passed=passed, score=(1.0 if passed else 0.0) if score is None else round(score, 4),
                   reasoning=reasoning, judge=judge, usage=usage or {})

    @classmethod
    def skipped(cls, judge: str, reason: str):
        return cls(passed=None, score=None, reasoning=reason, judge=judge, status="skipped")

    @classmethod
    def error(cls, judge: str, reason: str):
        return cls(passed=None, score=None, reasoning=reason, judge=judge, status="error")

    @property
    def counts_as_passed(self) -> bool:
        return self.status == "ok" and bool(self.passed)

    def _common(self) -> dict:
        return {"passed": self.passed, "score": self.score, "reasoning": self.reasoning, "status": self.status,
                "judge": self.judge, **({"usage": self.usage} if self.usage else {})}

    def as_criterion(self, criterion: str, kind: str = "success_criterion") -> dict:
        return {"criterion": criterion, **self._common(), "kind": kind}

    def as_rule(self, rule: dict) -> dict:
        return {"rule_id": rule["id"], "rule_name": rule.get("name", ""), "severity": rule.get("severity", "medium"),
                **self._common(), "component_scope": rule.get("component_scope")}


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
