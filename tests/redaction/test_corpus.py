"""The detectors' precision and recall over the labelled corpus (corpus.jsonl, built by build_corpus.py).

The floors are the issue's targets for e-mail, cards and IBANs, and for the others what was measured
on the corpus (docs/redaction.md has the table; bench/redaction_corpus.py prints it) rounded down, so
a change that makes any detector worse fails here."""

import pytest

from tests.redaction.corpus import evaluate, load

# (precision, recall) floors.
FLOORS = {
    "email": (0.98, 0.99),
    "credit_card": (0.98, 0.99),
    "iban": (0.98, 0.99),
    "phone": (0.98, 0.98),
    "ip_address": (0.98, 0.99),
    "secret": (0.99, 0.99),
}
# The notes build_corpus.py gives each detector's hard negatives.
NEGATIVE_NOTES = {
    "email": {"email hard negative"},
    "credit_card": {"card hard negative", "invalid Luhn"},
    "iban": {"iban hard negative", "invalid IBAN checksum"},
    "phone": {"phone hard negative"},
    "ip_address": {"ip hard negative"},
    "secret": {"secret hard negative"},
}


def test_the_corpus_is_large_and_has_positives_and_hard_negatives_of_every_kind():
    samples = load()
    assert len(samples) >= 300
    negatives = [s for s in samples if not s["spans"]]
    # Hard negatives are what keeps precision honest: at least one in four samples has nothing to redact.
    assert len(negatives) >= len(samples) // 4
    for kind in FLOORS:
        assert sum(1 for s in samples for span in s["spans"] if span["type"] == kind) >= 40, kind
        assert sum(1 for s in negatives if s["note"] in NEGATIVE_NOTES[kind]) >= 8, kind


@pytest.fixture(scope="module")
def figures():
    result, _mistakes = evaluate()
    return result


@pytest.mark.parametrize("kind", sorted(FLOORS))
def test_precision_and_recall_per_detector_meet_their_floor(figures, kind):
    precision_floor, recall_floor = FLOORS[kind]
    measured = figures[kind]
    assert measured.precision >= precision_floor, (kind, measured)
    assert measured.recall >= recall_floor, (kind, measured)
