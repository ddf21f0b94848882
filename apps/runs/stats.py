"""Statistics of a paired comparison of two runs: did run B really get worse than run A, or is
the difference noise? Items are paired by test case id; every distribution comes from scipy."""

# scipy and numpy are imported where they are used: importing scipy.stats takes most of a second,
# and every manage.py command (evalrun --help included) loads this module through the app registry.

SIGNIFICANCE = 0.05
CONFIDENCE = 0.95
# Fixed so that the same two runs always give the same interval (a CI gate must not flicker).
BOOTSTRAP_SEED = 20261123
BOOTSTRAP_RESAMPLES = 9999

WORSE, BETTER, WITHIN_NOISE = "worse", "better", "within_noise"
VERDICT_WORDS = {WORSE: "worse, significant at 95%", BETTER: "better, significant", WITHIN_NOISE: "within noise"}


def wilson_interval(successes: int, trials: int, *, confidence: float = CONFIDENCE) -> list[float] | None:
    """[low, high] of a proportion by the Wilson score interval (scipy), None without trials.
    Over a run's attempts it treats them as independent; attempts of one item are not, so with
    repeats the interval is narrower than an item-level one would be (pass^k is the item-level figure)."""
    if trials <= 0:
        return None
    from scipy.stats import binomtest  # lazy: see the top of the module

    interval = binomtest(successes, trials).proportion_ci(confidence_level=confidence, method="wilson")
    return [round(float(interval.low), 4), round(float(interval.high), 4)]


def change_counts(pairs: list[tuple[bool, bool]]) -> dict[str, int]:
    """(base passed, head passed) pairs counted: both passed, both failed, pass→fail, fail→pass."""
    return {
        "both_passed": sum(1 for b, h in pairs if b and h),
        "both_failed": sum(1 for b, h in pairs if not b and not h),
        "pass_to_fail": sum(1 for b, h in pairs if b and not h),
        "fail_to_pass": sum(1 for b, h in pairs if not b and h),
    }


def mcnemar_p(*, pass_to_fail: int, fail_to_pass: int) -> float:
    """Exact McNemar test: under no change each discordant pair is equally likely either way, so
    the p-value is a two-sided binomial test of pass→fail among the discordant pairs."""
    discordant = pass_to_fail + fail_to_pass
    if discordant == 0:
        return 1.0
    from scipy.stats import binomtest  # lazy: see the top of the module

    return float(binomtest(pass_to_fail, discordant, 0.5, alternative="two-sided").pvalue)


def pass_rate_diff_ci(pairs: list[tuple[float, float]], *, confidence: float = CONFIDENCE,
                      seed: int = BOOTSTRAP_SEED) -> list[float] | None:
    """[low, high] of head's pass rate minus base's, by a paired percentile bootstrap (items
    resampled with both their outcomes). A pair holds each run's pass rate of the item: 0 or 1
    (booleans) with one attempt, the share of passed attempts with repeats, so the interval is over
    attempts while items stay the unit resampled. None with fewer than two pairs; a single point
    where every pair differs by the same amount (nothing to resample).

    The difference of the means is the mean of the per-item differences, which take a handful of
    values (-1, 0, 1 for pass/fail; a few more with repeats). Resampling n items with replacement
    draws each value a multinomial number of times, so the resamples are drawn as those counts
    (scipy's multinomial) instead of as n indices each: the same bootstrap distribution, in memory
    and time that do not grow with n (scipy.stats.bootstrap over 100,000 pairs holds 9,999 x 100,000
    indices: 8 GB)."""
    if len(pairs) < 2:
        return None
    import numpy as np  # lazy: see the top of the module
    from scipy.stats import multinomial

    differences = np.array([float(h) - float(b) for b, h in pairs])
    if np.all(differences == differences[0]):
        return [float(differences[0]), float(differences[0])]
    values, counts = np.unique(differences, return_counts=True)
    n = len(differences)
    draws = multinomial.rvs(n, counts / n, size=BOOTSTRAP_RESAMPLES, random_state=np.random.default_rng(seed))
    means = draws @ values / n
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return [round(float(low), 4), round(float(high), 4)]


def comparison_verdict(*, p: float, pass_to_fail: int, fail_to_pass: int) -> str:
    if p < SIGNIFICANCE and pass_to_fail > fail_to_pass:
        return WORSE
    if p < SIGNIFICANCE and fail_to_pass > pass_to_fail:
        return BETTER
    return WITHIN_NOISE


def paired_statistics(pairs: list[tuple[bool, bool]], rate_pairs: list[tuple[float, float]] | None = None) -> dict:
    """Everything a comparison reports about pass/fail changes: counts, mcnemar_p,
    pass_rate_diff_ci and verdict. `pairs` are the items' canonical verdicts (with repeats: every
    attempt passed), which the counts and McNemar's test use; `rate_pairs`, in the same order, the
    items' pass rates over attempts, which the bootstrap uses (the verdicts themselves by default)."""
    counts = change_counts(pairs)
    p = mcnemar_p(pass_to_fail=counts["pass_to_fail"], fail_to_pass=counts["fail_to_pass"])
    return {"paired_items": len(pairs), "changes": counts, "mcnemar_p": p,
            "pass_rate_diff_ci": pass_rate_diff_ci(pairs if rate_pairs is None else rate_pairs),
            "verdict": comparison_verdict(p=p, pass_to_fail=counts["pass_to_fail"],
                                          fail_to_pass=counts["fail_to_pass"])}
