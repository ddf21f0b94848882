"""Score bands and the weighted overall score shared by every evaluator."""

from collections.abc import Mapping

# The contract's table: lower bound of each band, best first.
RATING_BANDS: tuple[tuple[str, float], ...] = (
    ("excellent", 0.90),
    ("good", 0.75),
    ("acceptable", 0.60),
    ("poor", 0.40),
    ("failed", 0.0),
)
RATINGS = tuple(name for name, _ in RATING_BANDS)
# Where a metric's score counts as a pass when a judge's is set against a reviewer's (agreement):
# the "acceptable" band's floor, below which the metric is a failure.
METRIC_PASS = dict(RATING_BANDS)["acceptable"]

AGENTIC_WEIGHTS: Mapping[str, float] = {
    "task_adherence": 0.4,
    "tool_call_accuracy": 0.3,
    "intent_resolution": 0.3,
}


def rating_for(score: float | None) -> str | None:
    if score is None:
        return None
    for name, lower in RATING_BANDS:
        if score >= lower:
            return name
    return "failed"


def weighted_overall(
    scores: Mapping[str, float | None], weights: Mapping[str, float] = AGENTIC_WEIGHTS
) -> float | None:
    """Weighted mean of the metrics that were scored; the weights of the others are spread over
    the scored ones in proportion. A metric that was skipped or errored is left out rather than
    counted as any number, so it can neither drag the overall down nor prop it up. None when
    nothing was scored."""
    scored = {name: scores[name] for name in weights if scores.get(name) is not None}
    if not scored:
        return None
    total_weight = sum(weights[name] for name in scored)
    return round(sum(weights[name] * score for name, score in scored.items()) / total_weight, 4)
