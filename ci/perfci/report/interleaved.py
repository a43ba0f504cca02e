"""From an interleaved A/B's bursts to the paired table, the verdicts and the report."""

from __future__ import annotations

import statistics

from perfci.judge.paired import ALPHA, FDR, PairedVerdict, PairTable, judge_table
from perfci.model.metrics import DEFAULT_COMPARED, MetricSpec, default_spec
from perfci.model.scenario import CompareSpec
from perfci.sessions.interleave import Burst, InterleavedRun

VERDICT_TEXT = {"regression": "🔴 regression", "improvement": "🟢 improvement", "unchanged": "unchanged",
                "unstable": "〰 unstable", "moved": "moved"}


BUSY_BURST_CORES = 0.5  # other processes' CPU during a burst beyond which its pair is dropped


def busy(burst: Burst) -> bool:
    return (burst.host_cpu or {}).get("others", 0.0) > BUSY_BURST_CORES


def busy_pairs(run: InterleavedRun) -> dict[str, int]:
    """Per phase: measured pairs dropped because the host was busy during one of their bursts."""
    return {phase: len({b.index for b in run.bursts if b.phase == phase and not b.warmup and busy(b)})
            for phase in run.bursts_per_phase}


def pair_table(run: InterleavedRun) -> dict[str, tuple[list[float], list[float]]]:
    """key '<phase>.<metric>' -> (A values, B values) over the measured pairs, in order.
    A metric absent from a burst (a counter that did not move) counts as 0 there. A
    pair with a burst during which other processes used the CPU (beyond
    BUSY_BURST_CORES) is dropped: the validity gate at burst scale, by the host's
    load, never by the burst's own numbers."""
    table: dict[str, tuple[list[float], list[float]]] = {}
    for phase in run.bursts_per_phase:
        measured = [b for b in run.bursts if b.phase == phase and not b.warmup]
        dropped = {b.index for b in measured if busy(b)}
        by_pair: dict[int, dict[str, dict[str, float]]] = {}
        for b in measured:
            if b.index not in dropped:
                by_pair.setdefault(b.index, {})[b.side] = b.metrics
        pairs = [p for _, p in sorted(by_pair.items()) if "a" in p and "b" in p]
        keys = sorted({k for p in pairs for side in p.values() for k in side})
        for key in keys:
            table[f"{phase}.{key}"] = ([p["a"].get(key, 0.0) for p in pairs], [p["b"].get(key, 0.0) for p in pairs])
    return table


def judged_specs(table: PairTable, compare: list[CompareSpec]) -> dict[str, MetricSpec]:
    """The keys that can fail the A/B: the scenario's `compare:` metrics (default:
    throughput, latency and the key work counters) in every phase."""
    specs = ({c.metric: _spec(c) for c in compare} if compare else {m: default_spec(m) for m in DEFAULT_COMPARED})
    out = {}
    for key in table:
        metric = key.split(".", 1)[1]
        if metric in specs:
            out[key] = specs[metric]
    return out


def _spec(c: CompareSpec) -> MetricSpec:
    d = default_spec(c.metric)
    return MetricSpec(c.metric, c.direction or d.direction, c.tolerance or d.tolerance,
                      d.floor if c.floor is None else c.floor)


def judge_run(run: InterleavedRun, compare: list[CompareSpec], min_effect: float,
              min_effects: dict[str, float] | None = None) -> list[PairedVerdict]:
    table = pair_table(run)
    return judge_table(table, judged_specs(table, compare), min_effect=min_effect, min_effects=min_effects)


def _fmt(x: float) -> str:
    return f"{x:.4g}"


def interleaved_markdown(run: InterleavedRun, rows: list[PairedVerdict], min_effect: float,
                         noise_source: str | None = None) -> str:
    a, b = run.sides
    phases = ", ".join(f"{p}: {run.bursts_per_phase[p]} pairs x {run.burst_transactions[p]} txn"
                       for p in run.bursts_per_phase)
    host = run.host
    lines = [
        f"## perfci A/B (interleaved): {run.scenario} · profile `{run.profile}`"
        + (f" · case `{run.case}`" if run.case != "default" else ""),
        "",
        f"- A: `{a.described}` ({a.flavor} {a.full_version}) · B: `{b.described}` ({b.flavor} {b.full_version})",
        f"- both servers alive; bursts alternate A B, B A, …; the idle side frozen ({a.freezer}); "
        f"{phases}; first {run.warmup_pairs} pairs of each phase dropped as warm-up",
        f"- host `{host.hostname}` ({host.cpu_model}, {host.cpus} CPUs) · runner class `{run.runner_class}` · "
        f"scenario hash `{run.scenario_hash[:19]}…` · {run.started_at} – {run.finished_at}",
        f"- verdict: judged metrics under Holm (≤ {ALPHA:.0%} chance of any false regression per A/B) and at least "
        f"a {min_effect:.1%} change; other counters under Benjamini-Hochberg (FDR {FDR:.0%}), explanations only"
        + (f"; minimum effects from the noise model {noise_source}" if noise_source else ""),
    ]
    dropped = {p: n for p, n in busy_pairs(run).items() if n}
    if dropped:
        lines.append("- pairs dropped, host busy during a burst (others > "
                     f"{BUSY_BURST_CORES} cores): " + ", ".join(f"{p}: {n}" for p, n in dropped.items()))
    for side in run.sides:
        if side.setup_sql:
            lines.append(f"- setup SQL on {side.name.upper()}: " + "; ".join(f"`{s}`" for s in side.setup_sql))
    lines += ["", "| metric | A mean | B mean | B/A | 95 % CI | adj. p | pairs (block) | verdict |",
              "|---|---|---|---|---|---|---|---|"]
    judged = [r for r in rows if r.spec is not None]
    for r in judged:
        lines.append(_row(r))
    moved = [r for r in rows if r.spec is None and r.verdict == "moved"]
    moved.sort(key=lambda r: -abs(r.estimate.ratio - 1) if r.estimate else 0)
    if moved:
        lines += ["", f"### Counters per transaction that moved (FDR {FDR:.0%}; {len(moved)} of "
                      f"{sum(1 for r in rows if r.spec is None)})", "",
                  "| counter | A mean | B mean | B/A | 95 % CI | adj. p | pairs (block) | |", "|---|---|---|---|---|---|---|---|"]
        lines += [_row(r) for r in moved[:25]]
    unstable = [r for r in rows if r.verdict == "unstable"]
    if unstable:
        shown = ", ".join(f"`{r.key}` ({r.estimate.spread:.0%})" if r.estimate else f"`{r.key}`" for r in unstable[:30])
        lines += ["", f"Unstable (pair spread beyond the limit, not judged): {shown}"
                  + (f" and {len(unstable) - 30} more" if len(unstable) > 30 else "")]
    lines.append("")
    return "\n".join(lines)


def _row(r: PairedVerdict) -> str:
    e = r.estimate
    arrow = "" if r.spec is None else (" ↑" if r.spec.direction == "higher" else " ↓")
    ratio = f"{e.ratio:.4f}" if e else "–"
    ci = f"[{e.low:.4f}, {e.high:.4f}]" if e else "–"
    p = f"{r.p_adjusted:.2g}" if r.p_adjusted is not None else "–"
    pairs = f"{e.n_pairs} ({e.block})" if e else "–"
    return (f"| `{r.key}`{arrow} | {_fmt(r.a_mean)} | {_fmt(r.b_mean)} | {ratio} | {ci} | {p} | {pairs} | "
            f"{VERDICT_TEXT.get(r.verdict, r.verdict)} |")


def burst_summary(run: InterleavedRun) -> dict[str, float]:
    """Mean burst duration per side (for the time-to-verdict figures)."""
    return {side: statistics.mean(b.duration_s for b in run.bursts if b.side == side) for side in ("a", "b")}
