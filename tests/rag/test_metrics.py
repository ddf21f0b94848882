import asyncio
import random
import warnings

import pytest

from apps.rag.metrics import lexical
from apps.rag.metrics.evaluate import score_metrics
from apps.rag.payload import TracePayload


def _ragas(metric_class, retrieved, reference):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from ragas.dataset_schema import SingleTurnSample
        from ragas.metrics import IDBasedContextPrecision, IDBasedContextRecall
    metric = {"recall": IDBasedContextRecall, "precision": IDBasedContextPrecision}[metric_class]()
    sample = SingleTurnSample(retrieved_context_ids=retrieved, reference_context_ids=reference)
    return asyncio.run(metric.single_turn_ascore(sample))


def test_id_based_metrics_match_ragas_on_generated_samples():
    rng = random.Random(20261122)
    pool = [f"doc{i}" for i in range(12)]
    for _ in range(150):
        retrieved = rng.sample(pool, rng.randint(1, 8))
        reference = rng.sample(pool, rng.randint(1, 6))
        payload = TracePayload(
            tests=["context_recall", "context_precision"],
            relevant_context_ids=reference,
            contexts=[{"id": i, "text": f"text of {i}"} for i in retrieved],
        )
        scoring = score_metrics(payload.tests, payload, use_llm=False)
        recall, precision = scoring.details["context_recall"], scoring.details["context_precision"]
        assert scoring.scores["context_recall"] == pytest.approx(_ragas("recall", retrieved, reference))
        assert scoring.scores["context_precision"] == pytest.approx(_ragas("precision", retrieved, reference))
        # The details explain the score exactly.
        assert scoring.scores["context_recall"] == recall["found_relevant_count"] / recall["total_relevant_count"]
        assert scoring.scores["context_precision"] == (
            precision["relevant_retrieved_count"] / precision["total_retrieved_count"]
        )


def test_tokenisation_and_stop_words():
    assert lexical.tokens("France's CAPITAL, Zürich!") == ["france", "s", "capital", "zürich"]
    assert lexical.content_tokens("What is the capital of France's?") == {"capital", "france"}
    assert lexical.normalise_answer("The  Paris!") == "paris"


def test_context_utilisation_definition():
    score, details = lexical.context_utilisation(
        contexts=["Paris is the capital of France.", "Lyon is in France."], answer="Paris, the French capital"
    )
    assert details["overlap"] == ["capital", "paris"]
    assert (details["overlap_tokens"], details["context_tokens_total"]) == (2, 4)
    assert score == 0.5
    score, details = lexical.context_utilisation(contexts=["it is the"], answer="x")
    assert score is None and details["status"] == "skipped"


def test_faithfulness_per_sentence_verdicts():
    score, details = lexical.faithfulness(
        contexts=["Jane Austen authored Pride and Prejudice in 1813."],
        answer="Jane Austen wrote Pride and Prejudice. She lived on Mars with seven robots! It is.",
    )
    verdicts = details["sentences"]
    assert [v["supported"] for v in verdicts] == [True, False]  # "It is." has no content token: not judged
    assert verdicts[0]["unsupported_tokens"] == ["wrote"]
    assert verdicts[0]["coverage"] == 4 / 5
    assert score == 0.5 and details["judged_sentences"] == 2 and details["supported_sentences"] == 1


def test_answer_relevancy_lexical():
    score, details = lexical.answer_relevancy(
        question="What is the capital of France?", answer="The capital of France is Paris."
    )
    assert score == 1.0 and details["matched_tokens"] == ["capital", "france"]
    score, _ = lexical.answer_relevancy(question="What is the capital of France?", answer="Paris")
    assert score == 0.0
    score, details = lexical.answer_relevancy(
        question="What is the capital of France?", answer="I don't know the capital of France."
    )
    assert score == 0.0 and details["noncommittal"]


def test_answer_accuracy_similarity_fallback_is_ragas_levenshtein():
    from rapidfuzz.distance import Levenshtein

    payload = TracePayload(tests=["answer_accuracy"], answer="Pariss", ground_truth="Paris")
    scoring = score_metrics(payload.tests, payload, use_llm=False)
    details = scoring.details["answer_accuracy"]
    assert details["method"] == "ragas:NonLLMStringSimilarity(levenshtein)"
    assert scoring.scores["answer_accuracy"] == pytest.approx(1 - Levenshtein.normalized_distance("paris", "pariss"))


def test_ragas_loaded_once():
    from apps.rag.metrics import ragas_backend

    assert ragas_backend.ragas_offline() is ragas_backend.ragas_offline()


def test_answer_accuracy_without_word_characters_is_skipped_not_scored():
    payload = TracePayload(tests=["answer_accuracy"], answer="?!", ground_truth="...")
    scoring = score_metrics(payload.tests, payload, use_llm=False)
    assert scoring.scores["answer_accuracy"] is None
    assert scoring.details["answer_accuracy"]["status"] == "skipped"
    payload = TracePayload(tests=["answer_accuracy"], answer="Paris", ground_truth=["...", "Paris"])
    assert score_metrics(payload.tests, payload, use_llm=False).scores["answer_accuracy"] == 1.0
