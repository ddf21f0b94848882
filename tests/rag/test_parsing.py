import pytest

from apps.rag.nl import extract_with_rules
from apps.rag.parsing import parse_query
from apps.rag.query_object import QueryParseError


def test_rules_extract_labelled_multiline_text():
    parsed = extract_with_rules(
        "Please check Context Utilization and faithfulness\n"
        "Question: Who wrote Pride and Prejudice?\n"
        "Predicted answer: Jane Austen.\n"
        "Reference: Jane Austen\n"
        "Reference: Austen\n"
        "Context: Jane Austen authored Pride and Prejudice.\n"
        "Context: It was published in 1813.\n"
        "Relevant contexts: ctx1 and ctx2\n"
    )
    payload = parsed.payload
    assert payload.tests == ["context_utilisation", "faithfulness"]
    assert payload.question == "Who wrote Pride and Prejudice?"
    assert payload.answer == "Jane Austen"
    assert payload.ground_truth == ["Jane Austen", "Austen"]
    assert [c.id for c in payload.contexts] == ["ctx1", "ctx2"]
    assert payload.relevant_context_ids == ["ctx1", "ctx2"]
    assert parsed.source == "natural_language:rules"


def test_rules_tests_label_keeps_unknown_names():
    payload = extract_with_rules("Tests: context_recall, rouge. Context a: x. Relevant: a").payload
    assert payload.tests == ["context_recall", "rouge"]


def test_label_words_inside_values_are_not_labels():
    payload = extract_with_rules(
        "Evaluate faithfulness. Answer: the reference answer: Paris. Context c1: Paris"
    ).payload
    assert payload.answer == "the reference answer: Paris"


@pytest.mark.parametrize("text", ["just some words", "Question: what? Answer: x", "Answer: x. Answer: y. Evaluate"])
def test_rules_refuse_what_they_cannot_read(text):
    with pytest.raises(QueryParseError):
        extract_with_rules(text)


def test_json_with_integer_ids_and_id_object():
    payload = parse_query(
        '{"tests": ["context_recall"], "contexts": {"1": "a", "2": "b"}, "relevant_context_ids": [1]}'
    ).payload
    assert [c.id for c in payload.contexts] == ["1", "2"] and payload.relevant_context_ids == ["1"]


def test_alias_and_canonical_both_given_is_refused():
    with pytest.raises(QueryParseError):
        parse_query('{"tests": ["faithfulness"], "answer": "a", "response": "b"}')
