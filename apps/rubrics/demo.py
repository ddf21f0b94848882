"""The demo bot's rubric for `make run` (the bot is in apps.bots.demo). Idempotent."""

from apps.bots.demo import DEMO_AGENT_ID, HANDBOOK

from . import services
from .models import Rubric
from .schemas import RubricContent

DEMO_RUBRIC_ID = "5b0c2f0e-3d4a-4c52-9a51-0c0000000001"


def _rule(rule_id, name, severity, scope, category, description, passes, fails, component_names=(), reference=""):
    return {"id": rule_id, "name": name, "severity": severity, "component_scope": scope, "category": category,
            "description": description, "prompt_reference": reference,
            "evaluation_criteria": {"pass_conditions": list(passes), "fail_conditions": list(fails)},
            "component_names": list(component_names)}


DEMO_RUBRIC = {
    "agent_id": DEMO_AGENT_ID,
    "name": "O'Connor Internal Ops Associate Rubric",
    "description": "What a good answer from the internal operations associate looks like.",
    "severity_definitions": {
        "high": "Critical violation: wrong policy information, or a failure that leaves the employee stuck.",
        "medium": "Moderate violation: the answer is right but hard to use.",
        "low": "Minor violation: style or polish.",
    },
    "rules": [
        _rule("BRIEF_RESPONSES", "Brief, Focused Responses", "medium", "prompt", "response_quality",
              "Agent should provide concise answers to simple questions.",
              ["Response is under 3 sentences for simple questions"],
              ["Response includes unnecessary preamble or filler"], reference="Section: Communication Style"),
        _rule("GROUNDED_IN_HANDBOOK", "Answers Grounded in the Handbook", "high", "knowledge_base", "accuracy",
              "Policy facts must come from the handbook, never from general knowledge.",
              ["Every policy fact in the answer appears in the handbook"],
              ["The answer states a number or rule the handbook does not contain"], [HANDBOOK]),
        _rule("SEARCH_BEFORE_ANSWERING", "Searches Before Answering", "high", "function", "tool_use",
              "Policy questions are answered after a search_kb call.",
              ["search_kb is called before the policy answer"], ["A policy answer is given without any search"],
              ["Employee Handbook Search"]),
        _rule("HANDOFF_ON_REQUEST", "Hands Off When Asked", "medium", "function", "tool_use",
              "When the employee asks for a person, the agent uses live_handoff.",
              ["live_handoff is called when a person is requested"],
              ["The agent keeps answering after the employee asked for a person"], ["Live Chat Handoff"]),
        _rule("ADMITS_GAPS", "Admits What the Handbook Does Not Cover", "low", "general", "honesty",
              "If nothing relevant is found, the agent says so instead of guessing.",
              ["Says the handbook does not cover the question"], ["Invents an answer"]),
    ],
}


def load_demo_rubric() -> int:
    """Create the demo rubric if it is missing; returns how many were created (0 on a re-run)."""
    if Rubric.objects.filter(pk=DEMO_RUBRIC_ID).exists():
        return 0
    services.rubric_create(content=RubricContent.model_validate(DEMO_RUBRIC), rubric_id=DEMO_RUBRIC_ID,
                           changelog="Demo rubric", author="demo")
    return 1
