"""The one Markdown table renderer: every table perfci writes (reports, A/B, calibrate,
issues, PR text) goes through `table`, so they look alike and escape alike."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from perfci.model.verdicts import Direction, Outcome

# how every report, comment and issue shows a verdict
VERDICT_LABEL = {Outcome.REGRESSION: "🔴 regression", Outcome.IMPROVEMENT: "🟢 improvement",
                 Outcome.UNCHANGED: "unchanged", Outcome.INCONCLUSIVE: "⚪ inconclusive",
                 Outcome.NO_BASELINE: "no baseline", Outcome.UNSTABLE: "〰 unstable", Outcome.MOVED: "moved"}


# compare's `unchanged` is the point inside the tolerance; an A/B's is the whole interval
# inside it (judge/stats.py): one word, one meaning, so compare says what it checked
POINT_WITHIN = "within tolerance"


def verdict_label(outcome: Outcome, change: float | None = None, direction: Direction | None = None,
                  point_only: bool = False) -> str:
    """A verdict as every table shows it; an inconclusive change says which way it went
    (a faster metric is not just "inconclusive"); `point_only`: a verdict on the point
    estimate (compare's), whose `unchanged` says so."""
    if outcome == Outcome.UNCHANGED and point_only:
        return POINT_WITHIN
    if outcome == Outcome.INCONCLUSIVE and change and direction is not None:
        return f"{VERDICT_LABEL[outcome]} ({way(change, direction)})"
    return VERDICT_LABEL[outcome]


def signed(change: float) -> str:
    """A number in percent with its sign, one decimal: +11.0, −9.9 (a minus sign, not a hyphen)."""
    return f"{'+' if change >= 0 else '−'}{abs(change):.1f}"


def signed_percent(change: float) -> str:
    """A relative change in percent with its sign: +11.0 %, −9.9 %."""
    return f"{signed(change)} %"


def way(change: float, direction: Direction) -> str:
    """Which way a relative change went for a metric: "better" or "worse"."""
    return "better" if (change > 0) == (direction is Direction.HIGHER) else "worse"


def factor(x: float) -> str:
    """A ratio as a factor, no exponent: ×0.45, ×8.1, ×534, ×35,200."""
    return f"×{x:,.0f}" if x >= 100 else f"×{x:.3g}"


def change_cell(ratio: float, low: float | None, high: float | None, direction: Direction | None = None) -> str:
    """B against A (or a night against its baseline), one convention for every table: the
    change in percent, its interval in percent, and which way that is for the metric:
    `+11.0 % [+1.2, +21.7] worse`; a factor of 2 or more as factors (`×534 [×8.1, ×35,200]
    worse`: +53300 % says nothing)."""
    which = "" if direction is None or ratio == 1 else " " + way(ratio - 1, direction)
    bounds = (low, high) if low is not None and high is not None and low > 0 else None
    if ratio >= 2 or ratio <= 0.5:
        interval = f" [{factor(bounds[0])}, {factor(bounds[1])}]" if bounds else ""
        return f"{factor(ratio)}{interval}{which}"
    interval = f" [{signed((bounds[0] - 1) * 100)}, {signed((bounds[1] - 1) * 100)}]" if bounds else ""
    return f"{signed_percent((ratio - 1) * 100)}{interval}{which}"


def p_value(p: float) -> str:
    """One notation for small probabilities, in tables: 0.0110, < 0.0001."""
    return "< 0.0001" if p < 0.0001 else f"{p:.4f}"


def row(cells: Sequence[object]) -> str:
    """One table line; an empty cell is a single space (`| a | |`)."""
    return "|" + "|".join(f" {c} " if str(c) else " " for c in cells) + "|"


def table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> list[str]:
    """Lines of a GitHub-flavoured Markdown table: header, rule, one line per row."""
    return [row(header), "|" + "---|" * len(header), *(row(r) for r in rows)]
