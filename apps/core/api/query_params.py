"""OpenAPI query parameters read from the pydantic model that parses the query string.

A view that takes query parameters parses them with one model (`SomeQuery.model_validate(
request.query_params.dict())`) and documents them with the same model:

    @extend_schema(parameters=query_parameters(SomeQuery), ...)

so a parameter's name, type, enum, default, bounds, description and whether it is required are
written once, on the model's field, and the document cannot drift from what the view accepts. A
Literal field becomes an enum; an optional field (`X | None = None`) an optional parameter of type X
(a query string has no null); a field's alias, if it has one, is the parameter's name. Headers and
path parameters are not query models: declare those with OpenApiParameter as before.
"""

from typing import TypeVar

from drf_spectacular.utils import OpenApiParameter
from pydantic import BaseModel

# JSON Schema keys that say nothing to a client about a query parameter (title repeats its name).
_DROPPED = ("title",)


def _resolved(schema: dict, defs: dict) -> dict:
    ref = schema.get("$ref")
    if ref:
        return _resolved(defs[ref.rsplit("/", 1)[-1]], defs)
    return schema


def _without_null(schema: dict, defs: dict) -> dict:
    """`X | None` as X: a parameter is left out, never sent as null."""
    choices = schema.get("anyOf")
    if not choices:
        return _resolved(schema, defs)
    kept = [_resolved(choice, defs) for choice in choices if choice.get("type") != "null"]
    outer = {k: v for k, v in schema.items() if k != "anyOf"}
    return {**kept[0], **outer} if len(kept) == 1 else {**outer, "anyOf": kept}


def query_parameters(model: type[BaseModel]) -> list[OpenApiParameter]:
    """One OpenApiParameter (in: query) per field of `model`, in field order."""
    document = model.model_json_schema(mode="validation")
    defs = document.get("$defs", {})
    required = set(document.get("required", ()))
    parameters = []
    for name, prop in document.get("properties", {}).items():
        schema = {k: v for k, v in _without_null(prop, defs).items() if k not in _DROPPED}
        description = schema.pop("description", None)
        if schema.get("default", ...) is None:
            schema.pop("default")
        parameters.append(
            OpenApiParameter(name, schema, OpenApiParameter.QUERY, required=name in required, description=description)
        )
    return parameters


M = TypeVar("M", bound=BaseModel)


def query_of(model: type[M], request) -> M:
    """The request's query parameters as `model`; a ValidationError becomes the API's 422."""
    return model.model_validate(dict(request.query_params.items()))
