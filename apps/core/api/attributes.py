"""Reading models into `Out` schemas (`from_attributes`) when an answer shows a little more than the row.

An Out schema with `model_config = ConfigDict(from_attributes=True)` reads its fields off a model
instance, so the schema is the only place that lists them. Two things a row does not hold are added
here rather than by copying every field into a dict: values worked out for this answer (a page of
children, a next-page URL) with `with_attributes`, and a reverse relation's rows with `RelatedRows`.
"""

from typing import Annotated, Any, TypeVar

from pydantic import BeforeValidator

T = TypeVar("T")


class with_attributes:  # noqa: N801 - used like a function: with_attributes(trace, tool_calls=...)
    """`instance` with `extra` attributes on top, for a from_attributes schema to read; the instance
    itself is left alone, so a cached or shared row does not carry one answer's values into another."""

    __slots__ = ("_instance", "_extra")

    def __init__(self, instance: Any, **extra: Any):
        self._instance = instance
        self._extra = extra

    def __getattr__(self, name: str) -> Any:
        extra = object.__getattribute__(self, "_extra")
        if name in extra:
            return extra[name]
        return getattr(object.__getattribute__(self, "_instance"), name)


def _rows(value):
    # A related manager (bot.tools) is not iterable; its prefetched rows are what the answer shows.
    return list(value.all()) if hasattr(value, "all") else value


RelatedRows = Annotated[list[T], BeforeValidator(_rows)]
