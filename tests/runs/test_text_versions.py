"""Tuning the demo bot's retrieval changes no judge's verdict (issue 13, item 5).

The criteria judge `heuristic:v1` used to tokenise with the demo bot's BM25 tokenizer and stop list,
so editing the bot's search changed verdicts of a judge that claims a fixed version. Each judge and
metric now pins its own version from apps/core/text.py; here the bot's version is swapped for one
that tokenises nothing alike, and every verdict and score on a fixed input stays the same."""

import ast
import dataclasses
import inspect
import re
from types import SimpleNamespace

from apps.agentic.judges import HeuristicAgenticJudge, JudgeInput, JudgeToolCall
from apps.agentic.judges import heuristic as agentic_heuristic
from apps.bots.adapters import retrieval
from apps.bots.adapters.base import BotDocument
from apps.core.text import TextVersion
from apps.rag.metrics import lexical
from apps.runs.judging import answers, heuristic
from apps.runs.judging.types import Transcript

BOT_TOOLS = [
    {"tool_name": "search_kb", "name": "Search handbook", "type": "knowledge_base"},
    {"tool_name": "live_handoff", "name": "Live Chat Handoff", "type": "human_handoff"},
]
ANSWER = (
    "Full-time employees accrue 1.25 PTO days per month, which is 15 days per year. "
    "Up to 5 unused days carry over to the next year."
)
TRANSCRIPT = Transcript(
    messages=[
        {"role": "user", "content": "How many PTO days do I accrue, and do they carry over?"},
        {"role": "assistant", "content": ANSWER},
    ],
    tool_calls=[
        {
            "name": "search_kb",
            "arguments": {"query": "PTO accrual carry over"},
            "result": "PTO Policy: 1.25 days per month ...",
            "success": True,
        }
    ],
    bot_tools=BOT_TOOLS,
)
CRITERIA = [
    "Response includes the monthly PTO accrual of 1.25 days",
    "Agent says up to 5 days carry over",
    'Mentions "1.25 PTO days" and "15 days"',
    'Mentions "parental leave"',
    "Agent explains the parental leave eligibility rules",
    "Agent retrieves PTO policy from the handbook KB",
    "Agent is empathetic",
]
RULES = [
    {"id": "BRIEF", "evaluation_criteria": {"pass_conditions": ["Response is under 3 sentences"]}},
    {
        "id": "SEARCH",
        "evaluation_criteria": {
            "pass_conditions": ["search_kb is called"],
            "fail_conditions": ["The answer mentions 'parental leave'"],
        },
    },
    {"id": "VAGUE", "evaluation_criteria": {"fail_conditions": ["Invents an answer"]}},
]
SESSION = JudgeInput(
    query="List all Kubernetes clusters in Delhi",
    final_response="Found 2 clusters in Delhi: prod-01 (running) and dev-02 (stopped).",
    tool_calls=(
        JudgeToolCall(
            "list_k8s_clusters",
            {"datacenter": "Delhi"},
            [{"name": "prod-01", "status": "running"}, {"name": "dev-02", "status": "stopped"}],
        ),
    ),
    intent="list_k8s_cluster",
    resource_type="k8s_cluster",
    operation="list",
    success=True,
)
DOCUMENTS = (
    BotDocument(
        knowledge_base="kb",
        title="PTO Policy",
        text="Employees accrue 1.25 PTO days per month.\n\nUp to 5 days carry over.",
    ),
    BotDocument(knowledge_base="kb", title="Expense Policy", text="Hotels are reimbursed up to $250."),
)
# Nothing like any judge's version: whitespace tokens, upper case, "PTO" a stop word, two-letter stems.
UNLIKE_ANY_JUDGE = TextVersion(
    name="retrieval:test",
    word=re.compile(r"\S+"),
    fold=str.upper,
    stopwords=frozenset({"PTO", "DAYS"}),
    stem=lambda word: word[:2],
)


def every_verdict() -> dict:
    return {
        "criteria": [dataclasses.asdict(heuristic.judge_criterion(c, TRANSCRIPT)) for c in CRITERIA],
        "rules": [dataclasses.asdict(heuristic.judge_rule(r, TRANSCRIPT)) for r in RULES],
        # V1 correctness is what still tokenises with CRITERIA_V1 (the criteria judge no longer does).
        "answers": [
            dataclasses.asdict(
                answers.judge_answer(
                    SimpleNamespace(client=None, label="heuristic:v1"),
                    question="How many PTO days?",
                    answer=ANSWER,
                    expected=expected,
                )
            )
            for expected in ("15 days per year, 1.25 days per month", "Parental leave is 16 weeks")
        ],
        "agentic": dataclasses.asdict(HeuristicAgenticJudge().evaluate(SESSION)),
        "lexical": [
            lexical.faithfulness(contexts=[d.text for d in DOCUMENTS], answer=ANSWER),
            lexical.answer_relevancy(question="How many PTO days do I accrue?", answer=ANSWER),
        ],
    }


def test_changing_the_bots_retrieval_text_changes_no_verdict(monkeypatch):
    search_before = retrieval.PassageIndex(DOCUMENTS).search("How many PTO days do I accrue?")
    before = every_verdict()
    # The fixed input is judged for real: passes, failures and skips, not only skips.
    statuses = {(v["status"], v["passed"]) for v in before["criteria"] + before["rules"]}
    assert {("ok", True), ("ok", False), ("skipped", None)} <= statuses
    assert [v["passed"] for v in before["answers"]] == [True, False]

    monkeypatch.setattr(retrieval, "TEXT", UNLIKE_ANY_JUDGE)

    # The swap reaches the bot's search (it now ranks differently)...
    assert retrieval.PassageIndex(DOCUMENTS).search("How many PTO days do I accrue?") != search_before
    # ...and no judge or metric.
    assert every_verdict() == before


def test_no_judge_or_metric_imports_the_bots_retrieval():
    for module in (heuristic, answers, agentic_heuristic, lexical):
        imported = set()
        for node in ast.walk(ast.parse(inspect.getsource(module))):
            if isinstance(node, ast.ImportFrom) and node.module:
                imported.add(node.module)
            elif isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
        assert not {name for name in imported if name.startswith("apps.bots")}, (module.__name__, imported)
