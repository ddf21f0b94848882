"""Answers built by the pydantic `Out` model that the OpenAPI document shows for the operation.

A view hands its data (a dict or model instance, or a list for a RootModel) to `respond` with the
model it declares in `extend_schema`; what leaves is that model's dump, so a key a selector adds
without adding it to the model is not sent, and a declared field the data lacks is a 500 here
rather than a silent difference from the document. tests/core/test_response_schemas.py checks every
operation's real answer against the document.

The dump stays Python objects (datetimes, UUIDs, the ints of JSON columns): the orjson renderer
writes them as every other answer's, and falls back to the exact stdlib encoder for ints past 64 bits.
"""

from pydantic import BaseModel, Field, ValidationError
from rest_framework import status as http_status
from rest_framework.response import Response


class AnswerShapeError(Exception):
    """The data a view answers with does not fit its Out model: a server bug, so a 500."""


def respond(
    model: type[BaseModel], data, *, status: int = http_status.HTTP_200_OK, headers: dict[str, str] | None = None
) -> Response:
    try:
        answer = model.model_validate(data)
    except ValidationError as exc:
        # Not the client's fault: passed on as a ValidationError, the handler would answer 422.
        raise AnswerShapeError(f"{model.__name__}: {exc}") from exc
    return Response(answer.model_dump(), status=status, headers=headers)


def _is_none(value) -> bool:
    return value is None


def absent_if_none(description: str | None = None):
    """An Out field that some answers leave out rather than sending as null (the shape the
    contracts give); the document shows it as not required."""
    return Field(default=None, exclude_if=_is_none, description=description)
