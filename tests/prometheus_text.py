"""Read the Prometheus text exposition format that /metrics serves."""

import re

# A label value may hold escaped quotes and backslashes (\" and \\).
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def _parse(line: str) -> tuple[str, dict[str, str], float]:
    name, brace, rest = line.partition("{")
    if not brace:
        metric, value = line.split(" ")[:2]
        return metric, {}, float(value)
    labels_text, _, value = rest.rpartition("}")
    return name, dict(_LABEL.findall(labels_text)), float(value.split()[0])


def series(text: str, name: str) -> list[tuple[dict[str, str], float]]:
    """Every sample of the series `name` (exact name: `x_bucket`, `x_count`, ...): (labels, value)."""
    found = []
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        metric, labels, value = _parse(line)
        if metric == name:
            found.append((labels, value))
    return found


def sample(text: str, name: str, **labels) -> float | None:
    """The value of the series `name` with exactly these labels, or None when there is none."""
    for found, value in series(text, name):
        if found == labels:
            return value
    return None
