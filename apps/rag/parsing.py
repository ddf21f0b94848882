"""`query` → TracePayload. A JSON object (as a string, or already an object) is read as the canonical
payload, leniently about the forms people send; anything else is natural language, read by the LLM
when one is configured and by the rule-based extractor otherwise (or when the LLM fails).

Everything that cannot be turned into a payload raises QueryParseError, which the API answers with
400 as the contract's code does.
"""

import re
from dataclasses import dataclass, field

import orjson
from pydantic import ValidationError

from apps.core.exceptions import pydantic_error_detail

from .payload import SUPPORTED_TESTS, TracePayload


class QueryParseError(Exception):
    status_code = 400

    def __init__(self, detail):
        super().__init__(str(detail))
        self.detail = detail


class PayloadLimitError(QueryParseError):
    """A field past its documented size limit: 422 like any other body over a limit, not the
    contract's 400 for a query that cannot be read."""

    status_code = 422


_LIMIT_ERRORS = {"string_too_long", "too_long"}


@dataclass
class ParsedQuery:
    payload: TracePayload
    source: str  # "json", "natural_language:rules" or "natural_language:llm"
    notes: list[str] = field(default_factory=list)
    llm_usage: dict | None = None
    judge: str | None = None


# Ragas' own field names, which people copy from Ragas samples.
KEY_ALIASES = {
    "test": "tests",
    "metrics": "tests",
    "user_input": "question",
    "response": "answer",
    "reference": "ground_truth",
    "ground_truths": "ground_truth",
    "retrieved_contexts": "contexts",
    "context": "contexts",
    "reference_context_ids": "relevant_context_ids",
}
CONTEXT_TEXT_KEYS = ("text", "content", "page_content")


def parse_query(query, *, use_llm: bool | None = None) -> ParsedQuery:
    if isinstance(query, dict):
        return _from_object(query)
    text = query.strip()
    if text[:1] in "{[\"" or text in ("null", "true", "false"):
        try:
            value = orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            raise QueryParseError(f"query looks like JSON but does not parse: {exc}") from None
        if not isinstance(value, dict):
            raise QueryParseError(f"query JSON must be an object, got {type(value).__name__}")
        return _from_object(value)
    from .nl import parse_natural_language

    return parse_natural_language(text, use_llm=use_llm)


def _from_object(raw: dict) -> ParsedQuery:
    data, notes = normalise_object(raw)
    return ParsedQuery(payload=validate_payload(data), source="json", notes=notes)


def validate_payload(data: dict) -> TracePayload:
    try:
        payload = TracePayload.model_validate(data)
    except ValidationError as exc:
        detail = pydantic_error_detail(exc)
        if any(err["type"] in _LIMIT_ERRORS for err in detail):
            raise PayloadLimitError(detail) from None
        raise QueryParseError(detail) from None
    if not payload.tests:
        raise QueryParseError("no tests requested; name at least one of: " + ", ".join(SUPPORTED_TESTS))
    return payload


def normalise_object(raw: dict) -> tuple[dict, list[str]]:
    """Accepted shorthands → the canonical shape, each noted so the caller sees what was assumed."""
    notes: list[str] = []
    data: dict = {}
    for key, value in raw.items():
        canonical = KEY_ALIASES.get(key, key) if isinstance(key, str) else key
        if canonical != key:
            if canonical in raw or canonical in data:
                raise QueryParseError(f"both {key!r} and {canonical!r} given; send one")
            notes.append(f"{key!r} read as {canonical!r}")
        data[canonical] = value

    if isinstance(data.get("tests"), str):
        data["tests"] = [t for t in re.split(r"[,\s]+", data["tests"]) if t]
    if isinstance(data.get("relevant_context_ids"), (str, int)):
        data["relevant_context_ids"] = [data["relevant_context_ids"]]
    if isinstance(data.get("relevant_context_ids"), list):
        data["relevant_context_ids"] = [str(i) if isinstance(i, int) and not isinstance(i, bool) else i
                                        for i in data["relevant_context_ids"]]
    if "contexts" in data:
        data["contexts"] = _normalise_contexts(data["contexts"], notes)
    if data.get("extra") is None:
        data.pop("extra", None)
    return data, notes


def _normalise_contexts(contexts, notes: list[str]):
    if contexts is None:
        return []
    if isinstance(contexts, str):
        contexts = [contexts]
    if isinstance(contexts, dict) and all(isinstance(v, str) for v in contexts.values()):
        notes.append("contexts given as an {id: text} object")
        return [{"id": str(k), "text": v} for k, v in contexts.items()]
    if not isinstance(contexts, list):
        return contexts  # validation names the problem
    out = []
    assigned = []
    for index, item in enumerate(contexts, start=1):
        if isinstance(item, str):
            out.append({"id": f"ctx{index}", "text": item})
            assigned.append(f"ctx{index}")
        elif isinstance(item, dict):
            item = dict(item)
            if "text" not in item:
                for key in CONTEXT_TEXT_KEYS[1:]:
                    if key in item:
                        item["text"] = item.pop(key)
                        break
            if isinstance(item.get("id"), int) and not isinstance(item.get("id"), bool):
                item["id"] = str(item["id"])
            if "id" not in item:
                item["id"] = f"ctx{index}"
                assigned.append(f"ctx{index}")
            out.append(item)
        else:
            out.append(item)
    if assigned:
        notes.append(f"contexts without ids were given ids by position: {', '.join(assigned)}")
    return out
