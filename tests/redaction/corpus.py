"""Precision and recall of the redaction detectors over the labelled corpus (corpus.jsonl).

Used by tests/redaction/test_corpus.py and bench/redaction_corpus.py; plain data, no Django.

With every detector on, as a project would run them, per type:
- recall: of the labelled spans of this type, how many a replaced span of the same type covers
  entirely (a span covered in part still leaks the rest, so it counts as missed);
- precision: of the replaced spans of this type, how many overlap a labelled span of this type.
"""

import json
from dataclasses import dataclass
from pathlib import Path

from apps.core.redaction import DETECTOR_NAMES, RedactionConfig, Redactor

CORPUS = Path(__file__).with_name("corpus.jsonl")


def load() -> list[dict]:
    with CORPUS.open() as lines:
        return [json.loads(line) for line in lines if line.strip()]


@dataclass
class Figures:
    kind: str
    labelled: int = 0
    found: int = 0
    covered: int = 0
    correct: int = 0

    @property
    def recall(self) -> float:
        return self.covered / self.labelled if self.labelled else 1.0

    @property
    def precision(self) -> float:
        return self.correct / self.found if self.found else 1.0


def evaluate(samples: list[dict] | None = None) -> tuple[dict[str, Figures], list[str]]:
    """Figures per detector, and a line per mistake (the sample, what was expected, what was replaced)."""
    redactor = Redactor(RedactionConfig(enabled=True, detectors=DETECTOR_NAMES))
    figures = {kind: Figures(kind) for kind in DETECTOR_NAMES}
    mistakes = []
    for sample in samples if samples is not None else load():
        text = sample["text"]
        expected = [(s["start"], s["end"], s["type"]) for s in sample["spans"]]
        replaced = [(start, end, detector.name) for start, end, detector in redactor.spans(text)]
        for start, end, kind in expected:
            figures[kind].labelled += 1
            if any(k == kind and s <= start and e >= end for s, e, k in replaced):
                figures[kind].covered += 1
            else:
                mistakes.append(f"missed {kind} {text[start:end]!r} in {sample['id']}: {text!r}")
        for start, end, kind in replaced:
            figures[kind].found += 1
            if any(k == kind and s < end and e > start for s, e, k in expected):
                figures[kind].correct += 1
            else:
                mistakes.append(f"false {kind} {text[start:end]!r} in {sample['id']}: {text!r}")
    return figures, mistakes


def table(figures: dict[str, Figures]) -> str:
    lines = ["| detector | labelled spans | replaced | precision | recall |", "|---|---:|---:|---:|---:|"]
    for kind in DETECTOR_NAMES:
        f = figures[kind]
        lines.append(f"| {kind} | {f.labelled} | {f.found} | {f.precision:.3f} | {f.recall:.3f} |")
    return "\n".join(lines)
