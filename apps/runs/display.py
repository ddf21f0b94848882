"""How a run's results read on a page: the bot's final answer and conversation, the test item as the
result page shows it, and the words for what failed an item or left it unassessed. Pure functions
of a result's stored values (its output, item and verdicts), shared by the console, the exports
and the comparison; reads stay in selectors."""

from .judging.types import CRITERION, RULE, SEVERITY_ORDER, Verdict
from .models import EvaluationResult
from .reviews import apply_reviews


def final_answer(output: dict | None) -> str | None:
    """The bot's last reply in a result's output: what a reviewer reads as its answer. None when it
    never replied (the result page tells that apart from an empty reply)."""
    messages = (output or {}).get("messages") or []
    return next((m.get("content") or "" for m in reversed(messages) if m.get("role") == "assistant"), None)


def conversation_turns(output: dict | None) -> list[dict]:
    """The user and assistant messages of a result's output, as {"role", "content"} (tool calls left out)."""
    return [
        {"role": m.get("role"), "content": m.get("content") or ""}
        for m in (output or {}).get("messages") or []
        if m.get("role") in ("user", "assistant") and m.get("content")
    ]


def user_turns(output: dict | None) -> list[str]:
    """What the user said in a result's output, in order (conversation_turns' user messages)."""
    return [m["content"] for m in conversation_turns(output) if m["role"] == "user"]


def result_item_view(*, result: EvaluationResult) -> dict:
    """The test item (or V1 question) the result answered, as the result page shows it: what the bot
    was asked and what was expected of it, from the copy the run took when it was created."""
    item = result.item or {}
    if result.item_type == "question":
        return {
            "type": "question",
            "message": item.get("question") or (result.input or {}).get("message", ""),
            "expected_answer": item.get("expected_answer") or "",
            "tags": [],
            "priority": "",
            "expected": {},
        }
    inputs = item.get("inputs") or result.input or {}
    expected = item.get("expected") or {}
    return {
        "type": item.get("type") or result.item_type,
        "message": inputs.get("message") or "",
        "persona": inputs.get("persona") or "",
        "initial_message": inputs.get("initial_message") or "",
        "max_turns": inputs.get("max_turns"),
        "scripted_turns": inputs.get("scripted_turns") or [],
        "expected": {
            "success_criteria": expected.get("success_criteria") or [],
            "should_use_tools": expected.get("should_use_tools") or [],
            "should_not_use_tools": expected.get("should_not_use_tools") or [],
            "expected_outcome": expected.get("expected_outcome") or "",
        },
        "expected_answer": "",
        "tags": item.get("tags") or [],
        "priority": item.get("priority") or "",
    }


def failures_and_warnings(criteria: list[Verdict], rules: list[Verdict]) -> tuple[list[tuple], list[tuple]]:
    """(failures, warnings), each a list of (anchor on the result page, words): failures are what
    fail the item by the contract (a criterion not passed, a high-severity rule failed), warnings the
    failed medium and low rules, which do not. Most severe first."""
    failed_rules = sorted(
        (r for r in rules if r.failed), key=lambda r: SEVERITY_ORDER.get(r.severity, len(SEVERITY_ORDER))
    )
    failures = [(f"rule-{r.key}", f"{r.key} ({r.severity})") for r in failed_rules if r.severity == "high"]
    failures += [(f"criterion-{n}", c.key) for n, c in enumerate(criteria) if c.failed]
    warnings = [(f"rule-{r.key}", f"{r.key} ({r.severity})") for r in failed_rules if r.severity != "high"]
    return failures, warnings


def reviewed_failures(
    criteria: list[dict] | None, rules: list[dict] | None, latest: dict
) -> tuple[list[tuple], list[tuple]]:
    """failures_and_warnings of the stored columns once the reviews in force are applied: a verdict
    a reviewer passed no longer fails the item, one a reviewer failed does."""
    return failures_and_warnings(
        apply_reviews(Verdict.list_from_json(criteria, kind=CRITERION), latest),
        apply_reviews(Verdict.list_from_json(rules, kind=RULE), latest),
    )


def first_failure(criteria: list[dict] | None, rules: list[dict] | None) -> tuple[str, str]:
    """(anchor on the result page, words) of the verdict to look at first: what failed the item (a
    high-severity rule, then a criterion), else a lesser failed rule; empty when nothing failed.
    Takes the stored columns (criteria_scores, rubric_scores)."""
    failures, warnings = failures_and_warnings(
        Verdict.list_from_json(criteria, kind=CRITERION), Verdict.list_from_json(rules, kind=RULE)
    )
    return (failures + warnings)[0] if failures or warnings else ("", "")


REASON_CHARS = 120


def unassessed_reasons(criteria: list[dict] | None, rules: list[dict] | None) -> list[tuple[str, str]]:
    """Why an item is unassessed, as (anchor on the result page, words): the verdicts the judge did
    not give (skipped or errored) that decide the item — criteria, then high-severity rules — each
    with the judge's reason; any other rule not given when none of those is. Stored columns."""

    def words(verdict: Verdict, label: str) -> str:
        status = "errored" if verdict.status == "error" else verdict.status
        reason = " ".join((verdict.reasoning or "").split())[:REASON_CHARS]
        return f"{label} {status}" + (f": {reason}" if reason else "")

    not_given = [
        (f"criterion-{n}", words(c, f"criterion “{c.key}”"))
        for n, c in enumerate(Verdict.list_from_json(criteria, kind=CRITERION))
        if c.status != "ok"
    ]
    rules_not_given = [r for r in Verdict.list_from_json(rules, kind=RULE) if r.status != "ok"]
    high = [r for r in rules_not_given if r.severity == "high"]
    not_given += [
        (f"rule-{r.key}", words(r, f"rule {r.key} ({r.severity or 'no severity'})"))
        for r in (high if high or not_given else rules_not_given)
    ]
    return not_given
