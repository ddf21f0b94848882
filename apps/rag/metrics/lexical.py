"""The deterministic (no-LLM) TRACE metrics: tokenisation, stop words and the lexical methods.

Every function returns (score or None, details); details hold the numbers the score is computed
from, so a reader can recompute it. Definitions (also in docs/rag.md):

Tokens: the text is NFKC-normalised and casefolded, then split into maximal runs of Unicode word
characters (regex `\\w+`: letters, digits, underscore), so "France's" gives "france" and "s".
Content tokens: tokens that are not among the 132 English stop words of `apps.core.text.LEXICAL_V1`.
Sets of distinct content tokens are compared; nothing is stemmed.
"""

import re

from apps.core.text import LEXICAL_V1
from apps.scores.vocabulary import JudgeStatus

VERSION = "lexical:v1"
# Pinned: every lexical:v1 score depends on exactly this tokenizer and stop list.
TEXT = LEXICAL_V1
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")

# Answers that decline to answer: they address no question, whatever words they share with it.
NONCOMMITTAL = re.compile(
    r"\b(i\s+(do\s+not|don'?t|cannot|can'?t)\s+know|not\s+sure|no\s+(information|idea)|"
    r"cannot\s+(answer|be\s+determined)|unable\s+to\s+(answer|determine))\b",
    re.IGNORECASE,
)
# A sentence is supported when at least this share of its distinct content tokens occur in the contexts.
SUPPORT_THRESHOLD = 0.5


def tokens(text: str) -> list[str]:
    return TEXT.words(text)


def content_tokens(text: str) -> set[str]:
    return set(TEXT.tokens(text))


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def normalise_answer(text: str) -> str:
    """For exact match: NFKC, casefold, punctuation to spaces, articles a/an/the dropped, spaces collapsed."""
    words = tokens(text)
    return " ".join(w for w in words if w not in {"a", "an", "the"})


def context_utilisation(*, contexts: list[str], answer: str) -> tuple[float | None, dict]:
    """Share of the contexts' distinct content tokens that the answer uses.

    score = overlap_tokens / context_tokens_total, where context_tokens_total = |C|, C the distinct
    content tokens of all contexts together, and overlap_tokens = |C ∩ A|, A those of the answer."""
    context_set: set[str] = set()
    for text in contexts:
        context_set |= content_tokens(text)
    overlap = context_set & content_tokens(answer)
    details = {
        "method": VERSION,
        "overlap_tokens": len(overlap),
        "context_tokens_total": len(context_set),
        "overlap": sorted(overlap),
    }
    if not context_set:
        return None, {**details, "status": JudgeStatus.SKIPPED, "reason": "the contexts contain no content tokens"}
    return len(overlap) / len(context_set), details


def faithfulness(*, contexts: list[str], answer: str) -> tuple[float | None, dict]:
    """Share of the answer's sentences supported by the contexts.

    A sentence with content tokens S is supported when |S ∩ C| / |S| >= SUPPORT_THRESHOLD (C: the distinct
    content tokens of all contexts). Sentences without content tokens are not judged.
    score = supported_sentences / judged_sentences."""
    context_set: set[str] = set()
    for text in contexts:
        context_set |= content_tokens(text)
    verdicts = []
    for sentence in sentences(answer):
        sentence_tokens = content_tokens(sentence)
        if not sentence_tokens:
            continue
        supported_tokens = sentence_tokens & context_set
        coverage = len(supported_tokens) / len(sentence_tokens)
        verdicts.append(
            {
                "sentence": sentence,
                "supported_tokens": sorted(supported_tokens),
                "unsupported_tokens": sorted(sentence_tokens - context_set),
                "coverage": coverage,
                "supported": coverage >= SUPPORT_THRESHOLD,
            }
        )
    supported = sum(1 for v in verdicts if v["supported"])
    details = {
        "method": VERSION,
        "threshold": SUPPORT_THRESHOLD,
        "supported_sentences": supported,
        "judged_sentences": len(verdicts),
        "sentences": verdicts,
    }
    if not verdicts:
        return None, {
            **details,
            "status": JudgeStatus.SKIPPED,
            "reason": "the answer has no sentence with content tokens",
        }
    return supported / len(verdicts), details


def answer_relevancy(*, question: str, answer: str) -> tuple[float | None, dict]:
    """Share of the question's distinct content tokens that the answer addresses; 0 for a noncommittal answer.

    score = |Q ∩ A| / |Q| (Q, A: distinct content tokens of question and answer), or 0 when the answer
    matches NONCOMMITTAL ("I don't know", "no information", …)."""
    question_set = content_tokens(question)
    matched = question_set & content_tokens(answer)
    noncommittal = bool(NONCOMMITTAL.search(answer))
    details = {
        "method": VERSION,
        "question_tokens": sorted(question_set),
        "matched_tokens": sorted(matched),
        "noncommittal": noncommittal,
    }
    if not question_set:
        return None, {**details, "status": JudgeStatus.SKIPPED, "reason": "the question has no content tokens"}
    if noncommittal:
        return 0.0, details
    return len(matched) / len(question_set), details
