"""PNG plots for reports (matplotlib, no display needed)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)


def interval_plot(comparison, out_dir: Path) -> Path:
    """Per-interval tps of every phase: current runs (solid) over baseline samples (grey)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    first = comparison.results[0]
    phases = list(first["phases"])
    fig, axes = plt.subplots(1, len(phases), figsize=(5 * len(phases), 3.2), squeeze=False, sharey=True)
    for ax, phase in zip(axes[0], phases):
        for sample in comparison.baseline.samples if comparison.baseline else []:
            series = sample.intervals.get(phase, [])
            ax.plot(range(1, len(series) + 1), series, color="0.7", linewidth=0.8)
        for r in comparison.results:
            series = [iv["tps"] for iv in r["phases"][phase]["intervals"]]
            ax.plot(range(1, len(series) + 1), series, linewidth=1.4, label=r["id"][-6:])
        ax.set_title(f"{phase}: tps per interval")
        ax.set_xlabel("interval")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("tps (grey: baseline samples)")
    axes[0][-1].legend(fontsize=7, title="current", title_fontsize=7)
    fig.suptitle(comparison.label, fontsize=9)
    fig.tight_layout()
    path = out_dir / f"intervals-{_slug(first['scenario']['name'])}-{_slug(first['scenario']['profile'])}-{_slug(first.get('case', 'default'))}.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def history_plot(metric: str, points: list[dict], change_points: list[int], out_path: Path) -> Path:
    """A metric's nightly history with change points marked."""
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(8, 3.2))
    values = [p["value"] for p in points]
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
