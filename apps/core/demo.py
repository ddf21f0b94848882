"""Demo data for `make run` (`manage.py seed_demo`).

The data belongs to the apps above core, which core cannot import: each app registers its loader
from its AppConfig.ready, and seed_demo runs them by `order`, lowest first, because one app's demo
data may build on a lower app's (the demo evaluations judge the demo traces).
"""

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class DemoLoader:
    label: str  # seed_demo prints "demo <label>: <count> new"
    order: int
    load: Callable[[], int]  # creates what is missing; returns how many objects were new (0 on a re-run)


_loaders: dict[str, DemoLoader] = {}


def demo_loader_register(*, label: str, order: int, load: Callable[[], int]) -> None:
    """Keyed by label, so registering again (a second ready() call) replaces rather than duplicates."""
    _loaders[label] = DemoLoader(label=label, order=order, load=load)


def demo_loaders() -> list[DemoLoader]:
    return sorted(_loaders.values(), key=lambda loader: loader.order)
