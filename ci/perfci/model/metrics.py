"""Which metrics are judged, in which direction, with what tolerance; and the flat
run-level view of a result that baselines, comparisons and history share."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass

from perfci.model.result import Phase, Result
from perfci.model.verdicts import Direction

# Judged when a scenario has no `compare:` list: throughput, latency, and the
# per-transaction work counters (far less noisy than throughput).
DEFAULT_COMPARED = (
    "tps", "qps", "qps_write", "latency_ms_avg", "latency_ms_p95",
    "index_page_splits_per_txn", "compress_failures_per_txn", "uncompress_ops_per_txn",
    "pages_written_per_txn", "fsyncs_per_txn",
    # the A/B's bursts only: CPU of the busiest server thread (one client thread: the
    # connection's statement path) per transaction; in 4 real A/As its burst pairs spread
    # 6.1 % / 4.7 % where tps spread 9.9 % / 5.3 %, and a CPU cost in the statement path
    # moves it more than tps (docs/findings/2026-11-24-detection-engine-v3.md)
    "statement_cpu_us_per_txn",
    # an A/B that counts work (`--measure work`, run/work.py): the instructions the
    # statement path executed per transaction; its bursts carry no time metric
    "instructions_per_txn",
)
WORK_METRIC = "instructions_per_txn"
# Tail latencies (run/sysbench.py TAILS, from sysbench's histogram; p95 its own line). A
# burst's tail is its slowest few dozen transactions: an A/B judges tails only where the
# scenario's `compare:` lists them; a run's p95 is judged by default as before.
TAIL_LATENCIES = ("latency_ms_p95", "latency_ms_p99", "latency_ms_p99_9")
AB_DEFAULT_COMPARED = tuple(m for m in DEFAULT_COMPARED if m not in TAIL_LATENCIES)

# (pattern on the base metric name, direction, default tolerance), first match wins.
DEFAULT_SPECS = (
    ("tps", Direction.HIGHER, 0.05),
    ("qps*", Direction.HIGHER, 0.05),
    ("latency_ms_*", Direction.LOWER, 0.10),
    ("*cpu_us_per_txn", Direction.LOWER, 0.05),
    ("instructions_per_txn", Direction.LOWER, 0.01),
    ("*_per_txn", Direction.LOWER, 0.10),
    ("compress_miss_rate", Direction.LOWER, 0.10),
    ("*", Direction.HIGHER, 0.05),
)


# what a statement does per transaction (rows read, pages split, fsyncs): a cost that only
# slows the server does not move these, so they are judged and gated apart
WORK_COUNTERS = "work counters"
# the instructions the server's code executed per transaction (counted, not timed): more
# code run for the same statements; waits, locks, cache misses and the clock do not show
INSTRUCTIONS = "instructions"
# How a reader sees a metric: (pattern on the base metric name, group, unit), first match
# wins; the dashboard groups its charts in GROUPS' order and labels each with its unit.
PRESENTATION = (
    ("tps", "throughput", "transactions/s"),
    ("qps*", "throughput", "queries/s"),
    ("latency_ms_*", "latency", "ms"),
    ("*cpu_us_per_txn", "CPU", "µs of CPU per transaction"),
    ("instructions_per_txn", INSTRUCTIONS, "instructions per transaction"),
    ("*_per_txn", WORK_COUNTERS, "per transaction"),
    ("*_rate", WORK_COUNTERS, "fraction"),
    ("*", "other", ""),
)
GROUPS = ("headline ratios", "throughput", "latency", "CPU", INSTRUCTIONS, WORK_COUNTERS, "other")


def presentation(key: str) -> tuple[str, str]:
    """(group, unit) of a judged key (`phase.metric` or `headline.metric a/b`)."""
    if key.startswith("headline."):
        return "headline ratios", "ratio of two phases"
    base = key.split(".", 1)[-1]
    return next((group, unit) for pattern, group, unit in PRESENTATION if fnmatch.fnmatchcase(base, pattern))


def is_work_counter(key: str) -> bool:
    return presentation(key)[0] == WORK_COUNTERS


# Absolute floors: a change smaller than this is `unchanged` whatever its ratio. When
# commits do not fsync (innodb_flush_log_at_trx_commit=0/2) fsyncs and page writes come
# from once-a-second background flushing: per transaction they measure the clock, not
# the work (0.006 vs 0.010 fsyncs per transaction in two clean smoke runs here, a
# "+72 %" that means nothing; fsync at commit gives ~1). Below one fsync per 20
# transactions or one page write per transaction, these counters say nothing about work.
DEFAULT_FLOORS = {"fsyncs_per_txn": 0.05, "pages_written_per_txn": 1.0}


@dataclass(frozen=True)
class MetricSpec:
    metric: str        # base name, e.g. "qps_write"
    direction: Direction
    tolerance: float   # relative change allowed before a verdict other than unchanged
    floor: float = 0.0  # absolute change below which the verdict is unchanged


def default_spec(metric: str) -> MetricSpec:
    for pattern, direction, tolerance in DEFAULT_SPECS:
        if fnmatch.fnmatch(metric, pattern):
            return MetricSpec(metric, direction, tolerance, DEFAULT_FLOORS.get(metric, 0.0))
    raise AssertionError("the '*' pattern matches everything")


def flatten(result: Result) -> dict[str, float]:
    """Run-level metrics of a result, keyed '<phase>.<metric>' and 'headline.<metric> <num>/<den>'."""
    flat: dict[str, float] = {}
    for phase, data in result.phases.items():
        for name, value in data.metrics.numbers().items():
            flat[f"{phase}.{name}"] = value
    for h in result.headline:
        if h.value is not None:
            flat[f"headline.{h.key}"] = h.value
    return flat


def counters_per_txn(result: Result) -> dict[str, float]:
    """Every counter delta of every phase divided by that phase's transactions:
    the candidates for 'what moved' beside a regression."""
    out: dict[str, float] = {}
    for phase, data in result.phases.items():
        events = data.metrics.events
        if not events:
            continue
        c = data.counters
        groups: dict[str, dict[str, int] | dict[str, int | float]] = {
            "innodb_metrics": c.innodb_metrics, "global_status": c.global_status, "innodb_cmp": c.innodb_cmp}
        for group, values in groups.items():
            for name, value in values.items():
                out[f"{phase}.{group}.{name}"] = value / events
    return out


def spec_table(compare: list[MetricSpec] | None) -> dict[str, MetricSpec]:
    """Metric name -> its spec: a scenario's `compare:` rules, else the defaults."""
    return {s.metric: s for s in compare} if compare else {m: default_spec(m) for m in DEFAULT_COMPARED}


# the statements that change rows (MariaDB reports no Innodb_rows_* in its global status)
WRITE_STATEMENTS = ("Com_insert", "Com_update", "Com_delete", "Com_replace")


def count_follows_timing(phase: Phase) -> bool:
    """A phase whose counted instructions follow timing, not only the code: several
    clients (lock waits; under callgrind one thread runs at a time) or writes (purge and
    page cleaning beside it). Five real counted nights of microbench on MariaDB 10.11
    (benchmarks/results/soak/2026-11-29-75a0fcb93245-work): one client reading repeated
    to 0.00-0.15 % night to night; one client writing spread 0.7-7.8 %, and several
    clients writing up to 33x (insert-t4)."""
    return phase.threads > 1 or any(phase.counters.global_status.get(c, 0) for c in WRITE_STATEMENTS)


def judged_keys(result: Result, compare: list[MetricSpec] | None) -> list[tuple[str, MetricSpec]]:
    """The flat metric keys of a result to judge, each with its spec: every phase
    metric the specs name, and every headline ratio (by its metric's spec). A counted
    run (measure work) is judged on its instructions per transaction alone, whatever the
    scenario lists (its server ran slowed down under the counter, so its times say
    nothing), and only in the phases whose count repeats night to night (not
    `count_follows_timing`: those are kept and drawn, and judged by time and the A/B)."""
    if result.measure == "work":
        return [(f"{phase}.{WORK_METRIC}", spec_table(compare).get(WORK_METRIC, default_spec(WORK_METRIC)))
                for phase, data in result.phases.items()
                if WORK_METRIC in data.metrics.numbers() and not count_follows_timing(data)]
    specs = spec_table(compare)
    out = []
    for phase, data in result.phases.items():
        for name in data.metrics.numbers():
            if name in specs:
                out.append((f"{phase}.{name}", specs[name]))
    for h in result.headline:
        if h.value is not None:
            out.append((f"headline.{h.key}", specs.get(h.metric, default_spec(h.metric))))
    return out
