"""The one Markdown table renderer: every table perfci writes (reports, A/B, calibrate,
issues, PR text) goes through `table`, so they look alike and escape alike."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from perfci.model.verdicts import Outcome

# how every report, comment and issue shows a verdict
VERDICT_LABEL = {Outcome.REGRESSION: "🔴 regression", Outcome.IMPROVEMENT: "🟢 improvement",
                 Outcome.UNCHANGED: "unchanged", Outcome.INCONCLUSIVE: "⚪ inconclusive",
                 Outcome.NO_BASELINE: "no baseline", Outcome.UNSTABLE: "〰 unstable", Outcome.MOVED: "moved"}


def row(cells: Sequence[object]) -> str:
    """One table line; an empty cell is a single space (`| a | |`)."""
    return "|" + "|".join(f" {c} " if str(c) else " " for c in cells) + "|"


def table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> list[str]:
    """Lines of a GitHub-flavoured Markdown table: header, rule, one line per row."""
    return [row(header), "|" + "---|" * len(header), *(row(r) for r in rows)]
