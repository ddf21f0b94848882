"""The text versions are frozen: every score labelled heuristic:v1 or lexical:v1 depends on them, so
each version's tokens, stop words and stems are pinned here on one sample. A failure means a version
was edited; add a new version instead (and a new label for the judge that moves to it)."""

import dataclasses

import pytest

from apps.core import text

SAMPLE = "The employee's PTO accruals: Zürich offices carry 1.5 days monthly, and it's ｃａｐｉｔａｌ!"


def test_agentic_v1():
    v = text.AGENTIC_V1
    assert v.words(SAMPLE) == [
        "the",
        "employee",
        "s",
        "pto",
        "accruals",
        "z",
        "rich",
        "offices",
        "carry",
        "1",
        "5",
        "days",
        "monthly",
        "and",
        "it",
        "s",
    ]
    assert v.tokens(SAMPLE) == [
        "employee",
        "s",
        "pto",
        "accruals",
        "z",
        "rich",
        "offices",
        "carry",
        "1",
        "5",
        "days",
        "monthly",
        "s",
    ]
    assert [v.stem(w) for w in ("clusters", "running", "deleted", "buses", "is", "status")] == [
        "cluster",
        "runn",
        "delet",
        "bus",
        "is",
        "statu",
    ]
    assert len(v.stopwords) == 41 and "k8s" in v.stopwords


def test_criteria_v1():
    v = text.CRITERIA_V1
    assert v.words(SAMPLE) == [
        "the",
        "employee's",
        "pto",
        "accruals",
        "z",
        "rich",
        "offices",
        "carry",
        "1",
        "5",
        "days",
        "monthly",
        "and",
        "it's",
    ]
    assert v.tokens(SAMPLE) == ["employee's", "pto", "accruals", "rich", "offices", "carry", "days", "monthly", "it's"]
    assert [v.stem(w) for w in ("accruals", "monthly", "carries", "payment", "notes", "ties")] == [
        "accrual",
        "month",
        "carry",
        "pay",
        "not",
        "tie",
    ]
    assert len(v.stopwords) == 63 and "hello" in v.stopwords


def test_lexical_v1():
    v = text.LEXICAL_V1
    assert v.words(SAMPLE) == [
        "the",
        "employee",
        "s",
        "pto",
        "accruals",
        "zürich",
        "offices",
        "carry",
        "1",
        "5",
        "days",
        "monthly",
        "and",
        "it",
        "s",
        "capital",
    ]
    assert v.tokens(SAMPLE) == [
        "employee",
        "pto",
        "accruals",
        "zürich",
        "offices",
        "carry",
        "1",
        "5",
        "days",
        "monthly",
        "capital",
    ]
    assert v.stem("accruals") == "accruals"
    assert len(v.stopwords) == 132


def test_retrieval_v1_starts_as_criteria_v1_unstemmed():
    assert text.RETRIEVAL_V1.tokens(SAMPLE) == text.CRITERIA_V1.tokens(SAMPLE)
    assert text.RETRIEVAL_V1.stem("accruals") == "accruals"


def test_a_version_cannot_be_changed_in_place():
    with pytest.raises(dataclasses.FrozenInstanceError):
        text.CRITERIA_V1.stopwords = frozenset()  # type: ignore[misc]
    assert isinstance(text.CRITERIA_V1.stopwords, frozenset)
