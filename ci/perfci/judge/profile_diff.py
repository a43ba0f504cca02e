"""What differs between A's and B's explain bursts, beyond the noise (pure: values in,
rows out).

CPU profiles are folded stacks (`frame;frame;…;leaf ns`), one per burst. Each is
normalised per transaction (µs of server CPU per transaction: the bursts run the same
seeded work on both sides, so a function's CPU per transaction is comparable even when
one side is slower). Per function, self time (stacks where it is the leaf) and
inclusive time (stacks it appears in, once per stack) are compared as means over the
bursts of each side with Welch's t: the bursts are replicates, so sampling noise (a few
thousand samples per burst) and burst-to-burst variation are both in the spread. A
function stands out when its change is significant under Benjamini-Hochberg (FDR 5 %,
over the functions tested) *and* at least `share_floor` of A's CPU per transaction
(default 1 %; an A/A of the same server differs by less: tests/judge/test_profile_diff.py
checks this on kept A/A profiles). Digests and waits are compared the same way.

Unresolved frames (`[mysqld]`, `[unknown]`, a hex address) name no function: a
profile where most of the server's own user-space CPU is unresolved has "no symbols",
and is reported as such, not as a table of addresses.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from perfci.judge.paired import benjamini_hochberg
from perfci.judge.stats import t_two_sided_p
from perfci.model.explain import DigestRow, ExplainRun

FDR = 0.05
SHARE_FLOOR = 0.01          # a function's change must be >= 1 % of A's CPU per transaction
DIGEST_LATENCY_FLOOR = 0.05  # a digest's latency per call must change by >= 5 %
WAIT_SHARE_FLOOR = 0.01      # a wait's change >= 1 % of A's transaction time
# share of the server's user-space frames (by CPU; library placeholders like [libz.so]
# not counted) that name a function: a distribution's mariadbd, with its dynamic
# symbols only, names ~50 % (InnoDB's static functions show as [mariadbd])
SYMBOLS_NEEDED = 0.25
UNRESOLVED = re.compile(r"^(\[[^\]]*\]|0x[0-9a-f]+|[0-9a-f]{6,})$")
KERNEL = "_[k]"
LIBRARY = re.compile(r"^\[[^\]]*\.so[.\d]*\]$")  # collapse-perf's frame for an unnamed function of a shared library


def frames(stack: str) -> list[str]:
    """A stack's frames without the leading process name (collapse-perf puts it first)."""
    return stack.split(";")[1:]


def unresolved(frame: str) -> bool:
    return bool(UNRESOLVED.match(frame.removesuffix(KERNEL)))


def symbol_coverage(folded: Mapping[str, int]) -> float | None:
    """Share of user-space frames, weighted by CPU, that name a function (None: no
    user-space frames). A stripped server binary scores low even though libc and the
    kernel resolve."""
    named = total = 0
    for stack, ns in folded.items():
        user = [f for f in frames(stack) if not f.endswith(KERNEL) and not LIBRARY.match(f)]
        total += ns * len(user)
        named += ns * sum(1 for f in user if not unresolved(f))
    return named / total if total else None


def per_function(folded: Mapping[str, int], transactions: int) -> tuple[dict[str, float], dict[str, float]]:
    """(self, inclusive) µs of CPU per transaction of every named function. Self time
    includes unnamed code the function called (a stack's CPU goes to its leaf-most
    named frame: MD5 inside an unnamed libcrypto frame is `my_md5`'s)."""
    own: dict[str, float] = {}
    incl: dict[str, float] = {}
    scale = 1 / 1000 / max(transactions, 1)
    for stack, ns in folded.items():
        fs = frames(stack)
        if not fs:
            continue
        us = ns * scale
        leaf = next((f for f in reversed(fs) if not unresolved(f)), None)
        if leaf is not None:
            own[leaf] = own.get(leaf, 0.0) + us
        for f in set(fs):
            if not unresolved(f):
                incl[f] = incl.get(f, 0.0) + us
    return own, incl


def total_us(folded: Mapping[str, int], transactions: int) -> float:
    return sum(folded.values()) / 1000 / max(transactions, 1)


@dataclass(frozen=True)
class Change:
    """One function, digest or wait whose per-transaction (or per-call) value differs."""
    name: str
    kind: str                 # "self", "inclusive", "latency/call", "rows examined/call", "wait"
    a: float                  # mean over A's bursts
    b: float
    unit: str
    p: float                  # Welch two-sided p
    adjusted: float = 1.0     # Benjamini-Hochberg over the table's tests
    stands_out: bool = False

    @property
    def delta(self) -> float:
        return self.b - self.a

    @property
    def ratio(self) -> float | None:
        return self.b / self.a if self.a else None


def welch_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided p of Welch's t on the means (1.0 when there is no spread and no
    difference; 0.0 when there is a difference but no spread: deterministic counts)."""
    na, nb = len(a), len(b)
    if na < 2 or nb < 2:
        return 1.0
    ma, mb = sum(a) / na, sum(b) / nb
    va = sum((x - ma) ** 2 for x in a) / (na - 1)
    vb = sum((x - mb) ** 2 for x in b) / (nb - 1)
    se2 = va / na + vb / nb
    if se2 <= 0:
        return 1.0 if ma == mb else 0.0
    df = se2 ** 2 / ((va / na) ** 2 / (na - 1) + (vb / nb) ** 2 / (nb - 1)) if va or vb else na + nb - 2
    return t_two_sided_p((mb - ma) / math.sqrt(se2), max(df, 1.0))


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs) if xs else 0.0


def _adjust(rows: list[Change], floor_of) -> list[Change]:
    """BH over the rows; keep every row with its flags, sorted by |delta| (largest first)."""
    adjusted = benjamini_hochberg([r.p for r in rows]) if rows else []
    out = [Change(r.name, r.kind, r.a, r.b, r.unit, r.p, q, q <= FDR and abs(r.delta) >= floor_of(r))
           for r, q in zip(rows, adjusted)]
    return sorted(out, key=lambda r: -abs(r.delta))


def function_changes(a: Sequence[tuple[Mapping[str, int], int]], b: Sequence[tuple[Mapping[str, int], int]],
                     share_floor: float = SHARE_FLOOR) -> list[Change]:
    """Per named function, self and inclusive µs/txn over the bursts (folded, transactions)
    of each side. Tested: functions whose CPU on A and B together reaches the floor (a
    smaller one cannot change by the floor; a filter on the pooled mean, not on the
    difference, leaves the test's level intact and spares the multiplicity of the
    hundreds of functions a profile names)."""
    floor = share_floor * _mean([total_us(f, t) for f, t in a])
    per_a = [per_function(f, t) for f, t in a]
    per_b = [per_function(f, t) for f, t in b]
    rows: list[Change] = []
    for kind, which in (("self", 0), ("inclusive", 1)):
        names = {n for side in (per_a, per_b) for burst in side for n in burst[which]}
        for name in sorted(names):
            xa = [burst[which].get(name, 0.0) for burst in per_a]
            xb = [burst[which].get(name, 0.0) for burst in per_b]
            if _mean(xa) + _mean(xb) < floor:  # cannot change by the floor: not tested (see below)
                continue
            rows.append(Change(name, kind, _mean(xa), _mean(xb), "µs/txn", welch_p(xa, xb)))
    return _adjust(rows, lambda r: floor)


def _digest_key(row: DigestRow) -> str:
    """Digests match by their normalised text (hashes differ between releases)."""
    return " ".join(row.text.replace("`", "").split()).lower()


def digest_changes(a: Sequence[Sequence[DigestRow]], b: Sequence[Sequence[DigestRow]],
                   latency_floor: float = DIGEST_LATENCY_FLOOR) -> list[Change]:
    """Per digest seen on both sides: latency per call (µs), rows examined and sent per
    call, temporary tables and sort passes per call; one list of digests per burst."""
    def by_key(bursts: Sequence[Sequence[DigestRow]]) -> list[dict[str, DigestRow]]:
        return [{_digest_key(r): r for r in burst} for burst in bursts]
    ka, kb = by_key(a), by_key(b)
    common = set().union(*ka) & set().union(*kb) if ka and kb else set()
    measures = (("latency/call", "µs", lambda r: r.latency_ps / 1e6 / r.calls),
                ("rows examined/call", "rows", lambda r: r.rows_examined / r.calls),
                ("rows sent/call", "rows", lambda r: r.rows_sent / r.calls),
                ("tmp tables/call", "", lambda r: (r.tmp_tables + r.tmp_disk_tables) / r.calls),
                ("sort passes/call", "", lambda r: r.sort_passes / r.calls))
    rows: list[Change] = []
    for key in sorted(common):
        text = next(burst[key].text for burst in ka if key in burst)
        for kind, unit, value in measures:
            xa = [value(burst[key]) for burst in ka if key in burst and burst[key].calls]
            xb = [value(burst[key]) for burst in kb if key in burst and burst[key].calls]
            if not xa or not xb or (_mean(xa) == 0 and _mean(xb) == 0):
                continue
            rows.append(Change(text, kind, _mean(xa), _mean(xb), unit, welch_p(xa, xb)))

    def floor(r: Change) -> float:
        # latency is noisy: a relative floor; counts are work: any difference beyond 1 %
        return (latency_floor if r.kind == "latency/call" else 0.01) * max(abs(r.a), 1e-12)
    return _adjust(rows, floor)


def wait_changes(a: Sequence[tuple[Mapping[str, int], int, float]], b: Sequence[tuple[Mapping[str, int], int, float]],
                 share_floor: float = WAIT_SHARE_FLOOR) -> list[Change]:
    """Per wait event, µs waited per transaction; one (waits_ps, transactions, burst
    seconds) per burst. The floor: a share of A's time per transaction."""
    if not a or not b:
        return []
    floor = share_floor * _mean([seconds * 1e6 / max(t, 1) for _, t, seconds in a])
    names = {n for side in (a, b) for waits, _, _ in side for n in waits}
    rows = []
    for name in sorted(names):
        xa = [waits.get(name, 0) / 1e6 / max(t, 1) for waits, t, _ in a]
        xb = [waits.get(name, 0) / 1e6 / max(t, 1) for waits, t, _ in b]
        if max(_mean(xa), _mean(xb)) < floor / 10:
            continue
        rows.append(Change(name, "wait", _mean(xa), _mean(xb), "µs/txn", welch_p(xa, xb)))
    return _adjust(rows, lambda r: floor)


@dataclass(frozen=True)
class CallPath:
    """Inclusive rows that carry one change down a call chain: a caller and the callee
    it passes (nearly) all of its change to are one path. `top` is where the change
    enters (the shallowest), `bottom` how deep it goes (the deepest)."""
    top: Change
    bottom: Change
    frames: int                       # functions on the path that stand out

    @property
    def name(self) -> str:
        if self.frames == 1:
            return self.top.name
        return f"{self.top.name} → {'… → ' if self.frames > 2 else ''}{self.bottom.name}"


def call_paths(rows: Sequence[Change], stacks: Iterable[str], tolerance: float = 0.05) -> list[CallPath]:
    """The inclusive rows that stand out, grouped into call paths: a function and a
    descendant whose changes agree within `tolerance` (same sign) are one path. A change
    shows in every caller up to the thread's start; the reader wants where it enters and
    how deep it goes, once, not twenty rows of the same microseconds."""
    out = [r for r in rows if r.stands_out and r.kind == "inclusive"]
    names = {r.name for r in out}
    depth = {n: 10**9 for n in names}
    below: dict[str, set[str]] = {n: set() for n in names}
    for stack in stacks:
        fs = frames(stack)
        for i, f in enumerate(fs):
            if f in below:
                depth[f] = min(depth[f], i)
                below[f].update(g for g in fs[i + 1:] if g in names)
    by_name = {r.name: r for r in out}
    parent = {n: n for n in names}

    def root(n: str) -> str:
        while parent[n] != n:
            n = parent[n]
        return n
    for f in names:
        for g in below[f]:
            a, b = by_name[f].delta, by_name[g].delta
            if g != f and a * b > 0 and abs(a - b) <= tolerance * abs(a):
                parent[root(g)] = root(f)
    groups: dict[str, list[Change]] = {}
    for n in names:
        groups.setdefault(root(n), []).append(by_name[n])
    def outer(group: list[Change]):  # callers of more of the path first (depth breaks ties: unwinds can be cut short)
        members = {r.name for r in group}
        return lambda r: (len(below[r.name] & members), -depth[r.name])
    paths = [CallPath(max(g, key=outer(g)), min(g, key=outer(g)), len(g)) for g in groups.values()]
    return sorted(paths, key=lambda p: -abs(p.top.delta))


def standing_out(rows: Iterable[Change]) -> list[Change]:
    return [r for r in rows if r.stands_out]


@dataclass(frozen=True)
class PhaseFindings:
    """One explained phase: what stood out, and what each side's profile could say."""
    phase: str
    cpu_us: dict[str, float]              # side -> mean server CPU µs per transaction (profiled)
    coverage: dict[str, float | None]     # side -> share of user-space frames named
    functions: list[Change]
    digests: list[Change]
    waits: list[Change]
    bursts: int                           # explain bursts per side
    paths: list[CallPath] = field(default_factory=list)  # inclusive rows that stand out, as call paths

    @property
    def symbols(self) -> bool:
        return all(c is not None and c >= SYMBOLS_NEEDED for c in self.coverage.values())

    @property
    def profiled(self) -> bool:
        return bool(self.cpu_us)

    def standing_out(self) -> list[Change]:
        return [r for r in (self.functions if self.symbols else []) + self.digests + self.waits if r.stands_out]


def explain_findings(run: ExplainRun, folded: Mapping[str, Mapping[str, int]],
                     share_floor: float = SHARE_FLOOR) -> list[PhaseFindings]:
    """The run's phases compared side against side; `folded` holds each burst's profile
    by its file name (bursts without one: not profiled)."""
    out = []
    for phase in run.phases:
        a, b = run.of(phase, "a"), run.of(phase, "b")
        prof = {side: [(folded[x.profile], x.transactions) for x in bursts if x.profile and x.profile in folded]
                for side, bursts in (("a", a), ("b", b))}
        profiled = bool(prof["a"]) and bool(prof["b"])
        merged = {side: _merge(f for f, _ in prof[side]) for side in prof}
        functions = function_changes(prof["a"], prof["b"], share_floor) if profiled else []
        out.append(PhaseFindings(
            phase=phase,
            cpu_us={side: _mean([total_us(f, t) for f, t in prof[side]]) for side in prof} if profiled else {},
            coverage={side: symbol_coverage(merged[side]) for side in prof} if profiled else {},
            functions=functions,
            paths=call_paths(functions, [*merged["a"], *merged["b"]]),
            digests=digest_changes([x.digests for x in a if x.digests], [x.digests for x in b if x.digests]),
            waits=wait_changes([(x.waits_ps, x.transactions, x.duration_s) for x in a if x.waits_ps],
                               [(x.waits_ps, x.transactions, x.duration_s) for x in b if x.waits_ps]),
            bursts=min(len(a), len(b))))
    return out


def _merge(parts: Iterable[Mapping[str, int]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for part in parts:
        for stack, ns in part.items():
            out[stack] = out.get(stack, 0) + ns
    return out
