"""A judge's fingerprint: what produced a verdict (judge kind, model, prompt template, evalsite's
judge version), recorded with run verdicts and agentic evaluations alike, so that results of
different judges are never compared as if only the judged system had changed."""

import hashlib

# evalsite's own judging logic (pass rules, parsing, heuristics). Bump it when a change in evalsite
# alone can change verdicts.
JUDGE_VERSION = "2"
HASH_CHARS = 12


def template_hash(template: str) -> str:
    return hashlib.sha256(template.encode()).hexdigest()[:HASH_CHARS]


def judge_fingerprint(*, judge: str, model: str | None = None, server_model: str | None = None,
                      template: str | None = None) -> dict:
    """judge kind ("llm"; "llm-batch", the run judge asking for all of an item's verdicts in one
    request; or the deterministic judge's label), model, the model the server says answered (only
    when it differs), the prompt template's short sha256 and evalsite's judge version."""
    fingerprint = {"judge": judge, "model": model, "prompt_template": template_hash(template) if template else None,
                   "judge_version": JUDGE_VERSION}
    if server_model and server_model != model:
        fingerprint["server_model"] = server_model
    return fingerprint
