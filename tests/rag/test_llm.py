"""The LLM paths against the scripted OpenAI-compatible server: the real openai client, evalsite's LLM
client and Ragas' metric code all run; only the model's replies are scripted."""

import json

import pytest

from apps.rag.metrics import ragas_backend
from apps.rag.models import TraceEvaluation
from tests.fakes.openai_server import completion_body
from tests.rag.helpers import FULL, PARIS, post

REPLIES = {
    "AnswerAccuracyOutput": {"rating": 4},
    "StatementGeneratorOutput": {"statements": ["Paris is the capital of France.", "Paris has ten million cats."]},
    "NLIStatementOutput": {
        "statements": [
            {"statement": "Paris is the capital of France.", "reason": "stated in ctx1", "verdict": 1},
            {"statement": "Paris has ten million cats.", "reason": "not in the context", "verdict": 0},
        ]
    },
    "AnswerRelevanceOutput": {"question": "What is the capital of France?", "noncommittal": 0},
    "ContextPrecisionOutput": {"reason": "mentions Paris", "verdict": 1},
}


def _by_schema(replies):
    def answer(body):
        name = body["response_format"]["json_schema"]["name"]
        reply = replies[name]
        reply = reply(body) if callable(reply) else reply
        return (
            200,
            completion_body(
                body["model"],
                json.dumps(reply),
                usage={"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            ),
            None,
        )

    return answer


@pytest.fixture
def judge(openai_server):
    ragas_backend.reset_llm_metrics()
    yield openai_server
    ragas_backend.reset_llm_metrics()


def script(server, replies=REPLIES, count=40):
    for _ in range(count):
        server.push(_by_schema(replies))


def test_llm_metrics_through_ragas(api, judge):
    script(judge)
    response = post(api, FULL)
    assert response.status_code == 200, response.content
    body = response.json()
    scores, details = body["evaluation_scores"], body["details"]
    # Two judges both rated 4 of 4.
    assert scores["answer_accuracy"] == 1.0
    assert details["answer_accuracy"]["method"] == "ragas:AnswerAccuracy"
    assert [c["reply"] for c in details["answer_accuracy"]["llm_calls"]] == [{"rating": 4}, {"rating": 4}]
    # One of two statements supported.
    assert scores["faithfulness"] == 0.5
    assert details["faithfulness"]["method"] == "ragas:Faithfulness"
    # The generated question is the question itself: identical embeddings, cosine 1.
    assert scores["answer_relevancy"] == pytest.approx(1.0)
    assert details["answer_relevancy"]["method"] == "ragas:AnswerRelevancy"
    # Both contexts judged useful: average precision 1; the lexical counts ride along.
    assert scores["context_utilisation"] == pytest.approx(1.0)
    utilisation = details["context_utilisation"]
    assert utilisation["method"] == "ragas:ContextUtilization"
    assert (utilisation["overlap_tokens"], utilisation["context_tokens_total"]) == (1, 4)
    # ID-based metrics never use the LLM.
    assert details["context_recall"]["judge"] == "deterministic"
    for name in ("answer_accuracy", "faithfulness", "answer_relevancy", "context_utilisation"):
        assert details[name]["judge"] == "openai:judge-model"
        assert details[name]["usage"]["total_tokens"] > 0

    paths = judge.paths
    assert any(p.endswith("/embeddings") for p in paths)
    evaluation = TraceEvaluation.objects.get()
    assert evaluation.judge == "openai:judge-model"
    # 2 (accuracy) + 2 (faithfulness) + 3 (relevancy) + 2 (utilisation, one per context) chat calls.
    assert evaluation.llm_usage["total_tokens"] == 9 * 15


def test_llm_failure_is_reported_per_metric(api, judge):
    judge.push_error(400, "model not found")
    judge.push_error(400, "model not found")
    body = post(api, {**PARIS, "tests": ["answer_accuracy", "context_recall"]}).json()
    assert body["evaluation_scores"]["answer_accuracy"] is None
    assert body["details"]["answer_accuracy"]["status"] == "error"
    assert "model not found" in body["details"]["answer_accuracy"]["reason"]
    assert body["evaluation_scores"]["context_recall"] == 1.0


def test_unusable_verdict_is_an_error_not_a_number(api, judge):
    script(judge, {"AnswerAccuracyOutput": {"rating": 3}})
    body = post(api, {**PARIS, "tests": ["answer_accuracy"]}).json()
    assert body["evaluation_scores"]["answer_accuracy"] is None
    assert body["details"]["answer_accuracy"]["status"] == "error"


def test_llm_metric_without_question_falls_back(api, judge):
    body = post(api, {**PARIS, "tests": ["answer_accuracy"], "question": None}).json()
    assert body["evaluation_scores"]["answer_accuracy"] == 1.0
    assert body["details"]["answer_accuracy"]["method"] == "exact_match"
    assert "needs the question" in body["details"]["answer_accuracy"]["note"]
    assert judge.chat_requests == []


def test_llm_metric_objects_built_once(judge):
    assert ragas_backend.llm_metrics() is ragas_backend.llm_metrics()


def test_natural_language_extracted_by_llm(api, judge):
    judge.push_json(
        {
            "tests": ["context_recall", "answer_accuracy"],
            "question": "Capital of France?",
            "contexts": [{"id": "d1", "text": "Paris is the capital of France."}],
            "answer": "Paris",
            "ground_truth": ["Paris"],
            "relevant_context_ids": ["d1"],
        }
    )
    script(judge)
    response = post(
        api,
        "Please check recall and accuracy: the system answered Paris to 'Capital of France?' "
        "using document d1 (Paris is the capital of France.), which is the relevant one; "
        "the expected answer is Paris.",
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["provided_parameters"]["parsing"]["source"] == "natural_language:llm"
    assert body["provided_parameters"]["contexts"] == [{"id": "d1", "text": "Paris is the capital of France."}]
    assert body["evaluation_scores"]["context_recall"] == 1.0
    assert body["evaluation_scores"]["answer_accuracy"] == 1.0
    first = judge.chat_requests[0]
    assert first["response_format"]["json_schema"]["name"] == "trace_payload"
    assert "Capital of France?" in first["messages"][1]["content"]


def test_llm_extraction_failure_falls_back_to_rules(api, judge):
    for _ in range(3):
        judge.push_text("I cannot do that")
    body = post(api, "Evaluate context_recall. Context c1: x. Relevant: c1").json()
    parsing = body["provided_parameters"]["parsing"]
    assert parsing["source"] == "natural_language:rules"
    assert "LLM extraction failed" in parsing["notes"][0]
    assert body["evaluation_scores"] == {"context_recall": 1.0}


def test_llm_extraction_without_tests_is_400(api, judge):
    judge.push_json({"tests": [], "question": "hi"})
    response = post(api, "hello there, nice weather")
    assert response.status_code == 400


def test_llm_answer_accuracy_takes_best_ground_truth(api, judge):
    def rate(body):
        return {"rating": 0 if "Lyon" in body["messages"][-1]["content"] else 4}

    script(judge, {"AnswerAccuracyOutput": rate})
    body = post(api, {**PARIS, "tests": ["answer_accuracy"], "ground_truth": ["Lyon", "Paris"]}).json()
    assert body["evaluation_scores"]["answer_accuracy"] == 1.0
    assert body["details"]["answer_accuracy"]["ground_truth"] == "Paris"
    assert len(judge.chat_requests) == 4


def test_many_contexts_keep_context_utilisation_lexical(api, judge):
    contexts = [{"id": f"c{i}", "text": f"passage number {i} about Paris"} for i in range(25)]
    body = post(api, {**PARIS, "tests": ["context_utilisation"], "contexts": contexts}).json()
    details = body["details"]["context_utilisation"]
    assert details["method"] == "lexical:v1" and "25 contexts" in details["note"]
    assert (
        body["evaluation_scores"]["context_utilisation"] == details["overlap_tokens"] / details["context_tokens_total"]
    )
    assert judge.chat_requests == []


def test_invalid_llm_extraction_falls_back_to_rules(api, judge):
    judge.push_json({"tests": ["context_recall"], "contexts": [{"id": "", "text": "x"}], "relevant_context_ids": []})
    body = post(api, "Evaluate context_recall. Context c1: x. Relevant: c1").json()
    assert body["provided_parameters"]["parsing"]["source"] == "natural_language:rules"
    assert "LLM extraction unusable" in body["provided_parameters"]["parsing"]["notes"][0]
    assert body["evaluation_scores"] == {"context_recall": 1.0}
