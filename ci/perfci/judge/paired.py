"""Judging paired bursts of an interleaved A/B: few, autocorrelated samples, many
metrics, one verdict per run with a known false-alarm rate.

Per metric, the pairs give differences d_k: log(B_k / A_k) where every value is
positive, else (B_k - A_k) / mean(A) (counters that are zero in some bursts).
Consecutive bursts of a stateful workload are not independent, so the d_k are
averaged in blocks of consecutive pairs: two pairs (one ABBA cycle, so the order
effect, measured as a lag-1 autocorrelation of -0.85 in some counters here, cancels
within a block) while the lag-1 autocorrelation of d is small, else (1 + r) / (1 - r)
(the variance inflation of an AR(1) series), keeping at least `MIN_BLOCKS` blocks. The block means are judged
with a one-sample t test (scipy): a mean difference of zero is "no change".

Two levels of noise. The bursts of one A/B come from one pair of server instances,
and whatever differs between two instances of the same server (setup history, page
placement: constant over all their bursts) does not average out over bursts: a
test on bursts alone gets more false alarms the longer it runs. So an A/B runs
several instance pairs, and the variance of the mean difference is
  within:  sum over instances of (block variance / blocks), / K^2
  between: sigma_I^2 / K
where sigma_I is the spread of one instance pair's true difference: learned by
calibrate from whole A/As (an `InstancePrior`, with its degrees of freedom) and
pooled with what this run's own K instance means show (a moderated t with the prior's
df + K - 1, never the bursts' df: centre_test). From 4 instance pairs the centres also
check the prior, so a learned or default prior that is too small cannot raise the
false-alarm rate. A learned prior is never narrower than the runner default
(`learned_prior`). Without a prior and with one instance this is the burst-only test
(which the report then says).

Two families, two error rates:
- the judged metrics (throughput, latency, the scenario's per-transaction counters:
  what can fail a run) under Holm's step-down: the chance of any false regression
  in a run is at most `ALPHA` (0.5 %: half the 1 % target), however many metrics are judged;
- every other counter ("what moved", explanations, never an alarm) under
  Benjamini-Hochberg at `FDR` (5 %): among the counters said to have moved, at most
  5 % are expected to be noise.
A metric whose pair differences spread more than `UNSTABLE_SD` (standard deviation
of d around its mean: a relative spread of one burst pair) is listed as `unstable`
with its spread, and left out of both families.
A judged metric is a regression when its Holm-adjusted p < ALPHA, it moved the
wrong way, and by at least the minimum effect (default 1 %). It is `unchanged`
only when its interval lies within ± its tolerance; not significant with a wider
interval it is `inconclusive`, "could not see below X %", X being the run's minimum
detectable effect at 90 % power (at Holm's first step, 1 - ALPHA/m). The interval a
judged row shows is the one that decides: at the level of its own Holm step
(decision_level), so it excludes no change exactly when the row is significant.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from perfci.judge.stats import (
    POWER,
    below_floor,
    detectable_shift,
    satterthwaite_df,
    t_half_width,
    t_two_sided_p,
    t_two_sided_ps,
    worse_beyond,
)
from perfci.model.metrics import INSTRUCTIONS, MetricSpec, presentation
from perfci.model.noise import InstancePrior
from perfci.model.verdicts import Outcome

ALPHA = 0.005  # per A/B: half the 1 % target, so that the target holds with room (simulated)
FDR = 0.05
UNSTABLE_SD = 0.25
MAX_LAG1 = 0.2
MIN_BLOCKS = 6
ABBA_BLOCK = 2
DEFAULT_MIN_EFFECT = 0.01
MIN_MEASURED_PAIRS = 2  # per instance pair: fewer judge nothing
# From this many instance pairs (3 df) their centres check the prior (centre_test)
CHECKED_INSTANCES = 4
PENDING = Outcome.INCONCLUSIVE  # a row waiting for its family's adjusted p (judge_table decides every one)

PairTable = Mapping[str, tuple[Sequence[float], Sequence[float]]]  # key -> (A values, B values), pair order


# Without a noise model for a case: the between-instance spread of each metric measured
# on this class of runner, with few degrees of freedom so that the t quantile stays wide.
# From the 26 kept real A/As of rebuild-after-delete (59 instance pairs), the larger of its
# two phases, rounded up (benchmarks/instance_priors.py -> benchmarks/results/instance-
# priors-20261126.md): throughput and latency 1.37 %; statement CPU 0 from its 17 instance
# pairs (it takes throughput's); the work counters spread far more between fresh servers
# (page layout, compression outcomes): page splits 2.9 %, uncompress ops 8.0 %, compress
# failures 8.6 %. A counter never borrows throughput's prior: with it a CPU-only slowdown
# flagged page splits per transaction (B/A 1.060 [1.008, 1.115], #35).
RUNNER_DEFAULT_INSTANCE_SD = 0.015  # throughput, latency, CPU (what sizing plans with: judge/design.py)
RUNNER_DEFAULT_INSTANCE_DF = 4
COUNTER_INSTANCE_SD = {"index_page_splits_per_txn": 0.03, "uncompress_ops_per_txn": 0.08,
                       "compress_failures_per_txn": 0.09}
OTHER_COUNTER_INSTANCE_SD = 0.09  # a counter the kept A/As cannot tell (mostly 0, or below its floor): the largest


# Instructions per transaction counted under callgrind (--measure work), between fresh
# servers from one dataset snapshot (benchmarks/results/work: the stability A/As, MariaDB
# 10.11 microbench): one client reading executes the same code to within 0.01-0.23 %
# (WORK_INSTANCE_SD); a phase that writes or runs several clients does not: purge and page
# cleaning, or the other clients, change what a statement finds (page splits, undo, latch
# waits) with the timing, 0.1-4.7 % (WORK_CONTENDED_INSTANCE_SD). Rounded up; few df, as for time.
WORK_INSTANCE_SD = 0.003
WORK_CONTENDED_INSTANCE_SD = 0.05
# The smallest change of instructions per transaction flagged (at most: --min-effect when
# smaller): their bursts spread ~0.1 %, and code regressions come in 1-3 % steps
WORK_MIN_EFFECT = 0.005


def runner_default_prior(key: str) -> InstancePrior:
    """The runner class's between-instance spread of one judged key ('phase.metric'),
    by its kind: throughput, latency and CPU share one; counted instructions theirs;
    each work counter its own."""
    metric = key.split(".", 1)[-1]
    if presentation(key)[0] == INSTRUCTIONS:
        return InstancePrior(WORK_INSTANCE_SD, RUNNER_DEFAULT_INSTANCE_DF)
    if presentation(key)[0] in ("throughput", "latency", "CPU"):
        return InstancePrior(RUNNER_DEFAULT_INSTANCE_SD, RUNNER_DEFAULT_INSTANCE_DF)
    return InstancePrior(COUNTER_INSTANCE_SD.get(metric, OTHER_COUNTER_INSTANCE_SD), RUNNER_DEFAULT_INSTANCE_DF)


def learned_prior(learned: InstancePrior, default: InstancePrior) -> InstancePrior:
    """What a noise model's learned between-instance spread judges with: never narrower
    than the key's default (a method-of-moments estimate is floored at 0, and 0 with
    49 df made false alarms ~5-10x likelier, #55). A wider one keeps its df; floored, the
    default's df."""
    return learned if learned.sd > default.sd else default


def default_priors(keys) -> dict[str, InstancePrior]:
    """The runner default for every key (what an A/B without a noise model adds)."""
    return {key: runner_default_prior(key) for key in keys}


@dataclass(frozen=True)
class PairedEstimate:
    n_pairs: int
    block: int
    n_blocks: int
    scale: str            # "log" or "relative"
    ratio: float          # B/A
    low: float            # t interval of the ratio at `confidence`
    high: float
    p: float              # two-sided, before family correction
    spread: float         # standard deviation of the pair differences (one pair's relative noise)
    lag1: float
    instances: int = 1
    instance_sd: float = 0.0   # the between-instance sd the interval includes (0: bursts only)
    df: float = 0.0
    se: float = 0.0            # standard error of the mean difference (the decision's)
    confidence: float = 0.95

    def at(self, confidence: float) -> PairedEstimate:
        """The same estimate with its interval at another confidence."""
        if self.se == 0.0 or self.df <= 0:
            return replace(self, confidence=confidence)
        center = _center(self.ratio, self.scale)
        half = t_half_width(confidence, self.df, self.se)
        return replace(self, low=as_ratio(center - half, self.scale), high=as_ratio(center + half, self.scale),
                       confidence=confidence)

    def detectable(self, level: float, power: float = POWER) -> float:
        """The smallest relative change a two-sided test at `level` would have found
        with `power` (the run's minimum detectable effect, MDE)."""
        if self.se == 0.0 or self.df <= 0:
            return 0.0
        return as_ratio(detectable_shift(level, self.df, self.se, power), self.scale) - 1


@dataclass
class PairedVerdict:
    key: str
    spec: MetricSpec | None   # None: an explanatory counter, not judged
    a_mean: float
    b_mean: float
    estimate: PairedEstimate | None
    p_adjusted: float | None
    verdict: Outcome
    reason: str = ""
    mde: float | None = None  # judged rows: the smallest change this run could have found (POWER)

    @property
    def change_pct(self) -> float | None:
        return (self.estimate.ratio - 1) * 100 if self.estimate else None


def differences(a: Sequence[float], b: Sequence[float]) -> tuple[np.ndarray, str]:
    """Per pair: log(B/A) where every value is positive; else the difference relative
    to the mean of both sides, (B - A) / ((mean A + mean B) / 2), which stays finite
    for a counter that is ~0 on one side (fsyncs at commit: 0.001 vs 1 per txn)."""
    av, bv = np.asarray(a, float), np.asarray(b, float)
    if (av > 0).all() and (bv > 0).all():
        return np.log(bv / av), "log"
    scale = (abs(float(av.mean())) + abs(float(bv.mean()))) / 2 or 1.0
    return (bv - av) / scale, "relative"


def _center(ratio: float, scale: str) -> float:
    """as_ratio's inverse."""
    return math.log(ratio) if scale == "log" else 2 * (ratio - 1) / (ratio + 1)


RATIO_CAP = 1e4  # an interval end past 10^4 or 10^-4 only says: unbounded (too few pairs to bound it)


def as_ratio(x: float, scale: str) -> float:
    """A mean difference back to B/A, within [1/RATIO_CAP, RATIO_CAP]: exp for logs (an
    interval of a few pairs on a wide t can reach exp(1000)); for relative differences
    c, mean B / mean A = (1 + c/2) / (1 - c/2) (capped where either mean is ~0)."""
    if scale == "log":
        return min(RATIO_CAP, max(1 / RATIO_CAP, math.exp(min(x, math.log(RATIO_CAP)))))
    if x >= 1.999:
        return RATIO_CAP
    return max(1 / RATIO_CAP, (1 + x / 2) / (1 - x / 2)) if x > -1.999 else 1 / RATIO_CAP


def lag1(d: np.ndarray) -> float:
    if len(d) < 4:
        return 0.0
    c = d - d.mean()
    denominator = float(np.dot(c, c))
    return float(np.dot(c[:-1], c[1:]) / denominator) if denominator > 0 else 0.0


def block_length(d: np.ndarray) -> int:
    """Two pairs (one ABBA cycle: a side measured first then second, or after a freeze
    then straight after its own burst, cancels out), more where d is autocorrelated."""
    r = lag1(d)
    wanted = ABBA_BLOCK if r <= MAX_LAG1 else max(ABBA_BLOCK, math.ceil((1 + r) / (1 - r)) if r < 1 else len(d))
    return max(1, min(wanted, len(d) // MIN_BLOCKS))


def block_means(d: np.ndarray, block: int) -> np.ndarray:
    n = (len(d) // block) * block
    return d[len(d) - n:].reshape(-1, block).mean(axis=1)  # a ragged first block is dropped (warm-up side)


def estimate(a: Sequence[float], b: Sequence[float], prior: InstancePrior | None = None) -> PairedEstimate | None:
    """The paired change B/A of one instance pair with its interval and p-value."""
    return estimate_instances([(a, b)], prior)


def estimate_instances(parts: Sequence[tuple[Sequence[float], Sequence[float]]],
                       prior: InstancePrior | None = None) -> PairedEstimate | None:
    """The paired change B/A over instance pairs (each: A values, B values in pair
    order) with its interval and p-value; None if nothing to judge."""
    parts = [(a, b) for a, b in parts if len(a) >= MIN_MEASURED_PAIRS]
    if not parts:
        return None
    d_all, scale = differences([x for a, _ in parts for x in a], [x for _, b in parts for x in b])
    ds = np.split(d_all, np.cumsum([len(a) for a, _ in parts])[:-1])
    centers, variances, dfs, blocks = [], [], [], []
    for d in ds:
        block = block_length(d)
        means = block_means(d, block)
        if len(means) < 2:
            continue
        centers.append(float(means.mean()))
        variances.append(float(means.var(ddof=1)) / len(means))
        dfs.append(len(means) - 1)
        blocks.append((block, len(means)))
    if not centers:
        return None
    k = len(centers)
    center = statistics_mean(centers)
    centre_sample_var = float(np.var(centers, ddof=1)) if k >= 2 else 0.0
    excess = max(0.0, centre_sample_var - statistics_mean(variances)) if k >= 2 else 0.0
    prior_df, prior_var = (prior.df, prior.sd ** 2) if prior else (0, 0.0)
    instance_df = prior_df + k - 1
    instance_var = (prior_df * prior_var + (k - 1) * excess) / instance_df if instance_df > 0 else 0.0
    spread = float(np.concatenate(ds).std(ddof=1))
    r = lag1(ds[0])
    n_blocks = sum(n for _, n in blocks)

    def ratio_of(x: float) -> float:
        return as_ratio(x, scale)

    common: dict[str, Any] = dict(n_pairs=len(d_all), block=blocks[0][0], n_blocks=n_blocks, scale=scale,
                                  spread=spread, lag1=r,
                                  instances=k, instance_sd=math.sqrt(instance_var))
    se_array, df_array = centre_test(np.array(centers), np.array(variances), sum(dfs), prior_df, prior_var)
    se, df = float(se_array), float(df_array)
    if se == 0.0:
        p = 1.0 if center == 0 else 0.0
        return PairedEstimate(ratio=ratio_of(center), low=ratio_of(center), high=ratio_of(center), p=p, df=0.0, se=0.0,
                              **common)
    p = t_two_sided_p(center / se, df)
    half = t_half_width(0.95, df, se)
    return PairedEstimate(ratio=ratio_of(center), low=ratio_of(center - half), high=ratio_of(center + half), p=p,
                          df=df, se=se, **common)


def centre_test(centers: np.ndarray, variances: np.ndarray, within_df: float, prior_df: float,
                prior_var: float) -> tuple[np.ndarray, np.ndarray]:
    """The standard error and degrees of freedom that judge the mean of K instance pairs'
    centres (each with its within-instance variance); arrays of shape (..., K), so that
    a simulation judges many A/Bs at once (tests/judge/test_level.py).

    One instance pair: the within part (its blocks' df) plus the prior's between part
    (its df), by Welch-Satterthwaite; no prior: the burst-only test.
    Two or more: a moderated t (limma's): the variance of one centre is the prior's
    (prior sd^2 + the mean within variance, with the prior's df) pooled with the centres'
    own sample variance (K - 1 df): df = prior df + K - 1, never the bursts' df, which
    say nothing about the instances. Its level holds when the prior is not too small.
    From `CHECKED_INSTANCES` on, the centres also check the prior: the test on the
    centres alone (Student's t, K - 1 df: exact whatever the prior) is run too and the
    less significant of the two decides, so a prior that is too small (a runner whose
    instances spread more than its default) cannot make false alarms more likely.
    """
    k = centers.shape[-1]
    within_mean = variances.mean(axis=-1)
    if k == 1:
        se2 = within_mean + prior_var
        df = np.vectorize(lambda w: satterthwaite_df([(w, within_df), (prior_var, prior_df)],
                                                     fallback=float(within_df or 1)))(within_mean)
        return np.sqrt(se2), np.asarray(df, dtype=float)
    sample_var = centers.var(axis=-1, ddof=1)
    df_moderated = prior_df + k - 1
    se = np.sqrt((prior_df * (prior_var + within_mean) + (k - 1) * sample_var) / df_moderated / k)
    df = np.full_like(se, float(df_moderated))
    if k < CHECKED_INSTANCES:
        return se, df
    alone_se = np.sqrt(sample_var / k)
    center = np.abs(centers.mean(axis=-1))
    with np.errstate(divide="ignore", invalid="ignore"):
        # a t statistic's p falls as |t| grows: compare p-values, as their df differ
        alone_p = t_two_sided_ps(np.where(alone_se > 0, center / alone_se, np.inf), float(k - 1))
        moderated_p = t_two_sided_ps(np.where(se > 0, center / se, np.inf), float(df_moderated))
    alone = alone_p > moderated_p
    return np.where(alone, alone_se, se), np.where(alone, float(k - 1), df)


def statistics_mean(values: Sequence[float]) -> float:
    return float(np.mean(values))


def same_tests(rows: Sequence[PairedVerdict]) -> list[list[int]]:
    """The rows' indexes grouped by test: keys of one phase whose pair differences are
    one series up to sign and scale (qps = 10 x tps in a fixed-work phase, latency its
    inverse) have the same p to the last digits, and are one test, counted once in the
    family's correction (#55). Any other p is its own group."""
    groups: dict[tuple, list[int]] = {}
    for i, row in enumerate(rows):
        est = row.estimate
        same = est is not None and 0.0 < est.p < 1.0
        identity = ((row.key.split(".", 1)[0], est.n_pairs, float(f"{est.p:.12g}")) if same and est is not None
                    else (i,))
        groups.setdefault(identity, []).append(i)
    return list(groups.values())


def holm(p: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (family-wise error)."""
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    out = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out


def benjamini_hochberg(p: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values (false discovery rate)."""
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i], reverse=True)
    out = [0.0] * m
    running = 1.0
    for rank, i in enumerate(order):
        running = min(running, p[i] * m / (m - rank))
        out[i] = running
    return out


def judge_table(table: PairTable, specs: Mapping[str, MetricSpec], alpha: float = ALPHA, fdr: float = FDR,
                min_effect: float = DEFAULT_MIN_EFFECT,
                min_effects: Mapping[str, float] | None = None,
                priors: Mapping[str, InstancePrior] | None = None) -> list[PairedVerdict]:
    """Every metric of one instance pair's table judged (see judge_instances)."""
    return judge_instances([table], specs, alpha, fdr, min_effect, min_effects, priors)


def judge_instances(tables: Sequence[PairTable], specs: Mapping[str, MetricSpec], alpha: float = ALPHA,
                    fdr: float = FDR, min_effect: float = DEFAULT_MIN_EFFECT,
                    min_effects: Mapping[str, float] | None = None,
                    priors: Mapping[str, InstancePrior] | None = None) -> list[PairedVerdict]:
    """Every metric of the instance pairs' tables judged; `specs`: the judged keys
    (others explain). `min_effects`: a per-key minimum effect (from a noise model)
    replacing `min_effect`; `priors`: per key, the between-instance spread learned
    by calibrate (a key without one: this run's instances alone)."""
    rows: list[PairedVerdict] = []
    keys = list(dict.fromkeys(k for t in tables for k in t))
    for key in keys:
        spec = specs.get(key)
        parts = [t[key] for t in tables if key in t]
        a = [x for p in parts for x in p[0]]
        b = [x for p in parts for x in p[1]]
        a_mean, b_mean = float(np.mean(a)) if len(a) else 0.0, float(np.mean(b)) if len(b) else 0.0
        if len(a) and not any(a) and not any(b):
            rows.append(PairedVerdict(key, spec, 0.0, 0.0, None, None, Outcome.UNCHANGED, "zero on both sides"))
            continue
        if spec is not None and spec.floor and len(a) and len(b) and max(abs(x) for x in (*a, *b)) < spec.floor:
            # the means differ by less than the floor whatever their ratio (fsyncs of a
            # read-only phase: ~0, an occasional background flush): no change, not "noise"
            rows.append(PairedVerdict(key, spec, a_mean, b_mean, None, None, Outcome.UNCHANGED,
                                      f"every burst below the metric's absolute floor {spec.floor:g} on both sides"))
            continue
        est = estimate_instances(parts, (priors or {}).get(key))
        if est is None:
            rows.append(PairedVerdict(key, spec, a_mean, b_mean, None, None, Outcome.UNSTABLE, "too few pairs"))
        elif est.spread > UNSTABLE_SD:
            rows.append(PairedVerdict(key, spec, a_mean, b_mean, est, None, Outcome.UNSTABLE,
                                      f"pairs spread {est.spread:.0%} (limit {UNSTABLE_SD:.0%}): too noisy to judge"))
        else:
            rows.append(PairedVerdict(key, spec, a_mean, b_mean, est, None, PENDING))
    for family, adjust in ((True, holm), (False, benjamini_hochberg)):
        members = [r for r in rows if r.verdict is PENDING and (r.spec is not None) == family]
        tests = same_tests(members)
        adjusted = adjust([members[group[0]].estimate.p for group in tests])  # type: ignore[union-attr]
        by_member = {i: p_adj for group, p_adj in zip(tests, adjusted) for i in group}
        for i, row in enumerate(members):
            p_adj = by_member[i]
            row.p_adjusted = p_adj
            if family and row.estimate is not None:
                # the judged rows show the interval that decides (decision_level), and
                # what a change alone would have had to pass: the MDE at Holm's first step
                first = alpha / len(tests)
                row.estimate = row.estimate.at(1 - decision_level(alpha, row.estimate.p, p_adj, first))
                row.mde = row.estimate.detectable(first)
            _decide(row, alpha if family else fdr, (min_effects or {}).get(row.key, min_effect))
    # a judged metric too noisy to judge still says what this run could not see, at the
    # level it would have been judged at (its pairs' spread is in its interval)
    judged = [r for r in rows if r.spec is not None and r.estimate is not None]
    for row in judged:
        if row.verdict == Outcome.UNSTABLE and row.estimate is not None:
            level = alpha / len(judged)
            row.estimate = row.estimate.at(1 - level)
            row.mde = row.estimate.detectable(level)
    return rows


def decision_level(alpha: float, p: float, p_adjusted: float, first: float) -> float:
    """The two-sided level of a judged row's interval: alpha x p / p_adjusted, so that the
    interval excludes B/A = 1 exactly when the Holm-adjusted p is below alpha. For the
    smallest p that is Bonferroni's alpha/m (Holm's first step), for the next alpha/(m-1)
    and so on; narrower where an earlier step's larger adjusted p carries over (Holm
    stopped before it). A p of 0 (the same change in every burst): the first step's level."""
    if p <= 0 or p_adjusted <= 0:
        return first
    return min(alpha, alpha * p / p_adjusted)


def within(est: PairedEstimate, tolerance: float) -> bool:
    """The whole interval lies within ± tolerance of B/A = 1."""
    return 1 - tolerance <= est.low and est.high <= 1 + tolerance


def _decide(row: PairedVerdict, level: float, min_effect: float) -> None:
    assert row.estimate is not None and row.p_adjusted is not None
    change = row.estimate.ratio - 1
    if row.p_adjusted >= level:
        if row.spec is None or within(row.estimate, row.spec.tolerance):
            row.verdict, row.reason = Outcome.UNCHANGED, f"adjusted p {row.p_adjusted:.2g} >= {level:g}" + (
                "" if row.spec is None else f"; interval within ±{row.spec.tolerance:.0%}")
        else:
            # not significant is not "unchanged" when the interval reaches past the tolerance
            row.verdict = Outcome.INCONCLUSIVE
            row.reason = f"not significant; could not see below {row.mde or 0:.1%}"
        return
    if abs(change) < min_effect:
        row.verdict, row.reason = Outcome.UNCHANGED, f"significant but below the minimum effect {min_effect:.1%}"
        return
    if row.spec is None:
        row.verdict, row.reason = Outcome.MOVED, f"adjusted p {row.p_adjusted:.2g} (FDR {level:g})"
        return
    if below_floor(row.a_mean, row.b_mean, row.spec.floor):
        row.verdict, row.reason = Outcome.UNCHANGED, f"change below the metric's absolute floor {row.spec.floor:g}"
        return
    row.verdict = Outcome.REGRESSION if worse_beyond(change, row.spec.direction, 0.0) else Outcome.IMPROVEMENT
    row.reason = f"adjusted p {row.p_adjusted:.2g} < {level:g} (Holm)"
