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
wrong way, and by at least the minimum effect (default 1 %).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from perfci.judge.stats import below_floor, t_quantile, t_two_sided_p, worse_beyond
from perfci.model.metrics import MetricSpec
from perfci.model.verdicts import Outcome

ALPHA = 0.005  # per A/B: half the 1 % target, so that the target holds with room (simulated)
FDR = 0.05
UNSTABLE_SD = 0.25
MAX_LAG1 = 0.2
MIN_BLOCKS = 6
ABBA_BLOCK = 2
DEFAULT_MIN_EFFECT = 0.01
PENDING = Outcome.INCONCLUSIVE  # a row waiting for its family's adjusted p (judge_table decides every one)

PairTable = Mapping[str, tuple[Sequence[float], Sequence[float]]]  # key -> (A values, B values), pair order


@dataclass(frozen=True)
class PairedEstimate:
    n_pairs: int
    block: int
    n_blocks: int
    scale: str            # "log" or "relative"
    ratio: float          # B/A
    low: float            # 95 % t interval of the ratio
    high: float
    p: float              # two-sided, before family correction
    spread: float         # standard deviation of the pair differences (one pair's relative noise)
    lag1: float


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


def as_ratio(x: float, scale: str) -> float:
    """A mean difference back to B/A: exp for logs; for relative differences c,
    mean B / mean A = (1 + c/2) / (1 - c/2) (capped where A's mean is ~0)."""
    if scale == "log":
        return math.exp(x)
    return (1 + x / 2) / (1 - x / 2) if x < 1.999 else 1e4


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


def estimate(a: Sequence[float], b: Sequence[float]) -> PairedEstimate | None:
    """The paired change B/A with its interval and p-value; None if nothing to judge."""
    if len(a) < 2:
        return None
    d, scale = differences(a, b)
    spread = float(d.std(ddof=1))
    r = lag1(d)
    block = block_length(d)
    means = block_means(d, block)
    k = len(means)
    center = float(means.mean())
    def ratio_of(x: float) -> float:
        return as_ratio(x, scale)

    if k < 2:
        return None
    sd = float(means.std(ddof=1))
    if sd == 0.0:
        p = 1.0 if center == 0 else 0.0
        return PairedEstimate(len(d), block, k, scale, ratio_of(center), ratio_of(center), ratio_of(center),
                              p, spread, r)
    t = center / (sd / math.sqrt(k))
    p = t_two_sided_p(t, k - 1)
    half = t_quantile(0.975, k - 1) * sd / math.sqrt(k)
    return PairedEstimate(len(d), block, k, scale, ratio_of(center), ratio_of(center - half),
                          ratio_of(center + half), p, spread, r)


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
                min_effects: Mapping[str, float] | None = None) -> list[PairedVerdict]:
    """Every metric of the table judged; `specs`: the judged keys (others explain).
    `min_effects`: a per-key minimum effect (from a noise model) replacing `min_effect`."""
    rows: list[PairedVerdict] = []
    for key, (a, b) in table.items():
        spec = specs.get(key)
        a_mean, b_mean = float(np.mean(a)) if len(a) else 0.0, float(np.mean(b)) if len(b) else 0.0
        if len(a) and not any(a) and not any(b):
            rows.append(PairedVerdict(key, spec, 0.0, 0.0, None, None, Outcome.UNCHANGED, "zero on both sides"))
            continue
        est = estimate(a, b)
        if est is None:
            rows.append(PairedVerdict(key, spec, a_mean, b_mean, None, None, Outcome.UNSTABLE, "too few pairs"))
        elif est.spread > UNSTABLE_SD:
            rows.append(PairedVerdict(key, spec, a_mean, b_mean, est, None, Outcome.UNSTABLE,
                                      f"pairs spread {est.spread:.0%} (limit {UNSTABLE_SD:.0%}): too noisy to judge"))
        else:
            rows.append(PairedVerdict(key, spec, a_mean, b_mean, est, None, PENDING))
    for family, adjust in ((True, holm), (False, benjamini_hochberg)):
        members = [r for r in rows if r.verdict is PENDING and (r.spec is not None) == family]
        for row, p_adj in zip(members, adjust([r.estimate.p for r in members if r.estimate])):
            row.p_adjusted = p_adj
            _decide(row, alpha if family else fdr, (min_effects or {}).get(row.key, min_effect))
    return rows


def _decide(row: PairedVerdict, level: float, min_effect: float) -> None:
    assert row.estimate is not None and row.p_adjusted is not None
    change = row.estimate.ratio - 1
    if row.p_adjusted >= level:
        row.verdict, row.reason = Outcome.UNCHANGED, f"adjusted p {row.p_adjusted:.2g} >= {level:g}"
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
