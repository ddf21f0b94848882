"""What both readers of a TRACE query (JSON in apps.rag.parsing, natural language in apps.rag.nl)
share: the parsed result, the parse errors, and the normalising and validation of the payload
object they each end with. In a module of its own so neither reader imports the other's module
back (parsing dispatches to nl, and nl finishes with these).
"""

import re
from dataclasses import dataclass, field

from pydantic import ValidationError

from apps.core.api.handlers import pydantic_error_detail

from .payload import SUPPORTED_TESTS, TracePayload


class QueryParseError(Exception):
    """A query that yields no payload. The API answers 400 with `detail` a string, as the contract's
    `HTTPException(status_code=400, detail=str(e))` does; when the payload failed validation its
    field errors (loc, msg, type) ride along under `errors`."""

    status_code = 400

    def __init__(self, detail: str, *, errors: list[dict] | None = None):
        super().__init__(detail)
        self.detail = detail
        self.errors = errors

    def response_body(self) -> dict:
        return {"detail": self.detail, "errors": self.errors} if self.errors else {"detail": self.detail}


class PayloadLimitError(QueryParseError):
    """A field past its documented size limit: 422 like any other body over a limit, not the
    contract's 400 for a query that cannot be read."""

    status_code = 422

    def response_body(self) -> dict:
        # The API's 422 shape everywhere: the field errors are the detail.
        return {"detail": self.errors}


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


def validate_payload(data: dict) -> TracePayload:
    try:
        payload = TracePayload.model_validate(data)
    except ValidationError as exc:
        errors = pydantic_error_detail(exc)
        cls = PayloadLimitError if any(err["type"] in _LIMIT_ERRORS for err in errors) else QueryParseError
        raise cls(_summary(errors), errors=errors) from None
    if not payload.tests:
        raise QueryParseError("no tests requested; name at least one of: " + ", ".join(SUPPORTED_TESTS))
    return payload


def _summary(errors: list[dict]) -> str:
    """The field errors as one sentence, e.g. "invalid payload: contexts: Input should be a valid list"."""
    return "invalid payload: " + "; ".join(
        f"{'.'.join(str(part) for part in err['loc']) or 'payload'}: {err['msg']}" for err in errors
    )


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
        data["relevant_context_ids"] = [
            str(i) if isinstance(i, int) and not isinstance(i, bool) else i for i in data["relevant_context_ids"]
        ]
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
