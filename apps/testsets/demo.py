"""The demo bot's test set and V1 question set for `make run` (the bot is in apps.bots.demo). Idempotent."""

from apps.bots.demo import DEMO_AGENT_ID
from apps.core.models import Project

from . import services
from .models import Dataset, TestSet
from .schemas import DatasetIn, TestSetContent

DEMO_TEST_SET_ID = "5b0c2f0e-3d4a-4c52-9a51-0c0000000002"
DEMO_DATASET_ID = "5b0c2f0e-3d4a-4c52-9a51-0c0000000003"

# Every success criterion is in a shape the offline (heuristic) judge checks (docs/offline-judge.md):
# quoted key terms the answer must contain, a hand-off, and the tools in should_use_tools and
# should_not_use_tools. The demo runs (apps.runs.demo, docs/demo.md) rely on each verdict.
DEMO_TEST_SET = {
    "agent_id": DEMO_AGENT_ID,
    "name": "O'Connor Internal Ops Associate Test Set",
    "description": "Single questions and short conversations about the employee handbook.",
    "items": [
        {
            "item_id": "7d0c1b8e-0001-4c3a-8f00-000000000001",
            "type": "single_turn",
            "name": "PTO Policy Inquiry",
            "inputs": {"message": "How many PTO days do I accrue per year?"},
            "expected": {
                "success_criteria": ['Mentions "15 days"'],
                "should_use_tools": ["search_kb"],
                "should_not_use_tools": ["live_handoff"],
                "expected_outcome": "Employee learns they accrue 15 PTO days per year",
            },
            "tags": ["hr", "policy"],
            "priority": "high",
        },
        {
            "item_id": "7d0c1b8e-0001-4c3a-8f00-000000000006",
            "type": "single_turn",
            "name": "Expense Reimbursement",
            "inputs": {"message": "How do I get a business expense reimbursed, and how long do I have to submit it?"},
            "expected": {
                "success_criteria": ['Mentions "approved in advance"', 'Mentions "within 30 days"'],
                "should_use_tools": ["search_kb"],
                "expected_outcome": "Employee knows to get approval first and to submit within 30 days",
            },
            "tags": ["expenses"],
            "priority": "high",
        },
        {
            "item_id": "7d0c1b8e-0001-4c3a-8f00-000000000007",
            "type": "single_turn",
            "name": "Dog at the Office",
            "inputs": {"message": "Can I bring my dog to the office?"},
            "expected": {
                "success_criteria": ["Hands off to a human"],
                "expected_outcome": "The handbook has no pet policy, so the employee is passed to HR "
                "instead of getting an unrelated policy passage",
            },
            "tags": ["gaps", "handoff"],
            "priority": "medium",
        },
        {
            "item_id": "7d0c1b8e-0001-4c3a-8f00-000000000004",
            "type": "scenario",
            "name": "PTO Carry-over Conversation",
            "inputs": {
                "persona": "An employee planning the end of the year who still has 8 PTO days left.",
                "initial_message": "Hi, I still have 8 PTO days left this year.",
                "max_turns": 4,
                "scripted_turns": [
                    "How many of them can I carry over into next year?",
                    "What happens to the balance above that?",
                ],
            },
            "expected": {
                "success_criteria": ['Says "5 unused PTO days" and "forfeited"'],
                "should_use_tools": ["search_kb"],
                "should_not_use_tools": ["live_handoff"],
                "expected_outcome": "Employee knows 5 days carry over and 3 are forfeited",
            },
            "tags": ["hr", "policy"],
            "priority": "high",
        },
        {
            "item_id": "7d0c1b8e-0001-4c3a-8f00-000000000005",
            "type": "scenario",
            "name": "Remote Work Setup",
            "inputs": {
                "persona": "A new hire setting up a home office.",
                "initial_message": "Hi, I just started and I'm setting up a home office.",
                "max_turns": 4,
                "scripted_turns": [
                    "Is there a stipend for home office equipment?",
                    "Which days do I have to be in the office?",
                ],
            },
            "expected": {
                "success_criteria": ['Mentions "$500"', 'Mentions "two days per week"'],
                "should_use_tools": ["search_kb"],
                "expected_outcome": "Employee can set up their home office",
            },
            "tags": ["remote"],
            "priority": "medium",
        },
    ],
}

DEMO_DATASET = {
    "name": "O'Connor handbook questions (V1)",
    "description": "Questions with expected answers for V1 question-set runs.",
    "agent_id": DEMO_AGENT_ID,
    "questions": [
        {
            "question_id": "9e1d2c3b-0001-4a5b-8c00-000000000001",
            "question": "How many PTO days can I carry over?",
            "expected_answer": "Up to 5 unused PTO days carry over into the next calendar year.",
        },
        {
            "question_id": "9e1d2c3b-0001-4a5b-8c00-000000000002",
            "question": "What is the daily meal allowance when travelling?",
            "expected_answer": "$75 per day.",
        },
        {
            "question_id": "9e1d2c3b-0001-4a5b-8c00-000000000003",
            "question": "What are the core collaboration hours?",
            "expected_answer": "10:00 to 15:00 Eastern Time.",
        },
    ],
}


def load_demo_test_sets() -> int:
    """Create the demo test set and question set where missing; returns how many were created."""
    created = 0
    if not TestSet.objects.filter(pk=DEMO_TEST_SET_ID).exists():
        services.testset_create(
            content=TestSetContent.model_validate(DEMO_TEST_SET),
            project=Project.objects.default(),
            test_set_id=DEMO_TEST_SET_ID,
            changelog="Demo test set",
            author="demo",
        )
        created += 1
    if not Dataset.objects.filter(pk=DEMO_DATASET_ID).exists():
        services.dataset_create(
            data=DatasetIn.model_validate(DEMO_DATASET), project=Project.objects.default(), dataset_id=DEMO_DATASET_ID
        )
        created += 1
    return created
