"""Statistics of a paired comparison of two runs: did run B really get worse than run A, or is
the difference noise? Items are paired by test case id; every distribution comes from scipy.

The unit is the item, with its canonical verdict (with repeats: passed only if every attempt
passed), and only items assessed (passed or failed) in both runs enter: an unassessed item has no
verdict to compare. Two figures describe the change and the verdict needs both:

- McNemar's exact test (a two-sided binomial test of pass→fail among the items that changed);
- Tango's score interval for head's pass rate minus base's (Tango 1998, Statistics in Medicine
  17:891-908): the differences d that a score test at d does not reject. Unlike a bootstrap it
  stays honest at small n: 3 of 3 items fail→pass gives [-0.123, 1], not a point.
"""

import math

# scipy is imported where it is used: importing scipy.stats takes most of a second, and every
# manage.py command (evalrun --help included) loads this module through the app registry.

SIGNIFICANCE = 0.05
CONFIDENCE = 0.95

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


def tango_score(delta: float, *, gained: int, lost: int, n: int) -> float:
    """Tango's score statistic for "head's pass rate minus base's is `delta`": with `gained` items
    fail→pass and `lost` pass→fail among n,

        T(delta) = (gained - lost - n·delta) / sqrt(n · (2·q + delta·(1 - delta)))

    where q is the maximum-likelihood estimate of the pass→fail probability under that delta, the
    root of 2n·q² + W·q - lost·delta·(1 - delta) = 0 with W = -gained - lost + (2n - gained + lost)·delta
    (Tango 1998, section 3). T falls as delta grows; at delta = 0 it is McNemar's uncorrected
    statistic (gained - lost) / sqrt(gained + lost)."""
    w = -gained - lost + (2 * n - gained + lost) * delta
    # The discriminant is never negative in exact arithmetic; rounding can make it -1e-17.
    q = (math.sqrt(max(w * w + 8 * n * lost * delta * (1 - delta), 0.0)) - w) / (4 * n)
    variance = n * (2 * q + delta * (1 - delta))
    numerator = gained - lost - n * delta
    if variance <= 0:  # only at delta = ±1, where the data either agree exactly or not at all
        return 0.0 if numerator == 0 else math.copysign(math.inf, numerator)
    return numerator / math.sqrt(variance)


# Root brackets stop this far inside ±1, where the statistic's variance vanishes.
_EDGE = 1e-12


def tango_interval(*, gained: int, lost: int, n: int, confidence: float = CONFIDENCE) -> list[float] | None:
    """[low, high] of head's pass rate minus base's by Tango's score interval, None without items:
    the deltas whose score statistic lies within ±z (z the normal quantile, scipy). Each limit is a
    root of T(delta) = ±z found by Brent's method (scipy.optimize.brentq) between the estimate and
    the boundary, where T crosses it once; a limit is the boundary itself (±1) where the estimate is
    on it (every item gained, or every item lost), and only there."""
    if n <= 0:
        return None
    if not (0 <= gained <= n and 0 <= lost <= n - gained):
        raise ValueError(f"{gained} gained and {lost} lost is not a split of {n} items")
    from scipy.optimize import brentq  # lazy: see the top of the module
    from scipy.stats import norm

    z = float(norm.ppf(1 - (1 - confidence) / 2))
    estimate = (gained - lost) / n

    def score(delta: float) -> float:
        return tango_score(delta, gained=gained, lost=lost, n=n)

    if gained - lost == -n:
        low = -1.0
    else:
        low = brentq(lambda d: score(d) - z, -1 + _EDGE, estimate, xtol=1e-12)
    if gained - lost == n:
        high = 1.0
    else:
        high = brentq(lambda d: score(d) + z, estimate, 1 - _EDGE, xtol=1e-12)
    return [round(low, 4), round(high, 4)]


def comparison_verdict(*, p: float, interval: list[float] | None) -> str:
    """worse or better only when both agree: McNemar's exact p < 0.05 and the interval excludes 0
    on that side; otherwise within noise."""
    if interval is None or p >= SIGNIFICANCE:
        return WITHIN_NOISE
    if interval[1] < 0:
        return WORSE
    if interval[0] > 0:
        return BETTER
    return WITHIN_NOISE


def disagreement(*, p: float, interval: list[float] | None) -> str | None:
    """What the test and the interval disagree on (the verdict is then within noise), None when
    they agree."""
    if interval is None:
        return None
    significant, excludes_zero = p < SIGNIFICANCE, interval[0] > 0 or interval[1] < 0
    if excludes_zero and not significant:
        return (
            "the 95% interval excludes 0 but McNemar's exact test is not significant at 5%: "
            "too few items changed to call it"
        )
    if significant and not excludes_zero:
        return "McNemar's exact test is significant at 5% but the 95% interval includes 0"
    return None


def paired_statistics(pairs: list[tuple[bool, bool]], *, paired_items: int | None = None) -> dict:
    """Everything a comparison reports about pass/fail changes: counts, mcnemar_p,
    pass_rate_diff_ci (Tango), verdict and disagreement. `pairs` are the (base passed, head passed)
    canonical verdicts of the items assessed in both runs (assessed_items); `paired_items` counts
    the items finished in both runs, assessed or not (the denominator the page shows)."""
    counts = change_counts(pairs)
    p = mcnemar_p(pass_to_fail=counts["pass_to_fail"], fail_to_pass=counts["fail_to_pass"])
    interval = tango_interval(gained=counts["fail_to_pass"], lost=counts["pass_to_fail"], n=len(pairs))
    return {
        "paired_items": len(pairs) if paired_items is None else paired_items,
        "assessed_items": len(pairs),
        "changes": counts,
        "mcnemar_p": p,
        "pass_rate_diff_ci": interval,
        "verdict": comparison_verdict(p=p, interval=interval),
        "disagreement": disagreement(p=p, interval=interval),
    }


# --- power planning ------------------------------------------------------------------------------
#
# How many items (x repeats) a comparison of two runs needs to see a drop of `detect` in the pass
# rate, given how much the verdicts move on their own (the flip rate: the share of pairs of attempts
# of an item, judged by the same judge, whose verdicts differ). A normal approximation of the paired
# difference per item D = (mean of its k attempts in run B) - (the same in run A):
# - with no change, an attempt's verdict varies around its item's pass rate p with variance
#   p(1-p), and two attempts differ with probability 2p(1-p), the flip rate f: so per attempt f/2,
#   and Var(D) = 2 (f/2) / k = f/k under the null;
# - a real drop of d moves a share d of the items from pass to fail, adding d(1-d).
# n = (z_{1-alpha/2} sqrt(V0) + z_power sqrt(V1))^2 / d^2, V0 = f/k, V1 = f/k + d(1-d). It is a plan,
# not the gate's test (McNemar over item verdicts): read it as the order of magnitude to aim for.


def items_needed(*, detect: float, power: float, flip_rate: float, repeats: int, alpha: float = SIGNIFICANCE) -> int:
    """Items a paired comparison needs to detect a drop of `detect` (0..1) with `power` at `alpha`,
    each item run `repeats` times, verdicts flipping at `flip_rate` on their own."""
    from scipy.stats import norm  # lazy: see the top of the module

    null_variance = flip_rate / repeats
    alternative_variance = null_variance + detect * (1 - detect)
    z_alpha, z_power = norm.ppf(1 - alpha / 2), norm.ppf(power)
    n = (z_alpha * math.sqrt(null_variance) + z_power * math.sqrt(alternative_variance)) ** 2 / detect**2
    return max(1, math.ceil(n))


def detectable_drop(
    *, items: int, repeats: int, flip_rate: float, power: float = 0.8, alpha: float = SIGNIFICANCE
) -> float | None:
    """The smallest drop in pass rate (to a tenth of a point) a comparison of `items` items x
    `repeats` could detect with `power`; None when not even a drop to zero would be."""
    if items <= 0:
        return None
    for tenths in range(1, 1001):
        drop = tenths / 1000
        if items_needed(detect=drop, power=power, flip_rate=flip_rate, repeats=repeats, alpha=alpha) <= items:
            return drop
    return None
