"""Ratio current/baseline with a confidence interval, and the verdict rule.

Work on the log scale, where a ratio is a difference of means and run-to-run
noise is roughly symmetric. The interval is a pooled two-sample t interval
(scipy's t distribution) on log values, with the spread moderated by a weak prior
(a moderated t, as in limma: a 5 % CV worth two pseudo-samples) and never taken
below a floor on the coefficient of variation, so a baseline of near-identical
samples does not make every small change "significant", and a two-sample
baseline can still call a gross regression.

A metric is flagged only when BOTH hold:
- the point change is beyond its tolerance (no alarms on trivial changes), and
- the interval excludes "no change" (no alarms on noise).
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass

import numpy as np

from perfci.model.verdicts import Direction, Outcome

DEFAULT_CONFIDENCE = 0.995  # two-sided; each direction is a 0.25 % one-sided test
DEFAULT_CV_FLOOR = 0.01
# Prior for the run-level spread (moderated t, as in limma): a CV of 5 % worth two
# pseudo-samples. It keeps a 2-sample baseline (df = 1, where t(0.995) = 64) able to
# call a gross regression, and fades as real samples accumulate.
DEFAULT_PRIOR_CV = 0.05
DEFAULT_PRIOR_DF = 2

VERDICTS = (Outcome.REGRESSION, Outcome.IMPROVEMENT, Outcome.UNCHANGED, Outcome.INCONCLUSIVE, Outcome.NO_BASELINE)


@functools.lru_cache(maxsize=4096)
def t_quantile(q: float, df: float) -> float:
    """Student's t quantile, cached: verdicts ask for few distinct (q, df). scipy.special's
    stdtrit is what stats.t.ppf calls, at a fifth of the import time of scipy.stats (1 s
    here), imported when used so that commands that judge nothing start fast."""
    from scipy.special import stdtrit
    return float(stdtrit(df, q))


POWER = 0.90  # the power at which every minimum detectable effect is stated


def t_half_width(confidence: float, df: float, se: float) -> float:
    """Half the two-sided t interval at `confidence`: the one place an interval is sized."""
    return t_quantile(0.5 + confidence / 2, df) * se


def detectable_shift(level: float, df: float, se: float, power: float = POWER) -> float:
    """The smallest shift (in the units of `se`) a two-sided t test at `level` finds with
    `power`: (t(1 - level/2) + t(power)) x se. Every MDE perfci states is this."""
    return (t_quantile(1 - level / 2, df) + t_quantile(power, df)) * se


def satterthwaite_df(components: list[tuple[float, float]], fallback: float) -> float:
    """Welch-Satterthwaite degrees of freedom of a sum of variance components, each
    (variance, its df); a component with no variance or no df adds nothing; `fallback`
    where none adds anything."""
    total = math.fsum(v for v, _ in components)
    denominator = math.fsum(v * v / d for v, d in components if v > 0 and d > 0)
    return total * total / denominator if denominator > 0 else fallback


def t_two_sided_p(t: float, df: float) -> float:
    """Two-sided p-value of Student's t statistic `t` with `df` degrees of freedom."""
    return float(t_two_sided_ps(np.asarray(t), df))


def t_two_sided_ps(t: np.ndarray, df: float | np.ndarray) -> np.ndarray:
    """t_two_sided_p of many statistics at once."""
    from scipy.special import stdtr
    return 2 * stdtr(df, -np.abs(t))


@dataclass(frozen=True)
class RatioEstimate:
    ratio: float | None          # mean(current) / mean(baseline), geometric
    low: float | None            # interval for the ratio
    high: float | None
    n_current: int
    n_baseline: int
    df: int                      # degrees of freedom of the spread estimate
    cv: float | None             # spread used (after the floor), as a CV
    confidence: float

    def as_dict(self) -> dict:
        return asdict(self)


def ratio_interval(current: list[float], baseline: list[float], confidence: float = DEFAULT_CONFIDENCE,
                   cv_floor: float = DEFAULT_CV_FLOOR, prior_cv: float = DEFAULT_PRIOR_CV,
                   prior_df: int = DEFAULT_PRIOR_DF) -> RatioEstimate:
    """Interval for current/baseline from run-level samples (all > 0).

    Spread: pooled over both groups (df = n_c + n_b - 2) and moderated by the prior
    (prior_df pseudo-samples at prior_cv). With one current run this is the
    baseline's spread; with one sample on each side there is no measured spread at
    all and the interval is None (the verdict then cannot be more than inconclusive)."""
    # plain Python: these are a handful of numbers, and the verdict simulation calls this 10^5 times
    cur, base = [math.log(v) for v in current], [math.log(v) for v in baseline]
    k, n = len(cur), len(base)
    mean_c, mean_b = math.fsum(cur) / k, math.fsum(base) / n
    diff = mean_c - mean_b
    df_data = (k - 1) + (n - 1)
    if df_data <= 0:
        return RatioEstimate(math.exp(diff), None, None, k, n, 0, None, confidence)
    squares = math.fsum((x - mean_c) ** 2 for x in cur) + math.fsum((x - mean_b) ** 2 for x in base)
    df = df_data + prior_df
    pooled_var = (squares + prior_df * math.log1p(prior_cv) ** 2) / df
    sd = max(math.sqrt(pooled_var), math.log1p(cv_floor))
    half = t_half_width(confidence, df, sd * math.sqrt(1 / k + 1 / n))
    return RatioEstimate(math.exp(diff), math.exp(diff - half), math.exp(diff + half), k, n, df,
                         math.expm1(sd), confidence)


def estimate_p(est: RatioEstimate) -> float | None:
    """Two-sided p of "no change" behind a ratio estimate: its t statistic recovered from
    the interval (symmetric on the log scale, at its confidence with its df). None
    without an interval."""
    if est.ratio is None or est.low is None or est.high is None or est.df <= 0:
        return None
    half = math.log(est.high / est.low) / 2
    if half <= 0:
        return 1.0 if est.ratio == 1 else 0.0
    se = half / t_quantile(0.5 + est.confidence / 2, est.df)
    return t_two_sided_p(math.log(est.ratio) / se, est.df)


@dataclass(frozen=True)
class Verdict:
    verdict: Outcome
    change_pct: float | None     # signed change of the metric, current vs baseline
    estimate: RatioEstimate | None
    tolerance: float
    direction: Direction
    reason: str = ""


def judge(current: list[float], baseline: list[float], direction: Direction, tolerance: float,
          confidence: float = DEFAULT_CONFIDENCE, cv_floor: float = DEFAULT_CV_FLOOR,
          prior_cv: float = DEFAULT_PRIOR_CV, floor: float = 0.0, prior_df: int = DEFAULT_PRIOR_DF) -> Verdict:
    """The verdict for one metric. `direction`: Direction.HIGHER or Direction.LOWER is better;
    `floor`: an absolute change below it is unchanged, whatever its ratio."""
    if not baseline:
        return Verdict(Outcome.NO_BASELINE, None, None, tolerance, direction, "no baseline samples for this metric")
    if not current:
        return Verdict(Outcome.INCONCLUSIVE, None, None, tolerance, direction, "no current value")
    if (early := before_ratio(current, baseline, direction, tolerance, floor)) is not None:
        return early
    return judge_estimate(ratio_interval(current, baseline, confidence, cv_floor, prior_cv, prior_df), direction,
                          tolerance)


def paired_interval(ratios: list[float], confidence: float = DEFAULT_CONFIDENCE) -> RatioEstimate:
    """Interval for the typical ratio B/A from paired rounds (one ratio per round):
    a one-sample t interval on log ratios (what scipy's ttest_1samp gives), so
    round-to-round drift common to A and B cancels."""
    logs = np.log(np.asarray(ratios, float))
    k = len(logs)
    center = float(logs.mean())
    if k < 2:
        return RatioEstimate(math.exp(center), None, None, k, k, 0, None, confidence)
    if float(logs.std()) == 0.0:  # identical ratios: scipy's interval would be nan
        return RatioEstimate(math.exp(center), math.exp(center), math.exp(center), k, k, k - 1, 0.0, confidence)
    sd = float(logs.std(ddof=1))
    half = t_half_width(confidence, k - 1, sd / math.sqrt(k))
    return RatioEstimate(math.exp(center), math.exp(center - half), math.exp(center + half), k, k, k - 1,
                         math.expm1(sd), confidence)


def signed_change(change: float, direction: Direction) -> float:
    """A relative change with its sign turned so that positive is better."""
    return change if direction == Direction.HIGHER else -change


def worse_beyond(change: float, direction: Direction, tolerance: float) -> bool:
    """THE rule of "worse": a relative change beyond `tolerance` on the bad side. compare,
    the A/Bs, change points and the history's held-out nights all ask it here."""
    return signed_change(change, direction) < -tolerance


def below_floor(baseline_mean: float, current_mean: float, floor: float) -> bool:
    """An absolute change smaller than the metric's floor is no change, whatever its ratio."""
    return bool(floor) and abs(current_mean - baseline_mean) < floor


def before_ratio(current: list[float], baseline: list[float], direction: Direction, tolerance: float,
                 floor: float = 0.0) -> Verdict | None:
    """The rules that come before any ratio: the absolute floor, and zero or negative
    values (no ratio). None: a ratio can be taken."""
    c_mean, b_mean = (sum(current) / len(current), sum(baseline) / len(baseline)) if floor else (0.0, 0.0)
    if below_floor(b_mean, c_mean, floor):
        change = (c_mean / b_mean - 1) * 100 if b_mean > 0 else None
        return Verdict(Outcome.UNCHANGED, change, None, tolerance, direction,
                       f"change of {c_mean - b_mean:+.3g} is below the metric's absolute floor {floor:g}")
    values = [*current, *baseline]
    if any(v is None or v <= 0 for v in values):
        if all(v == 0 for v in values):
            return Verdict(Outcome.UNCHANGED, 0.0, None, tolerance, direction, "zero on both sides")
        return Verdict(Outcome.INCONCLUSIVE, None, None, tolerance, direction,
                       "zero or negative values: no ratio (counter absent on one side?)")
    return None


def judge_estimate(est: RatioEstimate, direction: Direction, tolerance: float) -> Verdict:
    """The verdict rule applied to a ratio estimate (shared by compare and A/B)."""
    assert est.ratio is not None
    change = est.ratio - 1
    worse = worse_beyond(change, direction, tolerance)
    better = worse_beyond(-change, direction, tolerance)
    if not (worse or better):
        return Verdict(Outcome.UNCHANGED, change * 100, est, tolerance, direction, "within tolerance")
    if est.low is None or est.high is None:
        return Verdict(Outcome.INCONCLUSIVE, change * 100, est, tolerance, direction,
                       "beyond tolerance, but there is no spread to judge it by (too few samples)")
    if est.low <= 1 <= est.high:
        return Verdict(Outcome.INCONCLUSIVE, change * 100, est, tolerance, direction,
                       "beyond tolerance, but the interval includes no change (noise)")
    return Verdict(Outcome.REGRESSION if worse else Outcome.IMPROVEMENT, change * 100, est, tolerance, direction,
                   "beyond tolerance and the interval excludes no change")
