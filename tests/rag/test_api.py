import itertools
import json

import jsonschema
import pytest
from drf_spectacular.generators import SchemaGenerator

from apps.rag.models import TraceEvaluation
from apps.rag.payload import METRIC_REQUIREMENTS
from apps.scores.models import Score
from tests.rag.helpers import AUSTEN, FULL, PARIS, post


@pytest.mark.parametrize("path", ["/trace", "/api/v1/trace"])
def test_contract_example_paris(api, path):
    response = post(api, PARIS, path)
    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) == {"provided_parameters", "tests", "missing", "evaluation_scores", "details"}
    assert body["tests"] == PARIS["tests"]
    assert body["missing"] == {"answer_accuracy": False, "context_recall": False, "context_utilisation": False}
    assert body["evaluation_scores"]["answer_accuracy"] == 1.0
    assert body["evaluation_scores"]["context_recall"] == 1.0
    assert body["details"]["context_recall"]["relevant_context_ids"] == ["ctx1"]
    assert body["details"]["context_recall"]["found_relevant_count"] == 1
    assert body["details"]["context_recall"]["total_relevant_count"] == 1
    utilisation = body["details"]["context_utilisation"]
    assert (
        body["evaluation_scores"]["context_utilisation"]
        == utilisation["overlap_tokens"] / utilisation["context_tokens_total"]
    )
    # paris, capital, france, lyon in the contexts; the answer uses paris.
    assert (utilisation["overlap_tokens"], utilisation["context_tokens_total"]) == (1, 4)
    assert body["provided_parameters"]["question"] == PARIS["question"]
    assert body["provided_parameters"]["parsing"] == {"source": "json", "notes": []}


def test_contract_example_austen(api):
    response = api.post("/trace", {"query": AUSTEN}, format="json")
    assert response.status_code == 200
    body = response.json()
    assert body["missing"] == {"context_recall": False}
    assert body["evaluation_scores"] == {"context_recall": 1.0}
    details = body["details"]["context_recall"]
    assert {k: details[k] for k in ("relevant_context_ids", "found_relevant_count", "total_relevant_count")} == {
        "relevant_context_ids": ["c1"],
        "found_relevant_count": 1,
        "total_relevant_count": 1,
    }


def test_all_six_metrics_scored_and_explained(api):
    body = post(api, FULL).json()
    assert set(body["evaluation_scores"]) == set(METRIC_REQUIREMENTS)
    for name, score in body["evaluation_scores"].items():
        details = body["details"][name]
        assert details["judge"] == "deterministic"
        assert details["method"]
        if details["status"] == "scored":
            assert 0.0 <= score <= 1.0
    assert body["evaluation_scores"]["context_precision"] == 0.5
    assert body["evaluation_scores"]["faithfulness"] == 1.0


ALL_PARAMS = ("question", "contexts", "answer", "ground_truth", "relevant_context_ids")


@pytest.mark.parametrize("metric", list(METRIC_REQUIREMENTS))
def test_every_missing_parameter_combination(api, metric):
    required = METRIC_REQUIREMENTS[metric]
    for size in range(len(required) + 1):
        for absent in itertools.combinations(required, size):
            query = {k: v for k, v in FULL.items() if k not in absent}
            query["tests"] = [metric]
            body = post(api, query).json()
            if absent:
                assert body["missing"] == {metric: list(absent)}, (metric, absent)
                assert body["evaluation_scores"] == {} and body["details"] == {}
            else:
                assert body["missing"] == {metric: False}
                assert metric in body["evaluation_scores"]


@pytest.mark.parametrize("empty", [None, "", "   ", []])
def test_empty_values_count_as_missing(api, empty):
    body = post(api, {**PARIS, "tests": ["answer_accuracy"], "ground_truth": empty}).json()
    assert body["missing"] == {"answer_accuracy": ["ground_truth"]}


def test_missing_skips_all_scoring_unless_partial(api):
    query = {**PARIS, "tests": ["context_recall", "faithfulness", "answer_relevancy"], "question": None}
    body = post(api, query).json()
    assert body["missing"] == {"context_recall": False, "faithfulness": False, "answer_relevancy": ["question"]}
    assert body["evaluation_scores"] == {} and body["details"] == {}

    body = post(api, query, partial="true").json()
    assert body["missing"]["answer_relevancy"] == ["question"]
    assert set(body["evaluation_scores"]) == {"context_recall", "faithfulness"}
    evaluation = TraceEvaluation.objects.first()
    assert evaluation.outcome == "partial" and evaluation.partial
    statuses = {row.name: row.status for row in evaluation.test_results}
    assert statuses == {"context_recall": "scored", "faithfulness": "scored", "answer_relevancy": "missing"}
    # The partial request stored one judge row per requested test, the missing one skipped with its reason.
    stored = dict(Score.objects.filter(subject_id=evaluation.pk).values_list("key", "status"))
    assert stored == {"context_recall": "ok", "faithfulness": "ok", "answer_relevancy": "skipped"}
    assert Score.objects.get(subject_id=evaluation.pk, key="answer_relevancy").detail == {"missing": ["question"]}


def test_unsupported_test_flagged(api):
    body = post(api, {**PARIS, "tests": ["context_recall", "bleu"]}).json()
    assert body["missing"] == {"context_recall": False, "bleu": ["unsupported_test"]}
    assert body["evaluation_scores"] == {}
    body = post(api, {**PARIS, "tests": ["context_recall", "bleu"]}, partial="1").json()
    assert body["evaluation_scores"] == {"context_recall": 1.0}


def test_lenient_forms(api):
    query = {
        "tests": "Context_Utilization",
        "question": "q?",
        "contexts": ["Paris is big.", "Lyon too."],
        "answer": "Paris",
    }
    body = post(api, query).json()
    assert body["tests"] == ["context_utilisation"]
    assert body["provided_parameters"]["contexts"] == [
        {"id": "ctx1", "text": "Paris is big."},
        {"id": "ctx2", "text": "Lyon too."},
    ]
    assert any("ctx1, ctx2" in note for note in body["provided_parameters"]["parsing"]["notes"])
    assert body["evaluation_scores"]["context_utilisation"] == pytest.approx(1 / 3)


def test_query_as_object_and_ragas_field_names(api):
    query = {"tests": ["context_recall"], "retrieved_contexts": ["a", "b"], "reference_context_ids": ["ctx2"]}
    response = api.post("/api/v1/trace", {"query": query}, format="json")
    assert response.status_code == 200
    assert response.json()["evaluation_scores"] == {"context_recall": 1.0}


def test_list_ground_truth_takes_best_match(api):
    body = post(
        api,
        {
            **PARIS,
            "tests": ["answer_accuracy"],
            "answer": "The city of Paris",
            "ground_truth": ["Lyon", "city of Paris!"],
        },
    ).json()
    assert body["evaluation_scores"]["answer_accuracy"] == 1.0
    assert body["details"]["answer_accuracy"]["best_ground_truth"] == "city of Paris!"


def test_natural_language_query(api):
    text = (
        "Evaluate answer_accuracy and context_recall. Question: What is the capital of France? Answer: Paris. "
        "Ground truth: Paris. Context ctx1: Paris is the capital of France. Context ctx2: Lyon is in France. "
        "Relevant: ctx1"
    )
    body = post(api, text).json()
    assert body["tests"] == ["answer_accuracy", "context_recall"]
    assert body["evaluation_scores"] == {"answer_accuracy": 1.0, "context_recall": 1.0}
    assert body["provided_parameters"]["parsing"]["source"] == "natural_language:rules"


@pytest.mark.parametrize(
    "query",
    [
        "hello, how are you",
        "{not json",
        "[1, 2]",
        "42x" * 0 + "null",
        '{"tests": ["context_recall"], "contexts": 5}',
        '{"tests": ["x"], "unknown_field": 1}',
        '{"tests": ["context_recall"], "contexts": [{"id": "a", "text": "x"}, {"id": "a", "text": "y"}]}',
        "Question: what? Answer: that.",
        '{"tests": [], "answer": "x"}',
        '{"answer": "x"}',
        '{"tests": "  "}',
    ],
)
def test_bad_query_is_400(api, query, trace_400_schema):
    response = api.post("/trace", {"query": query}, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["detail"]
    # The contract's HTTPException(status_code=400, detail=str(e)): a string, whatever went wrong.
    assert isinstance(response.json()["detail"], str)
    trace_400_schema.validate(response.json())
    assert not TraceEvaluation.objects.exists()


def test_invalid_payload_400_names_the_fields_in_errors(api, trace_400_schema):
    # Before issue 13 the field errors were the detail itself (a list), against the contract.
    response = post(api, {"tests": ["context_recall"], "contexts": 5, "unknown_field": 1})
    assert response.status_code == 400
    body = response.json()
    assert body["detail"].startswith("invalid payload: ")
    assert "contexts" in body["detail"] and "unknown_field" in body["detail"]
    assert {tuple(err["loc"]) for err in body["errors"]} == {("contexts",), ("unknown_field",)}
    assert all(set(err) == {"loc", "msg", "type"} for err in body["errors"])
    trace_400_schema.validate(body)


@pytest.fixture(scope="module")
def trace_400_schema():
    schema = SchemaGenerator().get_schema(request=None, public=True)
    response = schema["paths"]["/trace"]["post"]["responses"]["400"]["content"]["application/json"]["schema"]
    return jsonschema.Draft202012Validator({**response, "components": schema["components"]})


@pytest.mark.parametrize(
    "body", [{}, {"question": "x"}, {"query": None}, {"query": ""}, {"query": 5}, {"query": "bad\u0000text"}, []]
)
def test_body_without_valid_query_is_422(api, body):
    response = api.post("/trace", body, format="json")
    assert response.status_code == 422, response.content
    assert "detail" in response.json()


def test_unicode_and_nul_in_payload(api):
    body = post(api, {**PARIS, "tests": ["answer_accuracy"], "answer": "Zürich 🇨🇭", "ground_truth": "zürich 🇨🇭"}).json()
    assert body["evaluation_scores"]["answer_accuracy"] == 1.0
    response = api.post("/trace", {"query": json.dumps({**PARIS, "answer": "a\u0000b"})}, format="json")
    assert response.status_code == 400


def test_requires_auth(anon_api):
    for path in ("/trace", "/api/v1/trace"):
        assert post(anon_api, PARIS, path).status_code == 401
    assert anon_api.get("/api/v1/trace/history").status_code == 401
    assert not TraceEvaluation.objects.exists()


def test_anonymous_when_allowed(anon_api, allow_anonymous):
    assert post(anon_api, PARIS).status_code == 200
    history = anon_api.get("/api/v1/trace/history").json()
    assert history["count"] == 1 and history["results"][0]["evaluation_scores"]["context_recall"] == 1.0


def test_oversized_body_is_413(api, settings):
    settings.EVALSITE_MAX_BODY_BYTES = 1000
    response = post(api, {**PARIS, "answer": "x" * 2000})
    assert response.status_code == 413


def test_metric_failure_is_reported_not_500(api, monkeypatch):
    from apps.rag.metrics import lexical

    def boom(**kwargs):
        raise RuntimeError("tokeniser exploded")

    monkeypatch.setattr(lexical, "faithfulness", boom)
    response = post(api, {**PARIS, "tests": ["faithfulness", "context_recall"]})
    assert response.status_code == 200
    body = response.json()
    assert body["evaluation_scores"] == {"faithfulness": None, "context_recall": 1.0}
    assert body["details"]["faithfulness"]["status"] == "error"
    assert "tokeniser exploded" in body["details"]["faithfulness"]["reason"]


def test_evaluation_stored_and_history(api, staff_api):
    first = post(api, PARIS)
    post(api, AUSTEN)
    post(api, {**PARIS, "tests": ["faithfulness"], "answer": None})
    assert TraceEvaluation.objects.count() == 3
    evaluation = TraceEvaluation.objects.get(pk=int(first["X-Trace-Evaluation-Id"]))
    assert evaluation.evaluation_scores == first.json()["evaluation_scores"]
    assert evaluation.details == first.json()["details"]
    assert evaluation.judge == "deterministic" and evaluation.source == "json" and evaluation.outcome == "scored"

    history = api.get("/api/v1/trace/history").json()
    assert history["count"] == 3
    assert [r["tests"] for r in history["results"]][0] == ["faithfulness"]
    assert history["results"][0]["outcome"] == "missing"

    recall = api.get("/api/v1/trace/history", {"test": "context_recall"}).json()
    assert recall["count"] == 2
    assert api.get("/api/v1/trace/history", {"test": "Context Utilization"}).json()["count"] == 1
    page = api.get("/api/v1/trace/history", {"limit": 1, "offset": 1}).json()
    assert len(page["results"]) == 1 and page["next"] and page["previous"]
    assert api.get("/api/v1/trace/history", {"outcome": "nope"}).status_code == 422

    detail = api.get(f"/api/v1/trace/history/{evaluation.pk}").json()
    assert detail["evaluation_scores"] == first.json()["evaluation_scores"]
    assert {r["name"]: r["status"] for r in detail["test_results"]} == {
        "answer_accuracy": "scored",
        "context_recall": "scored",
        "context_utilisation": "scored",
    }
    assert api.get("/api/v1/trace/history/999999").status_code == 404


def test_history_is_not_the_post_view(api):
    assert api.post("/api/v1/trace/history", {"query": "x"}, format="json").status_code == 405
    assert api.get("/api/v1/trace").status_code == 405


def test_admin_pages(admin_client, api):
    post(api, PARIS)
    post(api, {**PARIS, "tests": ["bleu"]})
    evaluation = TraceEvaluation.objects.first()
    listing = admin_client.get("/admin/rag/traceevaluation/")
    assert listing.status_code == 200
    assert b"context_recall: 1.00" in listing.content
    assert admin_client.get("/admin/rag/traceevaluation/", {"test": "bleu"}).status_code == 200
    detail = admin_client.get(f"/admin/rag/traceevaluation/{evaluation.pk}/change/")
    assert detail.status_code == 200
    assert b"unsupported_test" in detail.content
    assert Score.objects.filter(subject_kind="rag_evaluation", reason="unsupported").count() == 1


def test_openapi_schema_lists_endpoints(api):
    schema = api.get("/api/schema/", HTTP_ACCEPT="application/json")
    assert schema.status_code == 200
    text = schema.content.decode()
    for path in ('"/trace"', '"/api/v1/trace"', '"/api/v1/trace/history"'):
        assert path in text


def test_query_parameters_are_documented_and_read_from_their_models(api):
    paths = api.get("/api/schema/", HTTP_ACCEPT="application/json").json()["paths"]
    history = {p["name"]: p for p in paths["/api/v1/trace/history"]["get"]["parameters"]}
    assert set(history) == {"test", "outcome", "limit", "offset"}
    assert sorted(history["outcome"]["schema"]["enum"]) == ["missing", "partial", "scored"]
    assert [p["name"] for p in paths["/trace"]["post"]["parameters"]] == ["partial"]
    # As before the models: a blank filter is no filter, and a partial that is not a yes is a no.
    post(api, {**PARIS, "answer": None})
    assert api.get("/api/v1/trace/history", {"outcome": "", "test": ""}).json()["count"] == 1
    assert post(api, {**PARIS, "answer": None}, partial="maybe").json()["evaluation_scores"] == {}
    assert post(api, {**PARIS, "answer": None}, partial="Yes").json()["evaluation_scores"] == {"context_recall": 1.0}


def test_demo_loader_is_idempotent(db):
    from apps.rag.demo import load_demo_trace_evaluations

    assert load_demo_trace_evaluations() == 3
    assert load_demo_trace_evaluations() == 0
    assert sorted(TraceEvaluation.objects.values_list("outcome", flat=True)) == ["missing", "partial", "scored"]


def test_deleting_an_evaluation_in_the_admin_deletes_its_scores(admin_client, api):
    keep = TraceEvaluation.objects.get(pk=int(post(api, PARIS)["X-Trace-Evaluation-Id"]))
    gone = TraceEvaluation.objects.get(pk=int(post(api, AUSTEN)["X-Trace-Evaluation-Id"]))
    response = admin_client.post(
        "/admin/rag/traceevaluation/", {"action": "delete_selected", "_selected_action": [gone.pk], "post": "yes"}
    )
    assert response.status_code == 302
    # Scores name their subject by kind + id: without the service they would outlive it.
    assert not Score.objects.filter(subject_kind="rag_evaluation", subject_id=gone.pk).exists()
    assert Score.objects.filter(subject_kind="rag_evaluation", subject_id=keep.pk).count() == len(PARIS["tests"])


def test_a_page_reads_its_scores_in_one_query_whatever_its_length(api, admin_client):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from tests.rag.factories import TraceEvaluationFactory

    def queries(url, client):
        with CaptureQueriesContext(connection) as captured:
            assert client.get(url).status_code == 200
        return len(captured)

    pages = [
        ("/api/v1/trace/history", api),
        ("/console/rag/", admin_client),
        ("/admin/rag/traceevaluation/", admin_client),
    ]
    TraceEvaluationFactory.create_batch(2)
    [queries(url, client) for url, client in pages]  # the API key and session are cached after a first call
    few = [queries(url, client) for url, client in pages]
    TraceEvaluationFactory.create_batch(8)
    # Ten evaluations cost what two did: one query for the page's Score rows, not one per evaluation.
    assert [queries(url, client) for url, client in pages] == few
