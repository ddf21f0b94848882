"""Read one sample out of the Prometheus text exposition format that /metrics serves."""

import re


def sample(text: str, name: str, **labels) -> float | None:
    """The value of the series `name` with exactly these labels, or None when there is none."""
    for line in text.splitlines():
        if not line.startswith(name + "{"):
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', line.split("}")[0]))
        if all(found.get(k) == v for k, v in labels.items()) and len(found) == len(labels):
            return float(line.rsplit(" ", 1)[1])
    return None
