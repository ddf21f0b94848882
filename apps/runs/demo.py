"""What a demo run needs, for `make run` and the end-to-end tests: the demo bot, its rubric, its test
set and its question set. Each lives in its own app's demo module; runs is the first layer that
may import all of them."""

from apps.bots.demo import load_demo_bot
from apps.rubrics.demo import load_demo_rubric
from apps.testsets.demo import load_demo_test_sets


def load_demo_evaluation_data() -> int:
    """Create what is missing; returns how many objects were created (0 on a re-run)."""
    return load_demo_bot() + load_demo_rubric() + load_demo_test_sets()
