"""Precision and recall of every redaction detector over the labelled corpus (tests/redaction/corpus.jsonl).

    .venv/bin/python bench/redaction_corpus.py [--mistakes]

Prints the table docs/redaction.md shows, the corpus size and how long redacting it took. Needs no
database and no Django settings."""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tests.redaction.corpus import evaluate, load, table  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mistakes", action="store_true", help="print every missed and every false span")
    args = parser.parse_args()
    samples = load()
    started = time.perf_counter()
    figures, mistakes = evaluate(samples)
    elapsed = time.perf_counter() - started
    negatives = sum(1 for sample in samples if not sample["spans"])
    print(
        f"{len(samples)} samples ({len(samples) - negatives} with labelled spans, {negatives} without), "
        f"redacted in {elapsed * 1000:.0f} ms\n"
    )
    print(table(figures))
    if args.mistakes:
        print()
        print("\n".join(mistakes) or "no mistakes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
