"""Correctness of a V1 answer against the expected answer."""

import re

from apps.core.text import CRITERIA_V1

from . import llm
from .types import JUDGE_HEURISTIC, Transcript, Verdict

# Pinned: these verdicts depend on exactly this tokenizer, stop list and stemmer.
TEXT = CRITERIA_V1
# Words that describe the evaluation rather than the content the answer should carry.
EVAL_WORDS = frozenset(
    "agent bot assistant response responses answer answers reply replies user employee customer provides provide "
    "provided includes include including mentions mention mentioned explains explain gives give states state "
    "correctly correct accurate accurately clearly clear properly appropriate appropriately relevant information "
    "details detail refers refer asks ask should must not does did question questions request requests "
    "retrieves retrieve searches search looks look up find finds found uses use using kb knowledge base says say "
    "tells tell notes note confirms confirm informs inform offers offer describes describe lists list "
    "acknowledges acknowledge hands hand".split()
)
# Share of the expected answer's content words an answer must contain to be judged correct.
COVERAGE_TO_PASS = 0.6


def _content_terms(text: str) -> list[str]:
    seen, terms = set(), []
    for word in TEXT.tokens(text):
        if word in EVAL_WORDS or word.isdigit() and len(word) < 2:
            continue
        if TEXT.stem(word) not in seen:
            seen.add(TEXT.stem(word))
            terms.append(word)
    return terms


def _coverage(terms: list[str], text: str) -> tuple[list[str], list[str]]:
    present = {TEXT.stem(w) for w in TEXT.tokens(text)}
    found = [t for t in terms if TEXT.stem(t) in present]
    return found, [t for t in terms if t not in found]


def _normalise(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def judge_answer(judge, *, question: str, answer: str, expected: str) -> Verdict:
    if not expected.strip():
        return Verdict.skipped(judge.label, "The question has no expected answer to compare with.")
    if judge.client is not None:
        transcript = Transcript(
            messages=[{"role": "user", "content": question}, {"role": "assistant", "content": answer}], tool_calls=[]
        )
        return llm.judge_criterion(judge.client, f"The answer agrees with the expected answer: {expected}", transcript)
    if _normalise(answer) == _normalise(expected):
        return Verdict.of(
            passed=True,
            score=1.0,
            reasoning="The answer matches the expected answer exactly (after normalising case and punctuation).",
            judge=JUDGE_HEURISTIC,
        )
    terms = _content_terms(expected)
    if not terms:
        return Verdict.skipped(
            JUDGE_HEURISTIC, "The expected answer has no content words the heuristic judge can look for."
        )
    found, missing = _coverage(terms, answer)
    share = len(found) / len(terms)
    reasoning = f"The answer contains {len(found)} of the expected answer's {len(terms)} key terms"
    reasoning += f" (missing: {', '.join(missing)})." if missing else "."
    return Verdict.of(passed=share >= COVERAGE_TO_PASS, score=share, reasoning=reasoning, judge=JUDGE_HEURISTIC)
