"""Plots for reports: PNG files (matplotlib, no display needed) for artifacts and pages,
and Mermaid charts for Markdown that GitHub renders itself (job summaries, issues, PR
comments): an image there needs a public URL, which a run's files do not have."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from perfci.model.identity import slug
from perfci.model.result import Result

if TYPE_CHECKING:
    from types import ModuleType

    from matplotlib.figure import Figure

    from perfci.judge.compare import CaseComparison


def pyplot() -> ModuleType:
    """matplotlib's pyplot on the Agg backend (no display), imported on first use: it
    costs ~0.4 s, and most commands never draw (CONTRIBUTING.md, "Start-up cost")."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def interval_plot(comparison: CaseComparison, out_dir: Path) -> Path:
    """Per-interval tps of every phase: current runs (solid) over baseline samples (grey)."""
    plt = pyplot()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    first = comparison.results[0]
    phases = list(first.phases)
    fig, axes = plt.subplots(1, len(phases), figsize=(5 * len(phases), 3.2), squeeze=False, sharey=True)
    for ax, phase in zip(axes[0], phases):
        for sample in comparison.baseline.samples if comparison.baseline else []:
            series = sample.intervals.get(phase, [])
            ax.plot(range(1, len(series) + 1), series, color="0.7", linewidth=0.8)
        for r in comparison.results:
            series = [iv.tps for iv in r.phases[phase].intervals]
            ax.plot(range(1, len(series) + 1), series, linewidth=1.4, label=r.id[-6:])
        ax.set_title(f"{phase}: tps per interval")
        ax.set_xlabel("interval")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("tps (grey: baseline samples)")
    axes[0][-1].legend(fontsize=7, title="current", title_fontsize=7)
    fig.suptitle(comparison.label, fontsize=9)
    fig.tight_layout()
    path = out_dir / f"intervals-{slug(first.scenario.name)}-{slug(first.scenario.profile)}-{slug(first.case)}.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


MAX_POINTS = 60  # a chart wider than this is averaged down: it is read for its shape


def _downsample(series: list[float]) -> list[float]:
    step = -(-len(series) // MAX_POINTS)
    return [sum(chunk) / len(chunk) for chunk in (series[i:i + step] for i in range(0, len(series), step))]


def _mean_by_index(series: list[list[float]]) -> list[float]:
    longest = max((len(s) for s in series), default=0)
    out = []
    for i in range(longest):
        values = [s[i] for s in series if i < len(s)]
        out.append(sum(values) / len(values))
    return out


def mermaid_intervals(comparison: CaseComparison, only: str | None = None) -> list[str]:
    """Per phase, a Mermaid xychart of tps per interval: the baseline samples' mean
    (first line) and each current run (next lines), the y-axis from 0 so that a 1 %
    wobble does not look like a step."""
    lines: list[str] = []
    samples = comparison.baseline.samples if comparison.baseline else []
    for phase in comparison.results[0].phases:
        if only is not None and phase != only:
            continue
        current = [[iv.tps for iv in r.phases[phase].intervals] for r in comparison.results if phase in r.phases]
        baseline = _mean_by_index([s.intervals.get(phase, []) for s in samples])
        drawn = [_downsample(s) for s in ([baseline] if baseline else []) + current if s]
        if not drawn:
            continue
        top = max(max(s) for s in drawn) * 1.1 or 1.0
        width = max(len(s) for s in drawn)
        order = "line 1: baseline mean, then tonight" if baseline else "tonight"
        lines += ["```mermaid", "xychart-beta",
                  f'    title "{phase}: tps per interval ({order})"',
                  f"    x-axis 1 --> {width}", f'    y-axis "tps" 0 --> {top:.4g}']
        lines += [f"    line [{', '.join(f'{v:.4g}' for v in s)}]" for s in drawn]
        lines += ["```", ""]
    return lines


def history_plot(metric: str, values: list[float], change_points: list[int], out_path: Path) -> Path:
    """A metric's nightly history with change points marked."""
    plt = pyplot()
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(8, 3.2))
    ax.plot(range(len(values)), values, marker="o", markersize=3, linewidth=1)
    for cp in change_points:
        ax.axvline(cp - 0.5, color="red", linestyle="--", linewidth=1)
    ax.set_title(f"{metric}: history ({len(values)} runs; red: change points)", fontsize=9)
    ax.set_xlabel("run (oldest first)")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out_path, dpi=90)
    plt.close(fig)
    return out_path


def case_intervals_plot(results: list[Result], out_dir: Path) -> Path:
    """Per-interval tps of each case, one panel per phase."""
    plt = pyplot()
    phases = list(dict.fromkeys(p for r in results for p in r.phases))
    fig, axes = plt.subplots(1, len(phases), figsize=(4.5 * len(phases), 3.4), squeeze=False, sharey=True)
    for ax, phase in zip(axes[0], phases):
        for r in results:
            if phase in r.phases:
                series = [iv.tps for iv in r.phases[phase].intervals]
                ax.plot(range(1, len(series) + 1), series, linewidth=1.1, label=r.case)
        ax.set_title(f"{phase}: tps per interval", fontsize=9)
        ax.set_xlabel("interval")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("tps")
    axes[0][-1].legend(fontsize=6, ncol=1 + len(results) // 8)
    return _save(fig, results, out_dir, "intervals")


def matrix_bar_plot(results: list[Result], out_dir: Path, metric: str = "tps") -> Path:
    """`metric` of the last phase per case, grouped by the first axis, one colour per
    value of the other axes (the change-buffer matrix chart)."""
    plt = pyplot()
    phase = list(results[0].phases)[-1]
    groups = list(dict.fromkeys(_split(r)[0] for r in results))
    members = list(dict.fromkeys(_split(r)[1] for r in results))
    fig, ax = plt.subplots(figsize=(max(5, 1.6 * len(groups) * max(1, len(members)) / 2), 3.6))
    width = 0.8 / max(1, len(members))
    for j, member in enumerate(members):
        xs, ys = [], []
        for i, group in enumerate(groups):
            r = next((r for r in results if _split(r) == (group, member)), None)
            value = r.phases[phase].metrics.get(metric) if r and phase in r.phases else None
            if value is not None:
                xs.append(i + j * width)
                ys.append(value)
        ax.bar(xs, ys, width, label=member or "default")
    ax.set_xticks([i + width * (len(members) - 1) / 2 for i in range(len(groups))], groups)
    ax.set_ylabel(f"{phase} {metric}")
    ax.legend(fontsize=7)
    ax.grid(axis="y", alpha=0.3)
    return _save(fig, results, out_dir, f"matrix-{metric}")


def step_bars_plot(results: list[Result], out_dir: Path) -> Path:
    """Per case: duration of each non-measure step, and .ibd size after each (row formats)."""
    plt = pyplot()
    steps = list(dict.fromkeys(s.name for r in results for s in r.steps if s.kind != "measure"))
    cases = [r.case for r in results]
    fig, (ax_t, ax_s) = plt.subplots(1, 2, figsize=(11, 3.8))
    width = 0.8 / max(1, len(steps))
    for j, name in enumerate(steps):
        times: list[float] = []
        sizes: list[float] = []
        for r in results:
            step = next((s for s in r.steps if s.name == name), None)
            times.append(step.duration_s if step else 0)
            sizes.append(sum(v.file_size for v in step.sizes_after.values()) / 2**20 if step else 0)
        xs = [i + j * width for i in range(len(cases))]
        ax_t.bar(xs, times, width, label=name)
        ax_s.bar(xs, sizes, width, label=name)
    for ax, label in ((ax_t, "duration (s)"), (ax_s, ".ibd MiB after step")):
        ax.set_xticks([i + width * (len(steps) - 1) / 2 for i in range(len(cases))], cases, rotation=30,
                      ha="right", fontsize=7)
        ax.set_ylabel(label)
        ax.grid(axis="y", alpha=0.3)
    ax_s.legend(fontsize=7)
    return _save(fig, results, out_dir, "steps")


def matrix_plots(results: list[Result], out_dir: Path) -> list[Path]:
    out = [case_intervals_plot(results, out_dir), matrix_bar_plot(results, out_dir)]
    if any(s.kind != "measure" for r in results for s in r.steps):
        out.append(step_bars_plot(results, out_dir))
    return out


def _split(result: Result) -> tuple[str, str]:
    """(first axis value, the rest) of a case id."""
    head, _, rest = result.case.partition("/")
    return head, rest


def _save(fig: Figure, results: list[Result], out_dir: Path, kind: str) -> Path:
    plt = pyplot()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    sc = results[0].scenario
    fig.suptitle(f"{sc.name} · {sc.profile}", fontsize=9)
    fig.tight_layout()
    path = out_dir / f"{slug(sc.name)}-{slug(sc.profile)}-{kind}.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
