"""Helpers shared by the versioned heads (rubrics, test sets): ETags for optimistic concurrency and
a readable diff between two snapshots."""

import difflib
import json
import re

_ETAG = re.compile(r'^\s*(?:W/)?"?v?(\d+)"?\s*$')


def version_etag(version: int) -> str:
    return f'"v{version}"'


def parse_if_match(header: str | None) -> int | None:
    """The version an If-Match header names ("v3", W/"v3" or 3); None when absent or "*"."""
    if header is None or header.strip() in ("", "*"):
        return None
    match = _ETAG.match(header.split(",")[0])
    if match is None:
        from apps.core.errors import InvalidInputError

        raise InvalidInputError(f"If-Match must name a version such as \"v3\", got {header!r}")
    return int(match.group(1))


def snapshot_lines(snapshot: dict) -> list[str]:
    return json.dumps(snapshot, indent=2, ensure_ascii=False, sort_keys=False).splitlines()


def snapshot_diff(old: dict, new: dict, *, old_label: str, new_label: str) -> list[tuple[str, str]]:
    """A unified diff of two snapshots' indented JSON, as (kind, line) pairs where kind is
    "add", "remove", "hunk" or "context", so a template can colour it."""
    lines = []
    for line in difflib.unified_diff(snapshot_lines(old), snapshot_lines(new), fromfile=old_label,
                                     tofile=new_label, lineterm="", n=3):
        if line.startswith(("---", "+++")):
            kind = "header"
        elif line.startswith("@@"):
            kind = "hunk"
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "remove"
        else:
            kind = "context"
        lines.append((kind, line))
    return lines
