"""A sweep's table (Markdown) and heatmap (PNG): per case and phase, each server's B/base."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from perfci.model.abratio import AbRatio
from perfci.model.metrics import WORK_METRIC
from perfci.model.sweep import Sweep
from perfci.report.plots import pyplot
from perfci.report.table import table
from perfci.util.text import code_span, inert_markdown, markdown

THROUGHPUT = ("qps", "tps")
MARK = {"regression": "🔴 slower", "improvement": "🟢 faster", "unchanged": "within tolerance",
        "inconclusive": "n.s.", "unstable": "unstable"}


def rows_of(sweep: Sweep, metric: str) -> list[tuple[str, str]]:
    """(case, key) of every judged `<phase>.<metric>` the sweep measured, in order."""
    seen: dict[tuple[str, str], None] = {}
    for cell in sweep.cells:
        for key in cell.ratios:
            if key.split(".", 1)[1] == metric:
                seen[(cell.case, key)] = None
    return list(seen)


def headline_metric(sweep: Sweep) -> str:
    """What the table and the heatmap lead with: a counted sweep's instructions per
    transaction (its bursts carry no time metric), else throughput."""
    present = {k.split(".", 1)[1] for c in sweep.cells for k in c.ratios}
    if WORK_METRIC in present:
        return WORK_METRIC
    return next((m for m in THROUGHPUT if m in present), "tps")


def sections(sweep: Sweep) -> tuple[str, ...]:
    """The table's metrics: a counted sweep's instructions, else throughput and statement CPU."""
    headline = headline_metric(sweep)
    return (headline,) if headline == WORK_METRIC else (headline, "statement_cpu_us_per_txn")


COUNTED_MARK = {**MARK, "regression": "🔴 more work", "improvement": "🟢 less work"}


def _cell_text(r: AbRatio | None, metric: str) -> str:
    if r is None:
        return "–"
    marks = COUNTED_MARK if metric == WORK_METRIC else MARK
    return f"{r.ratio:.3f} [{r.low:.3f}, {r.high:.3f}] {marks.get(r.verdict, r.verdict)}"


def sweep_markdown(sweep: Sweep, heatmap: Path | None = None, opening: list[str] | None = None) -> str:
    """The sweep's report: its four lines (`opening`, report/opening.py), then per metric
    the table of B/base, the slower cells' Why, what was not measured, the sizes."""
    base = sweep.servers[0]
    others = sweep.servers[1:]
    measured = [c for c in sweep.cells if c.status == "measured"]
    base_version = next((c.base_version for c in measured), "")
    lines = [f"## perfci sweep: {markdown(sweep.scenario)} · profile {code_span(sweep.profile)}", "",
             *(f"- {line}" for line in opening or []), *([""] if opening else []),
             f"Each server A/B'd against the base {code_span(base)} ({markdown(base_version)}) on this runner "
             f"(class {code_span(sweep.runner_class)}), interleaved bursts; cells are B/base with the decision's "
             "interval (at the metric's Holm step: it excludes 1 exactly when significant); `n.s.`: not "
             "significant (the MDE row says what the A/B could see).", ""]
    for metric in sections(sweep):
        keys = rows_of(sweep, metric)
        if not keys:
            continue
        lines += [f"### {code_span(metric)} (B/base; {'higher' if metric in THROUGHPUT else 'lower'} is better)", ""]
        header = ["case", "phase", *[f"{s} ({_version(sweep, s)})" for s in others]]
        body = []
        for case, key in keys:
            body.append([markdown(case), code_span(key.split(".", 1)[0]),
                         *[_cell_text((sweep.cell(case, s) or _EMPTY).ratios.get(key), metric) for s in others]])
        mdes = []
        for s in others:
            values = [r.mde for c in measured if c.server == s for k, r in c.ratios.items()
                      if k.split(".", 1)[1] == metric and r.mde is not None]
            mdes.append(f"{min(values):.1%}–{max(values):.1%}" if values else "–")
        body.append(["", "MDE (90 % power)", *mdes])
        lines += [*table(header, body), ""]
    for c in measured:  # why a regressed cell got slower: its explain pass, top rows
        if c.regressions and c.why:
            lines += [f"### Why {markdown(c.case)} on {code_span(c.server)} got slower: "
                      + inert_markdown(c.why), ""]
    failed = [c for c in sweep.cells if c.status != "measured"]
    if failed:
        lines += ["Not measured:", ""] + [f"- {markdown(c.case)} on {code_span(c.server)}: {c.status}, "
                                          f"{markdown(c.reason)}" for c in failed] + [""]
    sizes = sorted({c.sizing for c in measured if c.sizing})
    if sizes:
        lines += ["Sizes: " + "; ".join(markdown(s) for s in sizes), ""]
    if heatmap is not None:
        lines += [f"![heatmap]({heatmap.name})", ""]
    return "\n".join(lines)


def _version(sweep: Sweep, server: str) -> str:
    return next((c.version for c in sweep.cells if c.server == server and c.version), "not run")


class _Empty:
    ratios: dict[str, AbRatio] = {}


_EMPTY = _Empty()


DECIDED = ("regression", "improvement", "unchanged")


def shade(r: AbRatio | None) -> float:
    """A cell's colour value: B/base where the A/B decided (regression, improvement,
    unchanged), NaN (drawn grey) where it did not: an unstable 0.74 [0.38, 1.42] is no
    deep-red finding."""
    return r.ratio if r is not None and r.verdict in DECIDED else float("nan")


def heatmap(sweep: Sweep, path: Path) -> Path | None:
    """Cases x servers, colour = B/base of the headline metric where the A/B decided (red
    slower or more work, green faster or less); grey and labelled where it did not
    (inconclusive, unstable)."""
    metric = headline_metric(sweep)
    keys = rows_of(sweep, metric)
    others = sweep.servers[1:]
    if not keys:
        return None
    plt = pyplot()
    values = np.full((len(keys), len(others)), np.nan)
    for i, (case, key) in enumerate(keys):
        for j, server in enumerate(others):
            cell = sweep.cell(case, server)
            values[i, j] = shade(cell.ratios.get(key) if cell else None)
    fig, ax = plt.subplots(figsize=(2.2 + 1.6 * len(others), 1.2 + 0.38 * len(keys)))
    colours = plt.get_cmap("RdYlGn" if metric in THROUGHPUT else "RdYlGn_r").with_extremes(bad="0.85")  # grey: not decided
    image = ax.imshow(values, cmap=colours, vmin=0.8, vmax=1.2, aspect="auto")
    for i, (case, key) in enumerate(keys):
        for j, server in enumerate(others):
            cell = sweep.cell(case, server)
            r = cell.ratios.get(key) if cell else None
            if r is None:
                continue
            undecided = r.verdict not in DECIDED
            ax.text(j, i, f"{r.ratio:.2f}" + (f"\n{r.verdict}" if undecided else ""), ha="center", va="center",
                    fontsize=7 if undecided else 8, color="0.35" if undecided else "black")
            if r.verdict == "unchanged":  # decided: within the tolerance, not a change
                ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="///", edgecolor="0.4",
                                           linewidth=0))
    ax.set_xticks(range(len(others)), [f"{s}\n{_version(sweep, s)}" for s in others], fontsize=7)
    ax.set_yticks(range(len(keys)), [key.split(".", 1)[0] if case == "default" else f"{case} {key.split('.', 1)[0]}"
                                     for case, key in keys], fontsize=7)
    ax.set_title(f"{sweep.scenario} ({sweep.profile}): {metric} B/{sweep.servers[0]} "
                 "(hatched: unchanged; grey: not decided)", fontsize=8)
    fig.colorbar(image, ax=ax, shrink=0.8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
