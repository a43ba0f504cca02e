"""Where counted work moved: per phase, the functions whose own instructions per
transaction (callgrind's self cost, summed over a counted A/B's measured bursts) differ
most between B and A. Exact counts of the same seeded transactions on both sides, so no
significance test: what moved, moved (a function that differs between A/A instances, a
background task's timing, is the A/A's job to show)."""

from __future__ import annotations

from dataclasses import dataclass, field

from perfci.model.bursts import InterleavedRun
from perfci.model.metrics import WORK_METRIC

TOP_FUNCTIONS = 10


@dataclass(frozen=True)
class FunctionShift:
    name: str
    a: float  # instructions per transaction in the function's own code, side A
    b: float
    a_inclusive: float | None = None  # with everything it called (None: not kept, or an older bursts file)
    b_inclusive: float | None = None

    @property
    def delta(self) -> float:
        return self.b - self.a

    @property
    def inclusive_delta(self) -> float | None:
        if self.a_inclusive is None or self.b_inclusive is None:
            return None
        return self.b_inclusive - self.a_inclusive


@dataclass(frozen=True)
class PhaseShift:
    phase: str
    total_a: float  # instructions per transaction, all functions (the bursts' own counts)
    total_b: float
    functions: list[FunctionShift]  # the largest moves of own code, largest first
    path: list[FunctionShift] = field(default_factory=list)  # the largest inclusive moves: the call path into it

    @property
    def delta(self) -> float:
        return self.total_b - self.total_a

    @property
    def shown_share(self) -> float:
        """How much of the phase's change the functions shown add up to."""
        return sum(f.delta for f in self.functions) / self.delta if self.delta else 0.0


def phase_shift(run: InterleavedRun, phase: str, top: int = TOP_FUNCTIONS) -> PhaseShift | None:
    """The functions of `phase` that moved most from A to B (None: not counted per function)."""
    sides = run.work_functions.get(phase, {})
    a, b = sides.get("a"), sides.get("b")
    if not a or not b:
        return None
    with_callees = run.work_inclusive.get(phase, {})
    a_in, b_in = with_callees.get("a", {}), with_callees.get("b", {})

    def inclusive(side: dict[str, float], name: str) -> float | None:
        return side.get(name, 0.0) if a_in and b_in else None

    shifts = [FunctionShift(name, a.get(name, 0.0), b.get(name, 0.0), inclusive(a_in, name), inclusive(b_in, name))
              for name in a.keys() | b.keys() | a_in.keys() | b_in.keys()]
    total_a, total_b = (counted_per_transaction(run, phase, side) for side in "ab")
    sign = 1 if total_b >= total_a else -1
    # the direction of the change first (what made B do more, or less), then by size
    own = sorted((f for f in shifts if f.name in a.keys() | b.keys()), key=lambda f: (-f.delta * sign, f.name))
    path = sorted((f for f in shifts if f.inclusive_delta), key=lambda f: (-(f.inclusive_delta or 0) * sign, f.name))
    return PhaseShift(phase, total_a, total_b, [f for f in own[:top] if f.delta],
                      [f for f in path[:top] if (f.inclusive_delta or 0) * sign > 0])


def counted_per_transaction(run: InterleavedRun, phase: str, side: str) -> float:
    """A side's instructions per transaction over the phase's measured bursts (the same
    bursts the function counts were summed over)."""
    bursts = [b for b in run.bursts if b.phase == phase and b.side == side and not b.warmup
              and WORK_METRIC in b.metrics]
    transactions = sum(b.transactions for b in bursts)
    return sum(b.metrics[WORK_METRIC] * b.transactions for b in bursts) / transactions if transactions else 0.0


# --- flame graphs from a call graph -------------------------------------------------------------------------------
# callgrind keeps each function's own cost and each caller-callee edge's inclusive cost,
# not whole stacks. A flame graph from that is an estimate: a function's cost below a
# caller is split over its callees in proportion to its edges, the same in every stack it
# appears in (gprof's assumption). What it keeps exactly: each function's own total (the
# sum of its frames' self widths) and each root's inclusive total. What it cannot know: a
# function that does other work for different callers (f does X when g calls it and Y
# when h does) shows X and Y under both, in proportion. Said wherever the graphs are.
MAX_DEPTH = 80
MIN_SHARE = 0.0005   # a stack thinner than this share of the total is drawn as its deepest frame's self
THINNER = "[thinner paths]"


def estimated_stacks(own: dict[str, float], calls: list[tuple[str, str, float]]) -> dict[str, float]:
    """Folded stacks ("root;caller;function" -> instructions) estimated from own costs
    and call edges. Roots: the functions no kept edge calls. A function already on the
    stack (recursion) keeps what it passes to itself as its own; below MIN_SHARE of the
    total, and past MAX_DEPTH, what is left of a frame's callees is one `[thinner paths]`
    frame (so the widths still add up)."""
    callees: dict[str, list[tuple[str, float]]] = {}
    called = set()
    for caller, callee, cost in calls:
        if cost > 0 and caller != callee:
            callees.setdefault(caller, []).append((callee, cost))
            called.add(callee)
    into: dict[str, float] = {}
    for callee, cost in ((c, cost) for edges in callees.values() for c, cost in edges):
        into[callee] = into.get(callee, 0.0) + cost
    # a function's width: what it and its kept callees ran, or what its kept callers passed
    # it, whichever is more (edges under the bursts file's floor are not kept: the rest of
    # a frame's width is drawn as `[thinner paths]`, never stretched over the kept ones)
    inclusive = {f: max(own.get(f, 0.0) + sum(c for _, c in callees.get(f, [])), into.get(f, 0.0))
                 for f in own.keys() | callees.keys() | into.keys()}
    roots = sorted(f for f in inclusive if f not in called and inclusive[f] > 0)
    total = sum(inclusive[r] for r in roots)
    floor = MIN_SHARE * total
    stacks: dict[str, float] = {}

    def emit(path: tuple[str, ...], value: float) -> None:
        if value > 0:
            key = ";".join(path)
            stacks[key] = stacks.get(key, 0.0) + value

    def descend(path: tuple[str, ...], weight: float) -> None:
        node = path[-1]
        share = weight / inclusive[node] if inclusive[node] else 0.0
        emit(path, own.get(node, 0.0) * share)
        thinner = (inclusive[node] - own.get(node, 0.0) - sum(c for _, c in callees.get(node, []))) * share
        for callee, cost in callees.get(node, []):
            part = cost * share
            if callee in path:
                emit(path, part)  # recursion: what it passes to itself stays its own
            elif part < floor or len(path) >= MAX_DEPTH:
                thinner += part
            else:
                descend((*path, callee), part)
        emit((*path, THINNER), thinner)

    for root in roots:
        descend((root,), inclusive[root])
    return stacks
