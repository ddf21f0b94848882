"""Demo TRACE evaluations for `manage.py seed_demo`: one of each outcome, scored deterministically
(no LLM call at start-up). Marked with extra.demo so a restart does not add them again."""

import json

from .models import TraceEvaluation
from .services import trace_evaluation_create

_PARIS = {
    "question": "What is the capital of France?",
    "contexts": [
        {"id": "ctx1", "text": "Paris is the capital of France."},
        {"id": "ctx2", "text": "Lyon is in France."},
    ],
    "answer": "Paris is the capital of France.",
    "ground_truth": "Paris",
    "relevant_context_ids": ["ctx1"],
    "extra": {"demo": True},
}
DEMO_QUERIES = [
    (
        json.dumps(
            {
                **_PARIS,
                "tests": [
                    "answer_accuracy",
                    "context_recall",
                    "context_precision",
                    "faithfulness",
                    "answer_relevancy",
                    "context_utilisation",
                ],
            }
        ),
        False,
    ),
    (json.dumps({**_PARIS, "tests": ["faithfulness", "answer_accuracy", "bleu"], "ground_truth": None}), True),
    (json.dumps({**_PARIS, "tests": ["answer_relevancy"], "question": ""}), False),
]


def load_demo_trace_evaluations() -> int:
    if TraceEvaluation.objects.filter(payload__extra__demo=True).exists():
        return 0
    for query, partial in DEMO_QUERIES:
        trace_evaluation_create(query=query, partial=partial, use_llm=False)
    return len(DEMO_QUERIES)
