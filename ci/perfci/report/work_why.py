"""The Why of a counted A/B: where the instructions went, function by function
(judge/work_profile.py), for the phases whose counted work moved."""

from __future__ import annotations

from perfci.judge.work_profile import PhaseShift
from perfci.report.explanation import with_heading
from perfci.util.text import code_span, markdown


def _count(x: float) -> str:
    return f"{x:+,.0f}" if x else "0"


def work_why_section(shifts: list[PhaseShift]) -> str:
    return with_heading(work_why_body(shifts))


def work_why_body(shifts: list[PhaseShift]) -> str:
    lines = ["where the instructions went (callgrind)", "",
             "Each function's own instructions per transaction (callgrind's self cost, not its callees'), summed "
             "over the verdict's measured bursts: exact counts of the same seeded transactions on A and B, no "
             "sampling. Listed: the functions that moved most in the direction of the phase's change (a function "
             "shown as an address has no symbol in this binary: a `build:` spec keeps them)."]
    for s in shifts:
        relative = s.delta / s.total_a if s.total_a else 0.0
        lines += ["", f"**{markdown(s.phase)}**: B ran {_count(s.delta)} instructions per transaction ({relative:+.2%}); "
                      + (f"the {len(s.functions)} functions below add up to" if len(s.functions) > 1 else
                       "the function below adds up to") + f" {s.shown_share:.0%} of that.", "",
                  "| function | A per txn | B per txn | B − A | share of the change | B − A with its callees |",
                  "|---|---|---|---|---|---|"]
        for f in s.functions:
            share = f.delta / s.delta if s.delta else 0.0
            inclusive = "–" if f.inclusive_delta is None else _count(f.inclusive_delta)
            lines.append(f"| {code_span(f.name)} | {f.a:,.0f} | {f.b:,.0f} | {_count(f.delta)} | {share:.1%} "
                         f"| {inclusive} |")
        if s.path:
            lines += ["", "The call path into it (callgrind's inclusive counts: each function with everything it "
                          "called, the largest moves first; an outer function's move holds its callees'): "
                      + " → ".join(f"{code_span(f.name)} {_count(f.inclusive_delta or 0)}" for f in s.path[:6])]
    return "\n".join(lines) + "\n"
