"""Where a change shows, from a counting A/B and a timed A/B of the same two sides
(`perfci ab --measure both`): in the code's work (instructions per transaction), or in
time only. Counted instructions do not see waits, locks, cache misses or the host, so time
worse with the work unchanged is "the same work took longer", never a code story; the
work moving is more (or less) code whatever time did. Pure: verdicts in, a family out."""

from __future__ import annotations

from perfci.model.ab_verdict import AbMetric, AbVerdict, ChangeFamily, FamilyKind
from perfci.model.metrics import WORK_METRIC
from perfci.model.verdicts import Outcome
from perfci.util.text import code_span

# the first kind found in any phase names the A/B's family: a regression's news first
PRECEDENCE: tuple[FamilyKind, ...] = ("more-code", "same-work-slower", "undecided", "less-code", "same-work-faster",
                                      "no-change")


def _phase(metric: AbMetric) -> str:
    return metric.key.split(".", 1)[0]


def phase_family(work: Outcome | None, time: list[Outcome]) -> FamilyKind:
    """One phase: its counted instructions' verdict (None: not counted) and its judged
    time metrics' verdicts."""
    slower, faster = Outcome.REGRESSION in time, Outcome.IMPROVEMENT in time
    if work == Outcome.REGRESSION:
        return "more-code"
    if work == Outcome.IMPROVEMENT:
        return "less-code"
    if work != Outcome.UNCHANGED:
        return "undecided"  # the count was inconclusive, unstable or missing: it cannot name a family
    if slower:
        return "same-work-slower"
    return "same-work-faster" if faster else "no-change"


def change_family(work: AbVerdict, time: AbVerdict) -> ChangeFamily:
    counted = {_phase(m): m.verdict for m in work.metrics if m.judged and m.key.endswith("." + WORK_METRIC)}
    timed: dict[str, list[Outcome]] = {}
    for m in time.metrics:
        if m.judged:
            timed.setdefault(_phase(m), []).append(m.verdict)
    kinds = {phase: phase_family(counted.get(phase), timed.get(phase, []))
             for phase in [*counted, *(p for p in timed if p not in counted)]}
    kind = next(k for k in PRECEDENCE if k in kinds.values() or k == "no-change")
    phases = [p for p, k in kinds.items() if k == kind]
    return ChangeFamily(kind=kind, phases=phases, line=family_line(kind, phases))


def family_line(kind: FamilyKind, phases: list[str]) -> str:
    where = ", ".join(code_span(p) for p in phases)
    return {
        "more-code": f"more code ran for the same statements: instructions per transaction up in {where}",
        "less-code": f"less code ran for the same statements: instructions per transaction down in {where}",
        "same-work-slower": f"the same work took longer in {where}: the counted instructions per transaction did "
                            "not change, so waits, contention, cache misses or the host, not more code",
        "same-work-faster": f"the same work ran faster in {where}: the counted instructions per transaction did "
                            "not change",
        "undecided": f"not decided in {where}: the counted work could be neither flagged nor shown unchanged",
        "no-change": "the counted work did not change, and time did not move where it was decided",
    }[kind]
