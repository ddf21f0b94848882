"""`query` → TracePayload. A JSON object (as a string, or already an object) is read as the canonical
payload, leniently about the forms people send; anything else is natural language, read by the LLM
when one is configured and by the rule-based extractor otherwise (or when the LLM fails).

Everything that cannot be turned into a payload raises QueryParseError, which the API answers with
400 as the contract's code does.
"""

import orjson

from .nl import parse_natural_language
from .query_object import ParsedQuery, QueryParseError, normalise_object, validate_payload


def parse_query(query, *, use_llm: bool | None = None) -> ParsedQuery:
    if isinstance(query, dict):
        return _from_object(query)
    text = query.strip()
    if text[:1] in '{["' or text in ("null", "true", "false"):
        try:
            value = orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            raise QueryParseError(f"query looks like JSON but does not parse: {exc}") from None
        if not isinstance(value, dict):
            raise QueryParseError(f"query JSON must be an object, got {type(value).__name__}")
        return _from_object(value)
    return parse_natural_language(text, use_llm=use_llm)


def _from_object(raw: dict) -> ParsedQuery:
    data, notes = normalise_object(raw)
    return ParsedQuery(payload=validate_payload(data), source="json", notes=notes)
