"""TraceEvaluationFilter, the one FilterSet of the RAG evaluation lists: the API's history and the
console's list (through selectors.trace_evaluation_list and trace_evaluation_search)."""

import pytest

from apps.rag import selectors
from tests.rag.factories import TraceEvaluationFactory
from tests.rag.helpers import PARIS

pytestmark = pytest.mark.django_db


def evaluation(question: str, scores: dict, *, status: dict | None = None, outcome="scored"):
    status = status or {}
    return TraceEvaluationFactory(
        payload={**PARIS, "question": question, "tests": list(scores)},
        outcome=outcome,
        test_rows=[
            {"name": name, "score": score, "status": status.get(name, "scored")} for name, score in scores.items()
        ],
    )


def ids(queryset) -> set[int]:
    return {row.pk for row in queryset}


def test_metric_conditions_hold_on_one_row():
    # context_recall errored and answer_accuracy scored low: no one metric is both.
    mixed = evaluation("Q1", {"context_recall": None, "answer_accuracy": 0.1}, status={"context_recall": "error"})
    low_recall = evaluation("Q2", {"context_recall": 0.1})
    assert ids(selectors.trace_evaluation_search(test="context_recall", score_below=0.5)) == {low_recall.pk}
    assert ids(selectors.trace_evaluation_search(test="context recall", status="error")) == {mixed.pk}
    assert ids(selectors.trace_evaluation_search(score_below=0.5)) == {mixed.pk, low_recall.pk}


def test_search_by_id_or_question_text_and_outcome():
    paris = evaluation("What is the capital of France?", {"context_recall": 1.0})
    partial = evaluation("Who wrote Emma?", {"context_recall": 1.0}, outcome="partial")
    assert ids(selectors.trace_evaluation_search(q=f"#{paris.pk}")) == {paris.pk}
    assert ids(selectors.trace_evaluation_search(q="  capital of FRANCE ")) == {paris.pk}
    assert ids(selectors.trace_evaluation_search(outcome="partial")) == {partial.pk}
    assert ids(selectors.trace_evaluation_search()) == {paris.pk, partial.pk}


def test_history_filters_by_test_in_either_spelling_and_outcome(api):
    recall = evaluation("Q1", {"context_recall": 1.0})
    evaluation("Q2", {"answer_accuracy": 1.0}, outcome="partial")
    assert ids(selectors.trace_evaluation_list(filters={"test": "Context Recall"})) == {recall.pk}
    answer = api.get("/api/v1/trace/history", {"test": "context-recall", "outcome": "scored"}).json()
    assert [row["id"] for row in answer["results"]] == [recall.pk]
    # A blank name is no filter; a space is a name that matches any metric, as it always did.
    assert api.get("/api/v1/trace/history", {"test": ""}).json()["count"] == 2
    assert api.get("/api/v1/trace/history", {"test": " "}).json()["count"] == 2
