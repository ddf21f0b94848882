"""A judge's fingerprint: what produced a verdict (judge kind, model, prompt template, evalsite's
judge version), recorded with run verdicts and agentic evaluations alike, so that results of
different judges are never compared as if only the judged system had changed."""

import hashlib
import json

import orjson

# evalsite's own judging logic (pass rules, parsing, heuristics). Bump it when a change in evalsite
# alone can change verdicts.
JUDGE_VERSION = "2"
HASH_CHARS = 12


def template_hash(template: str) -> str:
    return hashlib.sha256(template.encode()).hexdigest()[:HASH_CHARS]


def judge_fingerprint(
    *, judge: str, model: str | None = None, server_model: str | None = None, template: str | None = None
) -> dict:
    """judge kind ("llm"; "llm-batch", the run judge asking for all of an item's verdicts in one
    request; or the deterministic judge's label), model, the model the server says answered (only
    when it differs), the prompt template's short sha256 and evalsite's judge version."""
    fingerprint = {
        "judge": judge,
        "model": model,
        "prompt_template": template_hash(template) if template else None,
        "judge_version": JUDGE_VERSION,
    }
    if server_model and server_model != model:
        fingerprint["server_model"] = server_model
    return fingerprint


def canonical_json(value) -> bytes:
    """`value` as JSON with sorted keys, for hashing what a judge was given. orjson's bytes for every
    value orjson encodes, so fingerprints stored before stay valid. orjson refuses integers past 64
    bits and nesting past 255 levels, and rows stored before the storage checks can hold both (jsonb
    keeps 1e20 as 100000000000000000000, read back as an int): those go through the stdlib encoder,
    which has neither limit, with the same conventions (compact, sorted, UTF-8, str() for other
    types), so the same value always gives the same bytes."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS, default=str)
    except orjson.JSONEncodeError:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str).encode()
