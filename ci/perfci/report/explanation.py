"""The "Why" section of an explain pass (judge/profile_diff.py findings) as Markdown:
the A/B report, the regression issue, the PR comment and the sweep's findings all
carry it. Top rows only (TOP), the rest in the artifacts it links to. Nothing is
shown that did not stand out of the explain bursts' own noise; a stripped binary
says so instead of listing addresses."""

from __future__ import annotations

from perfci.judge.profile_diff import FDR, SHARE_FLOOR, Change, PhaseFindings
from perfci.model.explain import ExplainRun
from perfci.report.table import table
from perfci.util.text import code_span, markdown

TOP = 5
FLAMES_AT = ("Flame graphs (A, B, and the differential: red grew, blue shrank) and every burst's folded stacks: "
             "{link}")
WHY_HEADING = "### Why"   # how the section starts in a report (its body is typed in the verdict: AbVerdict.why)
NO_SYMBOLS = ("no symbols in this build: most of the server's own CPU resolves to no function name (a stripped "
              "release binary). A `build:` spec keeps them (scripts/build-server builds RelWithDebInfo with "
              "frame pointers); the flame graphs are kept, by library")


def _num(x: float) -> str:
    return f"{x:.3g}" if abs(x) < 1000 else f"{x:,.0f}"


def _change(r: Change) -> str:
    return f"{r.ratio - 1:+.0%}" if r.ratio is not None else "new on B"


def _rows(rows: list[Change], name_cells) -> list[str]:
    return table(["", "what", "A", "B", "B − A", "change", "adj. p"],
                 ([name_cells(r), r.kind, _num(r.a), _num(r.b), f"{_num(r.delta)} {r.unit}", _change(r),
                   f"{r.adjusted:.2g}"] for r in rows[:TOP]))


def _function_cell(r: Change) -> str:
    kernel = r.name.endswith("_[k]")  # collapse-perf --all marks kernel frames
    return code_span(r.name.removesuffix("_[k]")) + (" (kernel)" if kernel else "")


def why_section(run: ExplainRun, findings: list[PhaseFindings], link: str | None = None,
                share_floor: float = SHARE_FLOOR) -> str:
    return with_heading(why_body(run, findings, link, share_floor))


def with_heading(body: str) -> str:
    """A Why as the report's last section (the typed verdict keeps the body alone)."""
    return f"{WHY_HEADING}: {body}"


def why_body(run: ExplainRun, findings: list[PhaseFindings], link: str | None = None,
             share_floor: float = SHARE_FLOOR) -> str:
    lines = [f"the explain pass ({markdown(run.why_run)})", "",
             f"After the verdict's bursts, on the last instance pair's servers: {findings[0].bursts if findings else 0} "
             f"extra burst pairs per phase (not judged), the same transactions on A and B, each profiled "
             f"({code_span(run.profiler)}). Shown: only what changed beyond these bursts' own spread (Welch, "
             f"Benjamini-Hochberg {FDR:.0%}) and by at least {share_floor:.1%} of A's CPU per transaction "
             "(functions), 5 % of a call's latency or 1 % of its rows (digests), 1 % of A's transaction time (waits)."]
    for f in findings:
        lines += ["", f"**{markdown(f.phase)}**" + (
            f": server CPU {_num(f.cpu_us['a'])} → {_num(f.cpu_us['b'])} µs per transaction "
            f"({f.cpu_us['b'] / f.cpu_us['a'] - 1:+.1%})" if f.profiled and f.cpu_us.get("a") else "")]
        shown = False
        if f.profiled and not f.symbols:
            cover = ", ".join(f"{side.upper()} {c:.0%}" for side, c in f.coverage.items() if c is not None)
            lines += ["", f"CPU profile: {NO_SYMBOLS} (named frames: {cover})."]
        elif f.profiled:
            own = [r for r in f.functions if r.stands_out and r.kind == "self"]
            if own:
                lines += ["", "Where the CPU per transaction changed (self time, with unnamed code the function "
                              "called):", "", *_rows(own, _function_cell)]
                shown = True
            if f.paths:
                lines += ["", "Call paths whose CPU per transaction changed (inclusive: where the change enters → "
                              "how deep it goes, callers that only pass it on left out):", "",
                          *table(["path", "A", "B", "B − A", "change", "adj. p"],
                                 ([" → ".join(_function_cell(r) for r in ((p.top,) if p.frames == 1 else
                                                                        (p.top, p.bottom)))
                                   + (f" ({p.frames} functions)" if p.frames > 2 else ""),
                                   _num(p.top.a), _num(p.top.b), f"{_num(p.top.delta)} {p.top.unit}",
                                   _change(p.top), f"{p.top.adjusted:.2g}"] for p in f.paths[:TOP]))]
                shown = True
        digests = [r for r in f.digests if r.stands_out]
        if digests:
            lines += ["", "Statements (performance_schema digests) that changed:", "",
                      *_rows(digests, lambda r: code_span(r.name[:80]))]
            shown = True
        waits = [r for r in f.waits if r.stands_out]
        if waits:
            lines += ["", "Waits that changed:", "", *_rows(waits, lambda r: code_span(r.name))]
            shown = True
        if not shown:
            lines += ["", "Nothing stands out beyond the noise of the explain bursts"
                      + (" in what could be named" if f.profiled and not f.symbols else "") + "."]
    if run.notes:
        lines += ["", *(f"- {markdown(n)}" for n in run.notes)]
    if link:
        lines += ["", FLAMES_AT.format(link=link)]
    return "\n".join(lines) + "\n"
