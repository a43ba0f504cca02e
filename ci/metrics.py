"""Which metrics are judged, in which direction, with what tolerance; and the flat
run-level view of a result that baselines, comparisons and history share."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass

# Judged when a scenario has no `compare:` list: throughput, latency, and the
# per-transaction work counters (far less noisy than throughput).
DEFAULT_COMPARED = (
    "tps", "qps", "qps_write", "latency_ms_avg", "latency_ms_p95",
    "index_page_splits_per_txn", "compress_failures_per_txn", "uncompress_ops_per_txn",
    "pages_written_per_txn",
)

# (pattern on the base metric name, direction, default tolerance), first match wins.
DEFAULT_SPECS = (
    ("tps", "higher", 0.05),
    ("qps*", "higher", 0.05),
    ("latency_ms_*", "lower", 0.10),
    ("*_per_txn", "lower", 0.10),
    ("compress_miss_rate", "lower", 0.10),
    ("*", "higher", 0.05),
)


@dataclass(frozen=True)
class MetricSpec:
    metric: str        # base name, e.g. "qps_write"
    direction: str     # "higher" or "lower" is better
    tolerance: float   # relative change allowed before a verdict other than unchanged


def default_spec(metric: str) -> MetricSpec:
    for pattern, direction, tolerance in DEFAULT_SPECS:
        if fnmatch.fnmatch(metric, pattern):
            return MetricSpec(metric, direction, tolerance)
    raise AssertionError("the '*' pattern matches everything")


def base_metric(key: str) -> str:
    """'after.qps_write' -> 'qps_write'; 'headline.qps_write after/before' -> 'qps_write'."""
    name = key.split(".", 1)[1] if "." in key else key
    return name.split(" ", 1)[0]


def flatten(result: dict) -> dict[str, float]:
    """Run-level metrics of a result, keyed 'phase.metric' and 'headline.<ratio>'."""
    flat: dict[str, float] = {}
    for phase, data in result.get("phases", {}).items():
        for name, value in data.get("metrics", {}).items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                flat[f"{phase}.{name}"] = value
    for name, value in (result.get("headline") or {}).items():
        if value is not None:
            flat[f"headline.{name}"] = value
    return flat


def counters_per_txn(result: dict) -> dict[str, float]:
    """Every counter delta of every phase divided by that phase's transactions:
    the candidates for 'what moved' beside a regression."""
    out: dict[str, float] = {}
    for phase, data in result.get("phases", {}).items():
        events = data.get("metrics", {}).get("events") or 0
        if not events:
            continue
        counters = data.get("counters", {})
        for group in ("innodb_metrics", "global_status"):
            for name, value in counters.get(group, {}).items():
                out[f"{phase}.{group}.{name}"] = value / events
        for name, value in counters.get("innodb_cmp", {}).items():
            out[f"{phase}.innodb_cmp.{name}"] = value / events
    return out


def judged_keys(flat: dict[str, float], compare: list[MetricSpec] | None) -> list[tuple[str, MetricSpec]]:
    """The metric keys of a result to judge, each with its spec."""
    if compare:
        specs = {s.metric: s for s in compare}
    else:
        specs = {m: default_spec(m) for m in DEFAULT_COMPARED}
    out = []
    for key in flat:
        base = base_metric(key)
        if key.startswith("headline."):
            out.append((key, specs.get(base, default_spec(base))))
        elif base in specs:
            out.append((key, specs[base]))
    return out
