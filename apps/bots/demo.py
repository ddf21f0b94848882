"""Demo data for `make run`: the O'Connor internal operations bot (built-in demo adapter) with its
handbook, a rubric, a test set and a V1 question set. Loaded through the services; idempotent."""

from apps.bots import services as bot_services
from apps.bots.models import Bot
from apps.bots.schemas import BotIn
from apps.rubrics import services as rubric_services
from apps.rubrics.models import Rubric
from apps.rubrics.schemas import RubricContent
from apps.testsets import services as testset_services
from apps.testsets.models import Dataset, TestSet
from apps.testsets.schemas import DatasetIn, TestSetContent

DEMO_AGENT_ID = "64f1c0ffee0000000000d001"
DEMO_RUBRIC_ID = "5b0c2f0e-3d4a-4c52-9a51-0c0000000001"
DEMO_TEST_SET_ID = "5b0c2f0e-3d4a-4c52-9a51-0c0000000002"
DEMO_DATASET_ID = "5b0c2f0e-3d4a-4c52-9a51-0c0000000003"
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
        "live_handoff tool. Never give legal or tax advice."),
    "llm_config": {"provider": "openai", "model": "gpt-4.1", "parameters": {"temperature": 0.3}},
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
        {"name": "Employee Handbook Search", "tool_name": "search_kb", "type": "knowledge_base",
         "description": "Search the O'Connor Employee Handbook for policy passages.",
         "output_instructions": "Cite the policy document the answer comes from."},
        {"name": "Live Chat Handoff", "tool_name": "live_handoff", "type": "human_handoff",
         "description": "Transfer to a live HR agent when the employee asks for a person or the question needs "
                        "a human decision.",
         "output_instructions": "Tell the employee they are being connected to a person."},
    ],
    "knowledge_bases": [{"name": HANDBOOK, "type": "file", "documents": [
        {"title": "PTO Policy", "text": PTO_POLICY},
        {"title": "Expense Policy", "text": EXPENSE_POLICY},
        {"title": "Remote Work Policy", "text": REMOTE_WORK_POLICY},
    ]}],
}


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

DEMO_TEST_SET = {
    "agent_id": DEMO_AGENT_ID,
    "name": "O'Connor Internal Ops Associate Test Set",
    "description": "Single questions and short conversations about the employee handbook.",
    "items": [
        {"item_id": "7d0c1b8e-0001-4c3a-8f00-000000000001", "type": "single_turn", "name": "PTO Policy Inquiry",
         "inputs": {"message": "How many PTO days do I accrue per year?"},
         "expected": {"success_criteria": ["Agent retrieves PTO policy from knowledge base",
                                           "Response includes the accrual rate of 15 days per year"],
                      "should_use_tools": ["search_kb"], "should_not_use_tools": ["live_handoff"],
                      "expected_outcome": "Employee learns they accrue 15 PTO days per year"},
         "tags": ["hr", "policy"], "priority": "high"},
        {"item_id": "7d0c1b8e-0001-4c3a-8f00-000000000002", "type": "single_turn", "name": "Hotel Limit",
         "inputs": {"message": "What is the hotel limit per night when travelling to a major city?"},
         "expected": {"success_criteria": ["Response states the $250 per night limit for major cities"],
                      "should_use_tools": ["search_kb"], "expected_outcome": "Employee knows the hotel limit"},
         "tags": ["expenses"], "priority": "medium"},
        {"item_id": "7d0c1b8e-0001-4c3a-8f00-000000000003", "type": "single_turn", "name": "Ask for a Person",
         "inputs": {"message": "I'd like to speak to a real person about my leave, please."},
         "expected": {"success_criteria": ["Agent hands the conversation to a live agent"],
                      "should_use_tools": ["live_handoff"], "expected_outcome": "Employee is transferred"},
         "tags": ["handoff"], "priority": "high"},
        {"item_id": "7d0c1b8e-0001-4c3a-8f00-000000000004", "type": "scenario", "name": "PTO Carry-over Conversation",
         "inputs": {"persona": "An employee planning the end of the year who still has 8 PTO days left.",
                    "initial_message": "Hi, I still have 8 PTO days left this year.",
                    "max_turns": 4,
                    "scripted_turns": ["How many of them can I carry over into next year?",
                                       "And what happens to the rest?"]},
         "expected": {"success_criteria": ["Agent says up to 5 days carry over",
                                           "Agent says the balance above 5 days is forfeited"],
                      "should_use_tools": ["search_kb"], "should_not_use_tools": ["live_handoff"],
                      "expected_outcome": "Employee knows 5 days carry over and 3 are forfeited"},
         "tags": ["hr", "policy"], "priority": "high"},
        {"item_id": "7d0c1b8e-0001-4c3a-8f00-000000000005", "type": "scenario", "name": "Remote Work Setup",
         "inputs": {"persona": "A new hire setting up a home office.",
                    "initial_message": "I just started and will work from home part of the week.",
                    "max_turns": 4,
                    "scripted_turns": ["Is there a stipend for home office equipment?",
                                       "Which days do I have to be in the office?"]},
         "expected": {"success_criteria": ["Agent mentions the $500 home office stipend",
                                           "Agent explains the two office days per week"],
                      "should_use_tools": ["search_kb"], "expected_outcome": "Employee can set up their home office"},
         "tags": ["remote"], "priority": "medium"},
    ],
}

DEMO_DATASET = {
    "name": "O'Connor handbook questions (V1)",
    "description": "Questions with expected answers for V1 question-set runs.",
    "agent_id": DEMO_AGENT_ID,
    "questions": [
        {"question_id": "9e1d2c3b-0001-4a5b-8c00-000000000001", "question": "How many PTO days can I carry over?",
         "expected_answer": "Up to 5 unused PTO days carry over into the next calendar year."},
        {"question_id": "9e1d2c3b-0001-4a5b-8c00-000000000002", "question": "What is the daily meal allowance when travelling?",
         "expected_answer": "$75 per day."},
        {"question_id": "9e1d2c3b-0001-4a5b-8c00-000000000003", "question": "What are the core collaboration hours?",
         "expected_answer": "10:00 to 15:00 Eastern Time."},
    ],
}


def load_demo_evaluation_data() -> int:
    """Create what is missing; returns how many objects were created (0 on a re-run)."""
    created = 0
    if not Bot.objects.filter(agent_id=DEMO_AGENT_ID).exists():
        bot_services.bot_create(data=BotIn.model_validate(DEMO_BOT))
        created += 1
    if not Rubric.objects.filter(pk=DEMO_RUBRIC_ID).exists():
        rubric_services.rubric_create(content=RubricContent.model_validate(DEMO_RUBRIC), rubric_id=DEMO_RUBRIC_ID,
                                      changelog="Demo rubric", author="demo")
        created += 1
    if not TestSet.objects.filter(pk=DEMO_TEST_SET_ID).exists():
        testset_services.test_set_create(content=TestSetContent.model_validate(DEMO_TEST_SET),
                                         test_set_id=DEMO_TEST_SET_ID, changelog="Demo test set", author="demo")
        created += 1
    if not Dataset.objects.filter(pk=DEMO_DATASET_ID).exists():
        testset_services.dataset_create(data=DatasetIn.model_validate(DEMO_DATASET), dataset_id=DEMO_DATASET_ID)
        created += 1
    return created
