"""Score bands shared by every evaluator (the contract's "Score Interpretation" table)."""

# Lower bound of each band, best first; a score belongs to the first band whose bound it reaches.
BANDS: tuple[tuple[str, float], ...] = (
    ("excellent", 0.90),
    ("good", 0.75),
    ("acceptable", 0.60),
    ("poor", 0.40),
    ("failed", 0.0),
)
RATINGS: tuple[str, ...] = tuple(name for name, _ in BANDS)


def rating_for(score: float | None) -> str | None:
    """The band of a 0..1 score; None for a missing score (nothing was scored, nothing to rate)."""
    if score is None:
        return None
    for name, lower in BANDS:
        if score >= lower:
            return name
    return "failed"
