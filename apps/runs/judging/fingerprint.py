"""Judge fingerprints of run verdicts: the distinct judges of a run and what differs between two
runs' judges (a new judge model or prompt moves pass rates by itself)."""

import hashlib
import json

# The parts that identify the judge; a criterion's text tells verdicts of one run apart, not judges.
JUDGE_KEYS = ("judge", "model", "server_model", "prompt_template", "rubric_version", "judge_version")


def judge_part(fingerprint: dict) -> dict:
    return {key: fingerprint[key] for key in JUDGE_KEYS if fingerprint.get(key) is not None}


def distinct_judges(fingerprints) -> list[dict]:
    """The distinct judge parts of verdict fingerprints, in a stable order."""
    seen = {}
    for fingerprint in fingerprints:
        if fingerprint:
            part = judge_part(fingerprint)
            seen.setdefault(tuple(sorted((k, str(v)) for k, v in part.items())), part)
    return [seen[key] for key in sorted(seen)]


def judge_changes(base: list[dict], head: list[dict]) -> list[str]:
    """What differs between two runs' judges, in words ("prompt template 3f2a… → 9c1d…"); empty
    when they were judged alike."""
    if base == head:
        return []
    changes = []
    for key, words in (
        ("judge", "judge"),
        ("model", "model"),
        ("server_model", "server model"),
        ("prompt_template", "prompt template"),
        ("rubric_version", "rubric version"),
        ("judge_version", "judge version"),
    ):
        before = sorted({str(f.get(key)) for f in base if f.get(key) is not None})
        after = sorted({str(f.get(key)) for f in head if f.get(key) is not None})
        if before != after:
            if key == "prompt_template":
                before, after = [v[:4] + "…" for v in before], [v[:4] + "…" for v in after]
            changes.append(f"{words} {', '.join(before) or 'none'} → {', '.join(after) or 'none'}")
    return changes or ["fingerprints differ"]


def judges_hash(judges: list[dict]) -> str:
    """A short, stable hash of distinct judges (distinct_judges' output): two results with the same
    hash were judged alike. Empty for none."""
    if not judges:
        return ""
    return hashlib.sha256(json.dumps(judges, sort_keys=True, default=str).encode()).hexdigest()[:12]
