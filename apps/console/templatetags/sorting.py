"""A sortable column's header cell: a link that sorts by the column (or reverses it when it is
already the sort) and keeps the list's filters, with the current direction shown and told to
assistive technology through aria-sort."""

from django import template
from django.utils.html import format_html

register = template.Library()

ARROWS = {True: "▼", False: "▲"}


@register.simple_tag
def sort_header(label: str, column: str, sort, query: str = "", first: str = "asc", title: str = ""):
    """`sort` is the list's current Sort, `query` its other parameters (urlencoded, without sort and
    page); `first` is the direction a first click sorts in ("desc" for dates and counts)."""
    current = sort.column == column
    descending = (not sort.descending) if current else first == "desc"
    param = f"-{column}" if descending else column
    href = f"?{query}&sort={param}" if query else f"?sort={param}"
    if current:
        state = "descending" if sort.descending else "ascending"
        arrow = format_html(' <span class="sort-arrow" aria-hidden="true">{}</span>', ARROWS[sort.descending])
    else:
        state, arrow = "none", ""
    link_title = f"Sort by {label.lower()}, {'descending' if descending else 'ascending'}"
    return format_html(
        '<th scope="col" aria-sort="{}"{}><a class="sort{}" href="{}" title="{}">{}{}</a></th>',
        state,
        format_html(' title="{}"', title) if title else "",
        " sorted" if current else "",
        href,
        link_title,
        label,
        arrow,
    )
