"""Demo data for `make run`: the O'Connor internal operations bot (built-in demo adapter) with its
handbook, and a changed version of it (a second bot, "v2 candidate") that the demo runs compare it
with. Its rubric, test set and question set are in apps.rubrics.demo and apps.testsets.demo;
apps.runs.demo loads them and runs both bots. Loaded through the services; idempotent."""

import copy

from apps.core.models import Project

from . import services
from .models import Bot
from .schemas import BotIn

DEMO_AGENT_ID = "64f1c0ffee0000000000d001"
DEMO_CHANGED_AGENT_ID = "64f1c0ffee0000000000d002"
HANDBOOK = "O'Connor Employee Handbook"

PTO_POLICY = """Full-time employees accrue paid time off (PTO) at 1.25 days per month, which is 15 days per year. After five years of continuous service the accrual rate rises to 1.67 days per month, or 20 days per year. Part-time employees accrue PTO in proportion to their scheduled hours.

PTO requests must be submitted in the HR portal at least two weeks in advance for absences of three days or more. Shorter absences need only your manager's approval in the portal before the day off. Requests during the December close period are approved only in exceptional cases.

Up to 5 unused PTO days carry over into the next calendar year; any balance above 5 days is forfeited on January 1. Unused PTO is not paid out, except where state law requires a payout on separation.

Sick leave is separate from PTO: every employee receives 6 paid sick days per year, which do not carry over. Sick days of more than three consecutive days require a doctor's note sent to hr@oconnor-insurance.example."""

EXPENSE_POLICY = """Business expenses are reimbursed when they are necessary, reasonable and approved in advance by your manager. Submit every expense report in Expensify within 30 days of the expense, with an itemised receipt for any amount over $25.

Travel must be booked through the company travel portal. Economy class is the standard for flights under six hours; business class needs written approval from a vice president. Hotel stays are reimbursed up to $250 per night in major cities and $175 elsewhere.

The daily meal allowance while travelling is $75, covering breakfast, lunch and dinner. Alcohol is not reimbursed except at client entertainment events approved in advance by a director.

Mileage for using a personal car on company business is reimbursed at the current IRS standard rate. Parking and tolls are reimbursed with receipts; traffic and parking fines are never reimbursed."""

REMOTE_WORK_POLICY = """O'Connor Insurance follows a hybrid model: employees work from the office at least two days per week, on the days their team agrees. Fully remote arrangements need approval from both your manager and HR and are reviewed every year.

Remote employees must work from a private, secure location within the United States. Working from public places such as cafes is allowed only for tasks that handle no customer data, and always over the company VPN.

The company provides a laptop, a monitor and a headset. A one-time home office stipend of $500 covers a desk, a chair or other equipment; submit the receipts in Expensify under the category Home Office.

Core collaboration hours are 10:00 to 15:00 Eastern Time. Outside these hours employees may arrange their schedule freely, provided they are reachable during core hours and their manager knows their working pattern."""

DEMO_BOT = {
    "agent_id": DEMO_AGENT_ID,
    "name": "O'Connor Internal Operations Associate",
    "organization_id": "64f1c0ffee0000000000a001",
    "organization_name": "O'Connor Insurance",
    "system_prompt": (
        "You are an AI assistant for O'Connor Insurance employees. Answer questions about HR policies, "
        "expenses and remote work using only the O'Connor Employee Handbook: always search it with the search_kb "
        "tool before answering, and cite the policy you used. Keep answers brief (under three sentences for simple "
        "questions). If the handbook does not cover a question, say so. If the employee asks for a person, use the "
        "live_handoff tool. Never give legal or tax advice."
    ),
    # The demo adapter ignores provider and model; it honours the parameters its module documents
    # (apps.bots.adapters.demo): at temperature 0 the same question always gets the same answer.
    "llm_config": {"provider": "openai", "model": "gpt-4.1", "parameters": {"temperature": 0}},
    "adapter": "demo",
    "harness_context": {
        "version": "1.0",
        "description": "evalsite's built-in demo bot: BM25 search over the handbook, answers from the best passage.",
        "execution_flow": [
            {"step": 1, "node": "detect_handoff", "description": "A request for a person calls live_handoff."},
            {"step": 2, "node": "search_kb", "description": "Otherwise search the handbook with the question."},
            {"step": 3, "node": "answer", "description": "Answer from the best passage, or say nothing matched."},
        ],
        "key_behaviors": ["Answers only from the handbook", "Hands off on request"],
        "evaluation_notes": ["Deterministic: the same question always gets the same answer."],
    },
    "tools": [
        {
            "name": "Employee Handbook Search",
            "tool_name": "search_kb",
            "type": "knowledge_base",
            "description": "Search the O'Connor Employee Handbook for policy passages.",
            "output_instructions": "Cite the policy document the answer comes from.",
        },
        {
            "name": "Live Chat Handoff",
            "tool_name": "live_handoff",
            "type": "human_handoff",
            "description": "Transfer to a live HR agent when the employee asks for a person or the question needs "
            "a human decision.",
            "output_instructions": "Tell the employee they are being connected to a person.",
        },
    ],
    "knowledge_bases": [
        {
            "name": HANDBOOK,
            "type": "file",
            "documents": [
                {"title": "PTO Policy", "text": PTO_POLICY},
                {"title": "Expense Policy", "text": EXPENSE_POLICY},
                {"title": "Remote Work Policy", "text": REMOTE_WORK_POLICY},
            ],
        }
    ],
}


# The same bot after an edit someone wants to ship: briefer answers, a stricter search that hands the
# employee to a person rather than answer from a weak match, and a higher temperature "for more
# natural answers". Each change is a setting the demo adapter honours (apps.bots.adapters.demo); the
# demo runs show what they do to the test set (docs/demo.md).
DEMO_CHANGED_BOT = copy.deepcopy(DEMO_BOT) | {
    "agent_id": DEMO_CHANGED_AGENT_ID,
    "name": "O'Connor Internal Operations Associate (v2 candidate)",
    "system_prompt": (
        "You are an AI assistant for O'Connor Insurance employees. Answer questions about HR policies, "
        "expenses and remote work using only the O'Connor Employee Handbook: always search it with the search_kb "
        "tool before answering, and cite the policy you used. Answer in at most two sentences. Use a handbook "
        "passage only when it clearly matches the question; otherwise say the handbook does not cover it and "
        "hand the conversation to a live HR agent with the live_handoff tool. If the employee asks for a person, "
        "use the live_handoff tool. Never give legal or tax advice."
    ),
    "llm_config": {
        "provider": "openai",
        "model": "gpt-4.1",
        "parameters": {"temperature": 1.0, "min_score": 3.0, "max_sentences": 2, "handoff_when_nothing_found": True},
    },
}
DEMO_CHANGED_BOT["harness_context"] = DEMO_BOT["harness_context"] | {
    "version": "2.0",
    "execution_flow": [
        {"step": 1, "node": "detect_handoff", "description": "A request for a person calls live_handoff."},
        {"step": 2, "node": "search_kb", "description": "Otherwise search the handbook with the question."},
        {
            "step": 3,
            "node": "answer",
            "description": "Answer in at most two sentences from a passage scoring 3 "
            "or more, drawn at temperature 1; with none, hand off.",
        },
    ],
    "evaluation_notes": ["Temperature 1: attempts of one question may answer from different passages."],
}


def load_demo_bot() -> int:
    """Create the demo bot if it is missing; returns how many were created (0 on a re-run)."""
    project = Project.objects.default()
    if Bot.objects.of_project(project).filter(agent_id=DEMO_AGENT_ID).exists():
        return 0
    services.bot_create(data=BotIn.model_validate(DEMO_BOT), project=project)
    return 1


def load_demo_changed_bot() -> int:
    """Create the changed demo bot (v2 candidate) if it is missing; returns how many were created."""
    project = Project.objects.default()
    if Bot.objects.of_project(project).filter(agent_id=DEMO_CHANGED_AGENT_ID).exists():
        return 0
    services.bot_create(data=BotIn.model_validate(DEMO_CHANGED_BOT), project=project)
    return 1
