"""Input checks shared by every API: what PostgreSQL cannot store must be refused with a 422,
not discovered as a 500 at INSERT time; and validating a body against its In model, whose
ValidationError the exception handler turns into that 422."""

import re
from typing import Annotated, Any, ClassVar, TypeVar

import orjson
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictStr,
    ValidationError,
    model_validator,
)

from apps.core.api.handlers import pydantic_error_detail

MAX_JSON_DEPTH = 64
# jsonb keeps any number exactly (1e20 becomes the numeric 100000000000000000000) and reads it back
# as a Python int; past 64 bits no JSON encoder we use can write it out again.
JSON_INT_MIN, JSON_INT_MAX = -(2**63), 2**63 - 1
# In orjson's output a number that may be out of range has 19+ digits or an exponent; strings can
# match too, which only costs the exact walk.
_MAYBE_BIG_NUMBER = re.compile(rb"[0-9]{19}|[0-9]e[+0-9]")


def _check_text(value: str, where: str) -> None:
    if "\x00" in value:
        raise ValueError(f"{where} contains a NUL character (\\u0000), which cannot be stored")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"{where} contains an unpaired surrogate; send valid UTF-8 text") from exc


def _walk(value: Any, where: str, depth: int) -> None:
    if depth > MAX_JSON_DEPTH:
        raise ValueError(f"{where} is nested more than {MAX_JSON_DEPTH} levels deep")
    if isinstance(value, str):
        _check_text(value, where)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        if not JSON_INT_MIN <= value <= JSON_INT_MAX:
            raise ValueError(
                f"{where} holds the number {value:g}, outside the 64-bit integer range "
                f"that can be stored and read back; send it as a string"
            )
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_text(str(key), f"a key in {where}")
            _walk(item, where, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _walk(item, where, depth + 1)


def check_storable_json(value: Any, where: str = "value") -> Any:
    """Reject NULs, unpaired surrogates, absurd nesting and numbers outside 64 bits in a JSON value.

    orjson serialises in C and already refuses surrogates, deep nesting and ints past 64 bits, so
    the slow Python walk runs only when the output might hold an escaped NUL or a big number, or to
    name the problem."""
    try:
        encoded = orjson.dumps(value)
    except orjson.JSONEncodeError:
        _walk(value, where, 0)
        raise ValueError(f"{where} cannot be stored as JSON") from None
    if b"\\u0000" in encoded:
        _walk(value, where, 0)
    elif encoded.count(b"[") + encoded.count(b"{") > MAX_JSON_DEPTH or _MAYBE_BIG_NUMBER.search(encoded):
        _walk(value, where, 0)
    return value


def _storable_text(value: str) -> str:
    _check_text(value, "text")
    return value


def _reject_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    return value


Text = Annotated[StrictStr, AfterValidator(_storable_text)]
NonBlankText = Annotated[StrictStr, AfterValidator(_storable_text), AfterValidator(_reject_blank)]
Identifier = Annotated[
    StrictStr, Field(min_length=1, max_length=255), AfterValidator(_storable_text), AfterValidator(_reject_blank)
]
StorableJson = Annotated[Any, AfterValidator(check_storable_json)]


def unique_ids(attribute: str, *, what: str) -> AfterValidator:
    """For a list of rows named by `attribute` (a rubric's rule ids, a test set's item ids): no two
    rows may share a name; None (an id still to be assigned) names nothing."""

    def check(rows):
        seen, duplicates = set(), set()
        for value in (getattr(row, attribute) for row in rows):
            if value is not None:
                (duplicates if str(value) in seen else seen).add(str(value))
        if duplicates:
            raise ValueError(f"duplicate {what}: {', '.join(sorted(duplicates))}")
        return rows

    return AfterValidator(check)


def _none_to_empty_dict(value):
    return {} if value is None else value


JsonObject = Annotated[dict[str, Any], BeforeValidator(_none_to_empty_dict), AfterValidator(check_storable_json)]


class ConfigurationIn(BaseModel):
    """A body of a configuration endpoint (bots, rubrics, test sets, datasets, their imports): a field
    it does not know is a 422 naming it. Dropped silently, an item-level `success_criteria` (it belongs
    in `expected`) once gave a run with no criteria at all.

    `read_only` names the fields of the GET shape (ids, timestamps, counts) that a client may send back
    unchanged when it edits what it fetched: those are ignored, not refused."""

    model_config = ConfigDict(extra="forbid")
    read_only: ClassVar[frozenset[str]] = frozenset()

    @model_validator(mode="before")
    @classmethod
    def _ignore_read_only(cls, data):
        if cls.read_only and isinstance(data, dict):
            return {key: value for key, value in data.items() if key not in cls.read_only}
        return data


M = TypeVar("M", bound=BaseModel)


def validate_body(model: type[M], data) -> M:
    """Validate a parsed request body; a ValidationError reaches the handler and becomes a 422."""
    return model.model_validate(data)


def summarize_errors(exc: ValidationError) -> str:
    """One line per field error, for per-item rejections in batch answers."""
    parts = []
    for err in pydantic_error_detail(exc):
        loc = ".".join(str(p) for p in err["loc"]) or "item"
        parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts)
