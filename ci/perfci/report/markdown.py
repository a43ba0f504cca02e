"""Markdown summaries of result files: every number with its context
(server, config, scenario hash, host, sample count, spread)."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from perfci.judge.compare import CaseComparison, MetricRow
from perfci.judge.stats import t_half_width
from perfci.model.metrics import presentation
from perfci.model.result import Interval, Result, TableSize
from perfci.model.verdicts import Outcome
from perfci.report.opening import comparison_opening
from perfci.report.plots import matrix_plots, mermaid_intervals
from perfci.report.table import change_cell, signed_percent, table, verdict_label

# (metric key, label, format) in the order a performance engineer reads them.
SUMMARY_METRICS = (
    ("tps", "tps", "{:.1f}"),
    ("qps", "qps total", "{:.1f}"),
    ("qps_write", "qps write", "{:.1f}"),
    ("qps_read", "qps read", "{:.1f}"),
    ("latency_ms_avg", "latency avg (ms)", "{:.2f}"),
    ("latency_ms_p95", "latency p95 (ms)", "{:.2f}"),
    ("latency_ms_p99", "latency p99 (ms)", "{:.2f}"),
    ("latency_ms_p99_9", "latency p99.9 (ms)", "{:.2f}"),
    ("errors_per_s", "errors/s", "{:.2f}"),
    ("index_page_splits_per_txn", "page splits / txn", "{:.3f}"),
    ("index_page_merge_attempts_per_txn", "merge attempts / txn", "{:.3f}"),
    ("compress_ops_per_txn", "compress ops / txn", "{:.3f}"),
    ("compress_failures_per_txn", "compress failures / txn", "{:.3f}"),
    ("uncompress_ops_per_txn", "uncompress ops / txn", "{:.3f}"),
    ("pages_written_per_txn", "pages written / txn", "{:.2f}"),
    ("server_cpu_util", "server CPU (cores)", "{:.2f}"),
)

# a counted run's phases (measure work): its times are the counter's, not the server's
COUNTED_SUMMARY_METRICS = (
    ("instructions_per_txn", "instructions / txn", "{:,.0f}"),
    *(m for m in SUMMARY_METRICS if m[0].endswith("_per_txn")),
)


def _cv(values: list[float]) -> float:
    return statistics.stdev(values) / statistics.mean(values) if len(values) > 1 and statistics.mean(values) else 0.0


def _fmt(value: float | None, fmt: str) -> str:
    return "–" if value is None else fmt.format(value)


def interval_cv(intervals: list[Interval]) -> float | None:
    """Coefficient of variation of the per-interval tps: the within-run spread."""
    values = [iv.tps for iv in intervals]
    if len(values) < 2 or not statistics.mean(values):
        return None
    return statistics.stdev(values) / statistics.mean(values)


def _mib(nbytes: int | None) -> str:
    return "–" if nbytes is None else f"{nbytes / 2**20:.1f}"


def _total_size(sizes: dict[str, TableSize]) -> int | None:
    return sum(s.file_size for s in sizes.values()) if sizes else None


def _case_title(result: Result) -> str:
    return "" if result.case == "default" else f" · case `{result.case}`"


def summary_markdown(result: Result) -> str:
    sc, srv, host, harness = result.scenario, result.server, result.host, result.harness
    phases = result.phases
    names = list(phases)
    ratio_pair = (result.headline[0].numerator, result.headline[0].denominator) if result.headline else None
    title = (f"### {sc.name} · profile `{sc.profile}`{_case_title(result)} · "
             f"{srv.flavor} {srv.full_version or srv.version}")
    if not result.ran:
        return "\n".join([title, "", f"**Skipped:** {result.skip_reason}", "",
                          f"- scenario hash `{sc.hash[:19]}…` · result `{result.id}`",
                          f"Reproduce: `{result.reproduce}`", ""])
    fs = host.datadir_filesystem.type if host.datadir_filesystem else "?"
    lines = [
        title,
        "",
        f"- scenario hash `{sc.hash[:19]}…` · result `{result.id}`",
        f"- host `{host.hostname}`: {host.cpu_model}, {host.cpus} CPUs, "
        f"{(host.memory_bytes or 0) / 2**30:.0f} GiB, {host.kernel}, datadir on {fs}",
        f"- harness `{harness.git_sha[:10]}`{' (dirty)' if harness.dirty else ''} · {harness.sysbench}"
        + (f" · perfci {harness.perfci}" if harness.perfci else ""),
        f"- config overrides: {', '.join(f'{k}={v}' for k, v in srv.config.overrides.items()) or 'none'}",
        *(["- samples: 1 run; spread is the CV of the per-interval tps within each phase"] if result.measure == "time"
          else [f"- measured: **work**, {result.work}; samples: 1 run, counted bursts per phase after a "
                "warm-up, spread is their CV; the server ran under its counter, so its times say nothing "
                "and are not shown"]),
        *[f"- fixed work: phase {n}: {p.transactions_target} transactions, --rand-seed={p.rand_seed}"
          for n, p in phases.items() if p.bound == "transactions"],
        *([] if result.validity.valid else
          ["", "**Invalid run** (enters no baseline and no verdict): " + "; ".join(result.validity.reasons)]),
        "",
    ]
    header = ["metric", *names]
    if ratio_pair:
        header.append(f"{ratio_pair[0]}/{ratio_pair[1]}")
    rows: list[list[str]] = []
    counted = result.measure == "work"
    for key, label, fmt in COUNTED_SUMMARY_METRICS if counted else SUMMARY_METRICS:
        values = [phases[p].metrics.get(key) for p in names]
        if all(v is None for v in values) or all(v == 0 for v in values):
            continue
        cells = [label, *(_fmt(v, fmt) for v in values)]
        if ratio_pair:
            num, den = phases[ratio_pair[0]].metrics.get(key), phases[ratio_pair[1]].metrics.get(key)
            cells.append(f"{num / den:.3f}" if num is not None and den else "–")
        rows.append(cells)
    no_ratio = [""] if ratio_pair else []
    if counted:
        rows.append(["counted bursts CV (n bursts)", *(f"{_cv(phases[p].counted_bursts):.2%} "
                                                      f"(n={len(phases[p].counted_bursts)})" for p in names), *no_ratio])
    else:
        rows.append(["tps interval CV (n intervals)", *(f"{cv:.1%} (n={n})" if cv is not None else f"– (n={n})"
                     for cv, n in ((interval_cv(phases[p].intervals), len(phases[p].intervals)) for p in names)),
                     *no_ratio])
    rows.append([".ibd MiB at phase end", *(_mib(_total_size(phases[p].sizes_after)) for p in names), *no_ratio])
    lines += table(header, rows)
    if result.headline:
        lines += ["", "**Headline:** " + " · ".join(
            f"{h.key} = {'–' if h.value is None else f'{h.value:.3f}'}" for h in result.headline)]
    lines += ["", *table(["step", "kind", "duration (s)", ".ibd MiB after", "compress miss rate"], (
        [step.name, step.kind, f"{step.duration_s:.1f}", _mib(_total_size(step.sizes_after)),
         "–" if step.compress_miss_rate is None else f"{step.compress_miss_rate:.1%}"] for step in result.steps))]
    if result.notes:
        lines += ["", "Config notes:"]
        for note in result.notes:
            target = f" -> {note.to}" if note.to else ""
            lines.append(f"- `{note.option}` {note.action}{target}: {note.reason}")
    lines += ["", f"Reproduce: `{result.reproduce}`", ""]
    return "\n".join(lines)


# ---------------------------------------------------------------- comparisons



def _mean_pm(values: list[float], confidence: float) -> str:
    """mean ± half-width of the t interval of the mean, for the baseline column."""
    if not values:
        return "–"
    mean = statistics.mean(values)
    if len(values) < 2:
        return f"{mean:.4g} (n=1)"
    half = t_half_width(confidence, len(values) - 1, statistics.stdev(values) / len(values) ** 0.5)
    return f"{mean:.4g} ± {half:.2g} (n={len(values)})"


def case_verdict(comp: CaseComparison) -> str:
    """A case's verdict in one line, read before any table."""
    judged = [r for r in comp.rows if r.verdict.verdict != Outcome.NO_BASELINE]
    if comp.regressions:
        worst = ", ".join(f"`{r.key}` {signed_percent(r.verdict.change_pct)}" if r.verdict.change_pct is not None
                          else f"`{r.key}`" for r in comp.regressions[:5])
        more = f" and {len(comp.regressions) - 5} more" if len(comp.regressions) > 5 else ""
        return f"🔴 **Regression** in {len(comp.regressions)} of {len(comp.rows)} judged metrics: {worst}{more}"
    if not judged:
        return f"⚪ **No baseline** to judge {len(comp.rows)} metrics against"
    open_ = [r for r in judged if r.verdict.verdict in (Outcome.INCONCLUSIVE, Outcome.UNSTABLE)]
    if open_:
        return (f"⚪ **No regression found**, {len(open_)} of {len(comp.rows)} metrics not decided "
                "(the interval spans the tolerance)")
    return f"✅ **No regression**: {len(judged)} judged metrics within their tolerance"


COMPARISON_COLUMNS = ["metric", "baseline mean ± CI", "current", "change [interval]", "tolerance", "unit", "verdict"]


def against_baseline(comp: CaseComparison) -> str:
    n = len(comp.baseline.samples) if comp.baseline else 0
    return f"its baseline ({n} sample{'s' if n != 1 else ''})"


def own_reproduce(comp: CaseComparison) -> str:
    return comp.results[0].reproduce


def no_notes(comp: CaseComparison) -> list[str]:
    return []


@dataclass(frozen=True)
class Framing:
    """What a comparison report says around its tables: `compare` (results against their
    baselines) or `diff` (B against A): its title, what a case was judged against, the
    command that reproduces it, and lines of its own after each case's warnings."""

    title: str = "## perfci comparison"
    against: Callable[[CaseComparison], str] = against_baseline
    reproduce: Callable[[CaseComparison], str] = own_reproduce
    notes: Callable[[CaseComparison], list[str]] = no_notes


def comparison_markdown(comparisons: list[CaseComparison], confidence: float,
                        plots: list[list[str]] | None = None, framing: Framing = Framing()) -> str:
    """The report for a job summary or an issue body; `plots[i]` are image paths for
    comparison i. Each case opens with the four lines (report/opening.py), then its
    verdict, its warnings, the metrics that need a look; the unchanged rows and how it
    was judged are folded."""
    lines = [framing.title, ""]
    for i, comp in enumerate(comparisons):
        first = comp.results[0]
        lines += [f"### {comp.label}", ""]
        if comp.skipped:
            lines += [f"**Skipped:** {comp.skipped}", ""]
            continue
        lines += [f"- {line}" for line in comparison_opening(comp, framing.against(comp), framing.reproduce(comp))]
        lines += ["", case_verdict(comp), ""]
        lines += [f"- ⚠️ {w}" for w in comp.warnings]
        if notes := framing.notes(comp):
            lines += ["", *notes]
        method = [f"- current: {len(comp.results)} run(s): " + ", ".join(f"`{r.id}`" for r in comp.results),
                  f"- scenario hash `{first.scenario.hash[:19]}…` · host `{first.host.hostname}` "
                  f"({first.host.cpu_model}, {first.host.cpus} CPUs) · server "
                  f"{first.server.full_version or first.server.version}"]
        if comp.baseline is not None and comp.baseline_file is None:
            method.append(f"- against {framing.against(comp)}")
        elif comp.baseline is not None:
            b = comp.baseline
            method.append(f"- baseline `{comp.baseline_file}`: {len(b.samples)} sample(s) from "
                          f"{b.samples[0].date[:10] if b.samples else '–'} to {b.samples[-1].date[:10] if b.samples else '–'}")
        elif str(comp.baseline_file).endswith(".jsonl"):
            method.append(f"- no usable sample in the history `{comp.baseline_file}` yet: each valid nightly run adds one")
        else:
            method.append(f"- no baseline at `{comp.baseline_file}`: record one with `perfci baseline update`")
        method += [f"- history: {note}" for note in comp.provenance]
        rules = comp.rules
        method.append(f"- change: current against the baseline in percent, worse or better as the metric's direction "
                      f"reads; interval: {confidence:.1%} (moderated pooled t on log values, "
                      f"CV floor {rules.cv_floor:.0%}, prior CV {rules.prior_cv:.0%} x {rules.prior_df}); "
                      f"flagged only beyond tolerance AND with the interval excluding 1; metric specs: {comp.specs_from}")
        quiet = [r for r in comp.rows if r.verdict.verdict in (Outcome.UNCHANGED, Outcome.NO_BASELINE)]
        attention = [r for r in comp.rows if r not in quiet]
        if attention:
            lines += ["", *table(COMPARISON_COLUMNS, (_comparison_cells(row, confidence) for row in attention))]
        if (work := work_changed_line(comp)) is not None:
            lines += ["", work]
        for row in comp.regressions:
            if row.movers:
                lines += ["", f"Counters per transaction that moved most beside `{row.key}`:", "",
                          *table(["counter", "baseline", "current"],
                                 ([f"`{name}`", f"{before:.4g}", f"{after:.4g}"] for name, before, after in row.movers))]
        if quiet:
            what = "within tolerance (the change itself, not yet its interval) or without a baseline"
            lines += ["", f"<details><summary>{len(quiet)} metric{'s' if len(quiet) > 1 else ''} {what}</summary>", "",
                      *table(COMPARISON_COLUMNS, (_comparison_cells(row, confidence) for row in quiet)), "", "</details>"]
        if plots and plots[i]:
            # GitHub shows no image by a run's own path: the chart in Markdown, the PNG in the artifact
            lines += ["", *mermaid_intervals(comp),
                      "PNG: " + ", ".join(f"`{p}`" for p in plots[i]) + " (in the run's artifact)"]
        lines += ["", "<details><summary>What was compared, and how</summary>", "", *method, "", "</details>"]
        lines.append("")
    return "\n".join(lines)


# ---------------------------------------------------------------- matrix runs

MATRIX_METRICS = (
    ("tps", "tps", "{:.1f}"),
    ("qps", "qps", "{:.1f}"),
    ("latency_ms_avg", "lat avg ms", "{:.2f}"),
    ("latency_ms_p95", "lat p95 ms", "{:.2f}"),
    ("ibuf_merges_insert_per_s", "ibuf insert merges/s", "{:.1f}"),
    ("ibuf_merges_delete_mark_per_s", "ibuf del-mark merges/s", "{:.1f}"),
    ("compress_miss_rate", "compress miss", "{:.1%}"),
    ("server_cpu_util", "server CPU", "{:.2f}"),
)


def _comparison_cells(row: MetricRow, confidence: float) -> list[str]:
    current = statistics.mean(row.current) if row.current else None
    return [f"`{row.key}` {row.spec.direction.arrow}", _mean_pm(row.baseline, confidence),
            "–" if current is None else f"{current:.4g}",
            metric_change(row), f"±{row.spec.tolerance:.0%}", presentation(row.key)[1], _verdict_label(row)]


def metric_change(row: MetricRow) -> str:
    """A compared metric's change against its baseline, as every table writes a change."""
    v = row.verdict
    if v.change_pct is None:
        return "–"
    est = v.estimate
    return change_cell(1 + v.change_pct / 100, est.low if est else None, est.high if est else None, row.spec.direction)


def _verdict_label(row: MetricRow) -> str:
    if row.work_changed:
        return "🔴 work changed (more per txn)" if row.verdict.verdict == Outcome.REGRESSION else "work changed (less per txn)"
    return verdict_label(row.verdict.verdict, row.verdict.change_pct, row.spec.direction, point_only=True)


def work_changed_line(comp: CaseComparison) -> str | None:
    """The work-changed gate's finding: which deterministic counters moved, at the family's level."""
    changed = comp.work_changed
    if not changed:
        return None
    members = sum(r.gate == "work" for r in comp.rows)
    listed = ", ".join(f"`{r.key}` {signed_percent(r.verdict.change_pct or 0)}" for r in changed[:8])
    more = f" and {len(changed) - 8} more" if len(changed) > 8 else ""
    return (f"**Work changed**: {len(changed)} of {members} counters that are deterministic under this fixed work "
            f"(the noise model's run CV ≤ 0.5 %) differ from the baseline per transaction: {listed}{more} "
            f"(family-wise {1 - comp.rules.confidence:.1%} over the {members}). The run did different work: "
            "a changed plan, a changed workload, or a changed server; throughput rows are read with that in mind.")


def matrix_markdown(results: list[Result], out_dir: Path) -> str:
    """All cases of one matrix run side by side, with the plots (written to out_dir/plots)."""

    first = results[0]
    sc, srv = first.scenario, first.server
    lines = [f"## {sc.name} · profile `{sc.profile}` · {len(results)} case(s) · "
             f"{srv.flavor} {srv.full_version or srv.version}", "",
             f"- host `{first.host.hostname}` ({first.host.cpu_model}, {first.host.cpus} CPUs) · "
             f"harness `{first.harness.git_sha[:10]}` · 1 run per case; spread = CV of interval tps", ""]
    phases = list(dict.fromkeys(p for r in results for p in r.phases))
    header = ["case", "phase", *(label for _, label, _ in MATRIX_METRICS), "tps CV"]
    rows: list[list[str]] = []
    for r in results:
        if not r.ran:
            rows.append([f"`{r.case}`", "skipped", r.skip_reason or "", *[""] * (len(header) - 3)])
            continue
        for phase in phases:
            if phase not in r.phases:
                continue
            ph = r.phases[phase]
            cv = interval_cv(ph.intervals)
            rows.append([f"`{r.case}`", phase, *(_fmt(ph.metrics.get(key), fmt) for key, _, fmt in MATRIX_METRICS),
                         "–" if cv is None else f"{cv:.1%}"])
    lines += table(header, rows)
    ran = [r for r in results if r.ran]
    step_names = list(dict.fromkeys(s.name for r in ran for s in r.steps if s.kind != "measure"))
    if step_names:
        step_rows = []
        for r in ran:
            by_name = {s.name: s for s in r.steps}
            step_rows.append([f"`{r.case}`", *(f"{by_name[n].duration_s:.1f} / {_mib(_total_size(by_name[n].sizes_after))}"
                                               if n in by_name else "–" for n in step_names)])
        lines += ["", "Steps: duration s / .ibd MiB after", "", *table(["case", *step_names], step_rows)]
    if ran:
        plot_dir = Path(out_dir) / "plots"
        made = matrix_plots(ran, plot_dir)
        lines += [""] + [f"![{p.stem}](plots/{p.name})" for p in made]
    lines += ["", "Reproduce one case: " + (f"`{first.reproduce}`" if first.reproduce else "–"), ""]
    return "\n".join(lines)
