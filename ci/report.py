"""Markdown summaries of result files: every number with its context
(server, config, scenario hash, host, sample count, spread)."""

from __future__ import annotations

import statistics
from pathlib import Path

from scipy import stats as sps

# (metric key, label, format) in the order a performance engineer reads them.
SUMMARY_METRICS = (
    ("tps", "tps", "{:.1f}"),
    ("qps", "qps total", "{:.1f}"),
    ("qps_write", "qps write", "{:.1f}"),
    ("qps_read", "qps read", "{:.1f}"),
    ("latency_ms_avg", "latency avg (ms)", "{:.2f}"),
    ("latency_ms_p95", "latency p95 (ms)", "{:.2f}"),
    ("errors_per_s", "errors/s", "{:.2f}"),
    ("index_page_splits_per_txn", "page splits / txn", "{:.3f}"),
    ("index_page_merge_attempts_per_txn", "merge attempts / txn", "{:.3f}"),
    ("compress_ops_per_txn", "compress ops / txn", "{:.3f}"),
    ("compress_failures_per_txn", "compress failures / txn", "{:.3f}"),
    ("uncompress_ops_per_txn", "uncompress ops / txn", "{:.3f}"),
    ("pages_written_per_txn", "pages written / txn", "{:.2f}"),
    ("server_cpu_util", "server CPU (cores)", "{:.2f}"),
)


def _fmt(value, fmt: str) -> str:
    return "–" if value is None else fmt.format(value)


def interval_cv(intervals: list[dict], key: str = "tps") -> float | None:
    """Coefficient of variation of the per-interval values: the within-run spread."""
    values = [iv[key] for iv in intervals]
    if len(values) < 2 or not statistics.mean(values):
        return None
    return statistics.stdev(values) / statistics.mean(values)


def _mib(nbytes: int | None) -> str:
    return "–" if nbytes is None else f"{nbytes / 2**20:.1f}"


def _total_size(sizes: dict) -> int | None:
    return sum(s["file_size"] for s in sizes.values()) if sizes else None


def summary_markdown(result: dict) -> str:
    sc, srv, host, harness = result["scenario"], result["server"], result["host"], result["harness"]
    phases = result["phases"]
    names = list(phases)
    ratio_pair = None
    for h in sc["resolved"].get("headline", []):
        ratio_pair = (h["numerator"], h["denominator"])
        break
    lines = [
        f"### {sc['name']} · profile `{sc['profile']}` · {srv['flavor']} {srv['full_version']}",
        "",
        f"- scenario hash `{sc['hash'][:19]}…` · result `{result['id']}`",
        f"- host `{host['hostname']}`: {host['cpu_model']}, {host['cpus']} CPUs, "
        f"{(host.get('memory_bytes') or 0) / 2**30:.0f} GiB, {host['kernel']}, "
        f"datadir on {host.get('datadir_filesystem', {}).get('type', '?')}",
        f"- harness `{harness['git_sha'][:10]}`{' (dirty)' if harness.get('dirty') else ''} · {harness['sysbench']}",
        f"- config overrides: {', '.join(f'{k}={v}' for k, v in srv['config']['overrides'].items()) or 'none'}",
        "- samples: 1 run; spread is the CV of the per-interval tps within each phase",
        "",
    ]
    header = ["metric", *names]
    if ratio_pair:
        header.append(f"{ratio_pair[0]}/{ratio_pair[1]}")
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for key, label, fmt in SUMMARY_METRICS:
        values = [phases[p]["metrics"].get(key) for p in names]
        if all(v is None for v in values) or all(v == 0 for v in values):
            continue
        row = [label, *(_fmt(v, fmt) for v in values)]
        if ratio_pair:
            num, den = phases[ratio_pair[0]]["metrics"].get(key), phases[ratio_pair[1]]["metrics"].get(key)
            row.append(f"{num / den:.3f}" if num is not None and den else "–")
        lines.append("| " + " | ".join(row) + " |")
    cvs = [interval_cv(phases[p]["intervals"]) for p in names]
    counts = [len(phases[p]["intervals"]) for p in names]
    lines.append("| tps interval CV (n intervals) | " + " | ".join(
        f"{cv:.1%} (n={n})" if cv is not None else f"– (n={n})" for cv, n in zip(cvs, counts))
        + (" | |" if ratio_pair else " |"))
    lines.append("| .ibd MiB at phase end | " + " | ".join(_mib(_total_size(phases[p]["sizes_after"])) for p in names)
                 + (" | |" if ratio_pair else " |"))
    if result.get("headline"):
        lines += ["", "**Headline:** " + " · ".join(
            f"{k} = {'–' if v is None else f'{v:.3f}'}" for k, v in result["headline"].items())]
    lines += ["", "| step | kind | duration (s) | .ibd MiB after |", "|---|---|---|---|"]
    for step in result["steps"]:
        lines.append(f"| {step['name']} | {step['kind']} | {step['duration_s']:.1f} | "
                     f"{_mib(_total_size(step.get('sizes_after', {})))} |")
    if result.get("notes"):
        lines += ["", "Config notes:"]
        for note in result["notes"]:
            target = f" -> {note['to']}" if note.get("to") else ""
            lines.append(f"- `{note['option']}` {note['action']}{target}: {note['reason']}")
    lines += ["", f"Reproduce: `{result['reproduce']}`", ""]
    return "\n".join(lines)


# ---------------------------------------------------------------- comparisons

VERDICT_MARK = {"regression": "🔴 regression", "improvement": "🟢 improvement", "unchanged": "unchanged",
                "inconclusive": "⚪ inconclusive", "no-baseline": "no baseline"}


def _mean_pm(values: list[float], confidence: float) -> str:
    """mean ± half-width of the t interval of the mean, for the baseline column."""
    if not values:
        return "–"
    mean = statistics.mean(values)
    if len(values) < 2:
        return f"{mean:.4g} (n=1)"
    half = sps.t.ppf(0.5 + confidence / 2, len(values) - 1) * statistics.stdev(values) / len(values) ** 0.5
    return f"{mean:.4g} ± {half:.2g} (n={len(values)})"


def comparison_markdown(comparisons, confidence: float, plots: list[list[str]] | None = None) -> str:
    """The report for a job summary or an issue body; `plots[i]` are image paths for comparison i."""
    lines = ["## perfci comparison", ""]
    for i, comp in enumerate(comparisons):
        first = comp.results[0]
        lines += [f"### {comp.label}", ""]
        lines.append(f"- current: {len(comp.results)} run(s): " + ", ".join(f"`{r['id']}`" for r in comp.results))
        lines.append(f"- scenario hash `{first['scenario']['hash'][:19]}…` · host `{first['host']['hostname']}` "
                     f"({first['host']['cpu_model']}, {first['host']['cpus']} CPUs) · server {first['server']['full_version']}")
        if comp.baseline is not None:
            b = comp.baseline
            lines.append(f"- baseline `{comp.baseline_file}`: {len(b.samples)} sample(s) "
                         f"from {b.samples[0].date[:10] if b.samples else '–'} to {b.samples[-1].date[:10] if b.samples else '–'}")
        else:
            lines.append(f"- no baseline at `{comp.baseline_file}`: record one with `perfci baseline update`")
        lines.append(f"- interval: {confidence:.1%} for the ratio current/baseline (moderated pooled t on log values); "
                     "flagged only beyond tolerance AND with the interval excluding 1")
        for w in comp.warnings:
            lines.append(f"- ⚠️ {w}")
        lines += ["", "| metric | baseline mean ± CI | current | change | ratio CI | tolerance | verdict |",
                  "|---|---|---|---|---|---|---|"]
        for row in comp.rows:
            v = row.verdict
            est = v.estimate
            ci = f"[{est.low:.3f}, {est.high:.3f}]" if est and est.low is not None else "–"
            change = f"{v.change_pct:+.1f} %" if v.change_pct is not None else "–"
            current = statistics.mean(row.current) if row.current else None
            arrow = "↑" if row.spec.direction == "higher" else "↓"
            lines.append(f"| `{row.key}` {arrow} | {_mean_pm(row.baseline, confidence)} | "
                         f"{'–' if current is None else f'{current:.4g}'} | {change} | {ci} | "
                         f"±{row.spec.tolerance:.0%} | {VERDICT_MARK[v.verdict]} |")
        for row in comp.regressions:
            if row.movers:
                lines += ["", f"Counters per transaction that moved most beside `{row.key}`:", "",
                          "| counter | baseline | current |", "|---|---|---|"]
                for name, b, c in row.movers:
                    lines.append(f"| `{name}` | {b:.4g} | {c:.4g} |")
        if plots and plots[i]:
            lines += [""] + [f"![{Path(p).stem}]({p})" for p in plots[i]]
        reproduce = first.get("reproduce")
        if reproduce:
            lines += ["", f"Reproduce: `{reproduce}`"]
        lines.append("")
    return "\n".join(lines)
