"""The report and the verdict of `perfci ab --measure both`: where the change shows
first, then the counting A/B's and the timed A/B's own reports, unchanged but for their
headings (one level down)."""

from __future__ import annotations

from perfci.model.ab_verdict import AbVerdict, ChangeFamily, overall
from perfci.model.verdicts import Outcome
from perfci.util.text import markdown

HEADLINE = {Outcome.REGRESSION: "**Regression**", Outcome.UNCHANGED: "**No change**",
            Outcome.INCONCLUSIVE: "**No regression found, not conclusive**"}


def both_verdict(work: AbVerdict, timed: AbVerdict, family: ChangeFamily, report_file: str | None) -> AbVerdict:
    """One verdict of the two A/Bs: their judged metrics (the count's first; a key both
    judged, once), the worse outcome, the family, and both verdicts whole as its parts."""
    judged = [m for m in work.metrics if m.judged]
    judged += [m for m in timed.metrics if m.judged and m.key not in {j.key for j in judged}]
    outcome = overall(judged)
    mdes = [m.mde for m in judged if m.mde is not None]
    shown = work if family.kind in ("more-code", "less-code") else timed
    return timed.model_copy(update={
        "outcome": outcome, "verdict_line": f"{HEADLINE[outcome]}: {family.line}.",
        "sizing": f"work: {work.sizing}; time: {timed.sizing}",
        "regressions": [m.key for m in judged if m.verdict == Outcome.REGRESSION],
        "blind_below": max(mdes) if mdes and outcome != Outcome.REGRESSION else None,
        "metrics": judged, "why": shown.why, "explain_dir": shown.explain_dir, "report_file": report_file,
        "why_line": family.line + (f": {shown.why_line}" if shown.why_line else ""),
        "alpha": work.alpha + timed.alpha if work.alpha is not None and timed.alpha is not None else None,
        "bursts_file": None, "family": family, "parts": [work, timed]})


def demoted(report: str) -> str:
    return "\n".join("#" + line if line.startswith("#") else line for line in report.splitlines())


def both_markdown(verdict: AbVerdict, reports: list[str]) -> str:
    """The report of `verdict` (both_verdict's): the family first, each part's verdict line,
    then the parts' own reports."""
    work, timed = verdict.parts
    lines = [f"## perfci A/B (counted work, then time): {markdown(work.scenario)} · profile `{work.profile}`", "",
             verdict.verdict_line, "",
             f"- work (instructions per transaction, counted; half the budget and half the false-alarm level): "
             f"{work.verdict_line}",
             f"- time (throughput and latency, the servers running natively; the other half): {timed.verdict_line}",
             ""]
    return "\n".join(lines + [demoted(r) for r in reports]) + "\n"
