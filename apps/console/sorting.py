"""Sortable list columns: `?sort=<column>` ascending, `?sort=-<column>` descending, over a whitelist
of columns per list. Anything else (an unknown column, a stray character) is the list's default order,
never an error: a sort link is bookmarked and outlives renamed columns."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Sort:
    column: str
    descending: bool

    @property
    def param(self) -> str:
        return f"-{self.column}" if self.descending else self.column


def sort_from_param(value: str | None, *, columns, default: str) -> Sort:
    """The sort that `value` asks for when its column is one of `columns`, otherwise `default`."""
    value = (value or "").strip()
    column = value.removeprefix("-")
    if column not in columns:
        column, value = default.removeprefix("-"), default
    return Sort(column=column, descending=value.startswith("-"))
