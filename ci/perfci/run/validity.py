"""The run validity gate: a measurement that cannot be trusted is marked `invalid`
with its reasons, and never enters a baseline or a verdict.

A phase is invalid when
- its fixed work was not done (the time cap ended it first: the run did other work
  than its baseline),
- other processes used the CPU while it ran (beyond host/policy.py's `BUSY_OTHER_CORES`
  on average),
- the server failed statements (reconnects, or errors beyond `ERROR_RATE_LIMIT` of
  transactions),
- its throughput was not steady at the end: a robust (Theil-Sen) trend across the
  second half of the interval series beyond `TREND_LIMIT` of its median, with its
  95 % interval excluding no trend. Only the second half, and a wide limit, on
  purpose: on this 2-core runner the rebuild-after-delete phases climb 15-56 % from
  their first to their last third (warm-up after a restore: compressed pages get
  their uncompressed frames as they are first touched), at 30 s and at 600 s alike.
  The gate is for stalls and collapses; interleaved A/B drops warm-up bursts.
  Only time-bound phases: a fixed-work phase does the same work each run, so a stall
  in it is part of what its time measures (and a server that now stalls is a
  regression to report, not a run to discard). Seen: the smoke profile's 3000
  transactions with one flush stall in the last seconds read as a -55 % and, on a
  slower runner where the phase lasted over 30 s, a -62 % "trend". A time-bound
  phase needs `MIN_TREND_POINTS` one-second intervals in its second half (30 s or more).
"""

from __future__ import annotations

from perfci.host import policy
from perfci.model.result import Phase, Result, Validity

ERROR_RATE_LIMIT = 0.01
TREND_LIMIT = 0.5
MIN_TREND_POINTS = 15


def tps_trend(phase: Phase) -> tuple[float, float, float] | None:
    """Relative change of tps across the second half of the phase (slope x span /
    median) with its 95 % interval, or None with too few interval lines."""
    points = [(iv.t, iv.tps) for iv in phase.intervals]
    points = points[len(points) // 2:]
    if len(points) < MIN_TREND_POINTS:
        return None
    from scipy.stats import theilslopes
    t, y = [p[0] for p in points], [p[1] for p in points]
    median = sorted(y)[len(y) // 2]
    if median <= 0:
        return None
    fit = theilslopes(y, t)
    span = (t[-1] - t[0]) / median
    return fit.slope * span, fit.low_slope * span, fit.high_slope * span


def phase_problems(name: str, phase: Phase, counted: bool = False) -> list[str]:
    """What makes a phase untrustworthy; `counted` (measure work): a busy host is not one,
    the count does not see it (the A/B keeps counted bursts on a busy host too)."""
    problems = []
    m = phase.metrics
    if phase.bound == "transactions" and phase.transactions_target and (m.events or 0) < phase.transactions_target:
        problems.append(f"phase {name}: the {phase.time_s} s cap ended it after {m.events} of "
                        f"{phase.transactions_target} transactions (not the fixed work)")
    busy = None if counted else policy.busy_problem((phase.host_cpu or {}).get("others"), f"phase {name}")
    if busy:
        problems.append(busy)
    if (m.reconnects or 0) > 0:
        problems.append(f"phase {name}: {m.reconnects} reconnects (the server dropped connections)")
    if m.transactions and (m.errors or 0) > ERROR_RATE_LIMIT * m.transactions:
        problems.append(f"phase {name}: {m.errors} failed statements in {m.transactions} transactions")
    trend = None if phase.bound == "transactions" else tps_trend(phase)
    if trend and abs(trend[0]) > TREND_LIMIT and not trend[1] <= 0 <= trend[2]:
        problems.append(f"phase {name}: not steady: tps changed {trend[0]:+.0%} across the phase's second half "
                        f"(95 % interval {trend[1]:+.0%}..{trend[2]:+.0%}; limit ±{TREND_LIMIT:.0%})")
    return problems


def assess(result: Result) -> Validity:
    reasons = [p for name, phase in result.phases.items()
               for p in phase_problems(name, phase, counted=result.measure == "work")]
    return Validity(valid=not reasons, reasons=reasons)
