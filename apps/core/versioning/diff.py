"""A readable diff between two snapshots of a versioned head, for the admin's version history."""

import difflib
import json


def snapshot_lines(snapshot: dict) -> list[str]:
    return json.dumps(snapshot, indent=2, ensure_ascii=False, sort_keys=False).splitlines()


def snapshot_diff(old: dict, new: dict, *, old_label: str, new_label: str) -> list[tuple[str, str]]:
    """A unified diff of two snapshots' indented JSON, as (kind, line) pairs where kind is
    "add", "remove", "hunk" or "context", so a template can colour it."""
    lines = []
    for line in difflib.unified_diff(
        snapshot_lines(old), snapshot_lines(new), fromfile=old_label, tofile=new_label, lineterm="", n=3
    ):
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
