"""Query-string models for the API: one pydantic model per operation's query parameters, read with
`query_of` and documented with `query_parameters`, so the document and the validation are one model.

Kept in apps.rag for now: a shared helper for every app is being written in apps.core (issue 22);
this module should give way to it."""

import enum
import types
import typing
from typing import TypeVar

from drf_spectacular.utils import OpenApiParameter
from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)


def query_of(model: type[M], request) -> M:
    """The request's query parameters as `model`; a ValidationError becomes the API's 422."""
    return model.model_validate(dict(request.query_params.items()))


def _plain(annotation):
    """`X | None` -> X: a query parameter is absent rather than null."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        present = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        if len(present) == 1:
            return present[0]
    return annotation


def query_parameters(*models: type[BaseModel]) -> list[OpenApiParameter]:
    parameters = []
    for model in models:
        for name, field in model.model_fields.items():
            kind = _plain(field.annotation)
            enum_values = None
            if isinstance(kind, type) and issubclass(kind, enum.Enum):
                enum_values, kind = [member.value for member in kind], str
            parameters.append(OpenApiParameter(
                field.alias or name, kind if kind in (str, int, float, bool) else str, OpenApiParameter.QUERY,
                required=field.is_required(), description=field.description or "", enum=enum_values))
    return parameters
