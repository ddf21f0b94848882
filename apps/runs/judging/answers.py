"""Correctness of a V1 answer against the expected answer."""

import re

from . import llm
from .heuristic import COVERAGE_TO_PASS, _content_terms, _coverage
from .types import JUDGE_HEURISTIC, Transcript, Verdict


def _normalise(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def judge_answer(judge, *, question: str, answer: str, expected: str) -> Verdict:
    if not expected.strip():
        return Verdict.skipped(judge.label, "The question has no expected answer to compare with.")
    if judge.client is not None:
        transcript = Transcript(messages=[{"role": "user", "content": question},
                                          {"role": "assistant", "content": answer}], tool_calls=[])
        return llm.judge_criterion(judge.client, f"The answer agrees with the expected answer: {expected}", transcript)
    if _normalise(answer) == _normalise(expected):
        return Verdict.of(passed=True, score=1.0, reasoning="The answer matches the expected answer exactly "
                                                           "(after normalising case and punctuation).",
                          judge=JUDGE_HEURISTIC)
    terms = _content_terms(expected)
    if not terms:
        return Verdict.skipped(JUDGE_HEURISTIC, "The expected answer has no content words the heuristic judge can look for.")
    found, missing = _coverage(terms, answer)
    share = len(found) / len(terms)
    reasoning = f"The answer contains {len(found)} of the expected answer's {len(terms)} key terms"
    reasoning += f" (missing: {', '.join(missing)})." if missing else "."
    return Verdict.of(passed=share >= COVERAGE_TO_PASS, score=share, reasoning=reasoning, judge=JUDGE_HEURISTIC)
