"""The offline judge (`heuristic:v1`) over its labelled set (tests/runs/heuristic_cases.py).

    .venv/bin/python bench/judge_coverage.py [--verbose]

Prints how many cases it answers (coverage: not skipped), its accuracy where it answers, its false
passes (a pass on a case labelled fail or skipped: there must be none) and every case it answers
differently from the label. Exits 1 on a false pass. Needs no database and no Django settings."""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tests.runs.heuristic_cases import CASES, answer_of, figures, verdict_of  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verbose", action="store_true", help="print every case with the judge's reasoning")
    args = parser.parse_args()
    if args.verbose:
        for labelled in CASES:
            verdict = verdict_of(labelled)
            print(
                f"{labelled['id']:32} expected {labelled['expected']:7} got {answer_of(verdict):7} {verdict.reasoning}"
            )
        print()
    result = figures()
    labels = result["by_label"]
    print(
        f"labelled cases : {result['cases']} ({labels['pass']} pass, {labels['fail']} fail, "
        f"{labels['skipped']} skipped)"
    )
    print(f"coverage       : {result['coverage']:.1%} ({result['answered']} answered, {result['skipped']} skipped)")
    print(f"accuracy       : {result['accuracy']:.1%} where it answers")
    print(
        f"false passes   : {len(result['false_passes'])}"
        + (f" ({', '.join(result['false_passes'])})" if result["false_passes"] else "")
    )
    for case_id, expected, got in result["wrong"]:
        print(f"  differs: {case_id}: expected {expected}, got {got}")
    return 1 if result["false_passes"] else 0


if __name__ == "__main__":
    sys.exit(main())
