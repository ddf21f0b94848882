"""TRACE field limits (issue 12, item 7): a 1.2 MB answer and ground truth cost 12.8 s of CPU in the
quadratic Levenshtein of answer_accuracy. Past the documented limits the request is 422 before any
scoring; at them it is accepted. The time itself is measured by bench/trace_worst.py, not here."""

import json

import pytest

from apps.rag import payload as limits
from apps.rag.metrics.evaluate import MAX_LEVENSHTEIN_CELLS, score_metrics
from apps.rag.models import TraceEvaluation
from apps.rag.payload import TracePayload

pytestmark = pytest.mark.django_db

BASE = {
    "tests": ["answer_accuracy", "faithfulness", "answer_relevancy", "context_utilisation", "context_recall"],
    "question": "What is the capital of France?",
    "contexts": [{"id": "ctx1", "text": "Paris is the capital of France."}],
    "answer": "Paris",
    "ground_truth": "Paris",
    "relevant_context_ids": ["ctx1"],
}


def post(client, payload):
    return client.post("/trace", {"query": json.dumps(payload)}, format="json")


def text(chars: int, word: str = "paris ") -> str:
    return (word * (chars // len(word) + 1))[:chars]


@pytest.mark.parametrize(
    "change, field",
    [
        ({"answer": text(limits.MAX_ANSWER_CHARS + 1)}, "answer"),
        ({"ground_truth": text(limits.MAX_GROUND_TRUTH_CHARS + 1)}, "ground_truth"),
        ({"ground_truth": ["Paris"] * (limits.MAX_GROUND_TRUTHS + 1)}, "ground_truth"),
        ({"question": text(limits.MAX_QUESTION_CHARS + 1)}, "question"),
        ({"contexts": [{"id": "c", "text": text(limits.MAX_CONTEXT_CHARS + 1)}]}, "contexts"),
        (
            {
                "contexts": [
                    {"id": f"c{i}", "text": text(limits.MAX_CONTEXT_CHARS)}
                    for i in range(limits.MAX_CONTEXTS_TOTAL_CHARS // limits.MAX_CONTEXT_CHARS + 1)
                ]
            },
            "contexts",
        ),
    ],
)
def test_a_field_past_its_limit_is_422_naming_it(api, change, field):
    response = post(api, {**BASE, **change})
    assert response.status_code == 422, response.content[:300]
    assert field in json.dumps(response.json()["detail"])
    assert not TraceEvaluation.objects.exists()


def test_the_issue_reproduction_is_refused(api):
    # 1.2 MB answer and ground truth: 12.8 s of CPU before the limits.
    response = post(api, {**BASE, "answer": text(1_200_000, "alpha "), "ground_truth": text(1_200_000, "beta ")})
    assert response.status_code == 422


def test_a_query_past_the_overall_limit_is_422(api):
    response = api.post(
        "/trace", {"query": "Evaluate faithfulness. Answer: " + "x" * limits.MAX_QUERY_CHARS}, format="json"
    )
    assert response.status_code == 422
    assert "query" in json.dumps(response.json()["detail"])
    response = api.post("/trace", {"query": {**BASE, "extra": {"pad": "x" * limits.MAX_QUERY_CHARS}}}, format="json")
    assert response.status_code == 422


def test_a_payload_at_every_limit_is_accepted_and_scored(api):
    per_context = limits.MAX_CONTEXTS_TOTAL_CHARS // limits.MAX_CONTEXTS
    payload = {
        **BASE,
        "question": text(limits.MAX_QUESTION_CHARS, "capital france "),
        "answer": text(limits.MAX_ANSWER_CHARS, "paris capital "),
        "ground_truth": [text(limits.MAX_GROUND_TRUTH_CHARS, f"paris {i} ") for i in range(limits.MAX_GROUND_TRUTHS)],
        "contexts": [
            {"id": f"c{i}", "text": text(per_context, "paris is the capital ")} for i in range(limits.MAX_CONTEXTS)
        ],
        "relevant_context_ids": ["c0"],
    }
    response = post(api, payload)
    assert response.status_code == 200, response.content[:300]
    scores = response.json()["evaluation_scores"]
    assert all(scores[name] is not None for name in BASE["tests"]), scores


def test_levenshtein_is_bounded_for_in_process_callers():
    # Services called in-process skip the API's validation; the metric bounds itself.
    payload = TracePayload.model_construct(
        tests=["answer_accuracy"],
        answer="x " * 100_000,
        ground_truth="y " * 100_000,
        contexts=[],
        relevant_context_ids=[],
    )
    assert 100_000 * 100_000 > MAX_LEVENSHTEIN_CELLS
    scoring = score_metrics(["answer_accuracy"], payload, use_llm=False)
    assert scoring.scores["answer_accuracy"] is None
    assert "too long" in scoring.details["answer_accuracy"]["reason"]


def test_a_test_name_longer_than_its_column_is_422(api):
    # Stored as TraceEvaluationTest.name (255 characters): PostgreSQL refused the INSERT with a 500.
    response = post(api, {**BASE, "tests": ["faithfulness", "x" * 256]})
    assert response.status_code == 422, response.content[:300]
    assert "tests" in json.dumps(response.json()["detail"])
    assert post(api, {**BASE, "tests": ["faithfulness", "x" * 255]}).status_code == 200
