"""The "tonight" summary of a nightly (the report job's step summary): one row per case,
what the night did about it, linked to its issue."""

from __future__ import annotations

from perfci.model.outputs import TOLD, CaseNight
from perfci.report.table import table
from perfci.util.text import code_span, markdown

SAID = {"opened": "🔴 opened", "commented": "🔴 commented", "written": "🔴 written (dry run)",
        "pending": "🟡 pending", "not-confirmed": "⚪ not confirmed", "standing": "🟠 stands",
        "clean": "🟢 clean", "closed": "🟢 closed", "quiet": "quiet"}


def issue_link(number: int | None, repo_url: str) -> str:
    if number is None:
        return ""
    return f"[#{number}]({repo_url}/issues/{number})" if repo_url else f"#{number}"


def night_summary(cases: list[CaseNight], run_url: str = "", repo_url: str = "") -> str:
    """Markdown: what tonight told (the first line says whether anyone needs to look),
    then the table."""
    told = [c for c in cases if c.told]
    pending = [c for c in cases if c.status == "pending"]
    head = (f"**{len(told)} case{'s' if len(told) != 1 else ''} told of a regression tonight.**" if told
            else "**Nothing opened or commented tonight.**")
    if pending:
        head += f" {len(pending)} pending (a regression waiting for more nights or its budget)."
    rows = [(code_span(c.case), SAID[c.status], issue_link(c.issue, repo_url),
             ", ".join(code_span(k) for k in c.keys), markdown(c.why))
            for c in sorted(cases, key=lambda c: (not c.told, c.status != "pending", c.case))]
    lines = ["## perfci tonight", "", head, "", *table(["case", "tonight", "issue", "metrics", "why"], rows)]
    if run_url:
        lines += ["", f"[The run, its artifacts]({run_url})"]
    return "\n".join(lines) + "\n"


def chat_message(cases: list[CaseNight], run_url: str = "", repo_url: str = "") -> str:
    """The night in one chat message (plain text with links; the webhook's one post a
    night): whether anyone needs to look, each case told of a regression with its issue,
    the counts of the rest."""
    told = [c for c in cases if c.told]
    counts: dict[str, int] = {}
    for c in cases:
        counts[c.status] = counts.get(c.status, 0) + 1
    head = (f"perfci nightly: {len(told)} regression{'s' if len(told) != 1 else ''} told tonight" if told
            else "perfci nightly: nothing opened or commented tonight")
    rest = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()) if status not in TOLD)
    lines = [head + (f" ({rest})" if rest else "") + (f" · {run_url}" if run_url else "")]
    for c in sorted(told, key=lambda c: c.case):
        where = (f"{repo_url}/issues/{c.issue}" if repo_url and c.issue else f"#{c.issue}" if c.issue else c.status)
        lines.append(f"• {c.case}: {', '.join(c.keys[:3])}{' …' if len(c.keys) > 3 else ''} — {c.status} {where}")
    return "\n".join(lines)
