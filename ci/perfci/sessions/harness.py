"""Did a change of perfci itself change what it measures? The base version's runs (A)
and the head version's (B) of one scenario on one server, in alternating rounds
(`perfci pr-check scenarios` runs them; `perfci harness-check` judges them):

- the work: every Com_/Handler_ counter per transaction of each phase must be the same
  in each round's pair (judge/burst_verdicts.py's work rule: within WORK_TOLERANCE, the
  harness's own status reads left out) — the same statements, the same row work;
- the throughput: the judged metrics as a paired-rounds A/B (sessions/rounds.py's
  judge_pairs): not flagged either way.

Either failing means the harness changed what it measures; the PR check fails on it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from perfci.judge.burst_verdicts import HARNESS_COUNTERS, WORK_PREFIXES, WORK_TOLERANCE, WorkDifference
from perfci.model.metrics import counters_per_txn
from perfci.model.outputs import CheckVerdict
from perfci.model.result import Result
from perfci.model.verdicts import Outcome
from perfci.report.table import table
from perfci.sessions.rounds import MIN_JUDGED_ROUNDS, ROUNDS_COLUMNS, PairedRow, judge_pairs, paired_cells
from perfci.store.results import expand, load_result
from perfci.util.errors import BadInput
from perfci.util.text import code_span


@dataclass
class HarnessCheck:
    case: str
    rounds: int
    compared: int                      # work counters compared per round
    differences: list[WorkDifference]  # instance = the round (1-based)
    rows: list[PairedRow]
    time_boxed: list[str]              # phases whose sides ran different transaction counts: work not compared

    @property
    def throughput_judged(self) -> bool:
        """Two rounds give one degree of freedom (rounds.MIN_JUDGED_ROUNDS)."""
        return self.rounds >= MIN_JUDGED_ROUNDS

    @property
    def moved(self) -> list[PairedRow]:
        if not self.throughput_judged:
            return []
        return [r for r in self.rows if r.verdict.verdict in (Outcome.REGRESSION, Outcome.IMPROVEMENT)]

    @property
    def changed(self) -> bool:
        return bool(self.differences or self.moved)


def pair_rounds(a: list[Result], b: list[Result]) -> dict[str, tuple[list[Result], list[Result]]]:
    """Each case's runs of both versions, in the order they finished (round i of A with
    round i of B); refused unless both ran the same scenario, profile and rounds."""
    out: dict[str, tuple[list[Result], list[Result]]] = {}
    for side, results in ((0, a), (1, b)):
        for r in sorted((r for r in results if r.ran), key=lambda r: r.finished_at):
            out.setdefault(r.case, ([], []))[side].append(r)
    if not out:
        raise BadInput("harness-check: no run that ran on either side")
    for case, (ra, rb) in out.items():
        names = {(r.scenario.name, r.scenario.profile) for r in (*ra, *rb)}
        if len(names) != 1:
            raise BadInput(f"harness-check: case {case!r}: the runs are of different scenarios or profiles: "
                           f"{sorted(names)}")
        if len(ra) != len(rb) or len(ra) < 2:
            raise BadInput(f"harness-check: case {case!r}: {len(ra)} run(s) of A and {len(rb)} of B; "
                           "two or more rounds of each are needed")
    return out


def work_of(result: Result, phases: set[str]) -> dict[str, float]:
    return {k: v for k, v in counters_per_txn(result).items()
            if k.split(".", 1)[0] in phases and k.split(".", 1)[1].startswith(WORK_PREFIXES)
            and k.split(".", 1)[1] not in HARNESS_COUNTERS}


def fixed_work_phases(a: list[Result], b: list[Result]) -> tuple[set[str], list[str]]:
    """Phases every run of both sides ran with the same transaction count (fixed work),
    and the others: in a time-boxed phase a per-phase cost (statements prepared, status
    reads) spreads over a different number of transactions on each side."""
    phases = {p for r in (*a, *b) for p in r.phases}
    counts = {p: {r.phases[p].metrics.transactions if p in r.phases else None for r in (*a, *b)} for p in phases}
    fixed = {p for p, c in counts.items() if len(c) == 1}
    return fixed, sorted(phases - fixed)


def check(case: str, a: list[Result], b: list[Result]) -> HarnessCheck:
    differences: list[WorkDifference] = []
    compared = 0
    fixed, time_boxed = fixed_work_phases(a, b)
    for round_no, (ra, rb) in enumerate(zip(a, b, strict=True), 1):
        wa, wb = work_of(ra, fixed), work_of(rb, fixed)
        compared = max(compared, len(wa.keys() | wb.keys()))
        for key in sorted(wa.keys() | wb.keys()):
            diff = WorkDifference(key, round_no, wa.get(key, 0.0), wb.get(key, 0.0))
            if (diff.a or diff.b) and diff.relative > WORK_TOLERANCE:
                differences.append(diff)
    return HarnessCheck(case, len(a), compared, sorted(differences, key=lambda d: -d.relative),
                        judge_pairs([a, b]), time_boxed)


def harness_markdown(checks: list[HarnessCheck], a: list[Result], b: list[Result]) -> str:
    changed = [c for c in checks if c.changed]
    first_a, first_b = a[0], b[0]
    if changed:
        what = []
        for c in changed:
            if c.differences:
                d = c.differences[0]
                what.append(f"{code_span(c.case)} did different work: {len(c.differences)} counter value(s) differ, "
                            f"e.g. {code_span(d.key)} {d.a:.4g} -> {d.b:.4g} per transaction in round {d.instance}")
            what += [f"{code_span(c.case)} {code_span(r.key)} {r.verdict.verdict}" for r in c.moved]
        head = "**The harness changed what it measures**: " + "; ".join(what) + "."
    else:
        speed = ("no judged metric moved beyond its tolerance" if checks[0].throughput_judged else
                 f"throughput not judged ({checks[0].rounds} rounds; {MIN_JUDGED_ROUNDS} or more needed)")
        head = (f"**Harness unchanged**: the same work in every round ({checks[0].compared} Com_/Handler_ counters "
                f"per transaction and phase equal within 0.1 %); {speed}.")
    lines = [f"## perfci harness check: {first_a.scenario.name} · profile `{first_a.scenario.profile}`", "", head, "",
             f"- A: perfci `{first_a.harness.git_sha[:12]}` · B: perfci `{first_b.harness.git_sha[:12]}` · server "
             f"{first_a.server.flavor} {first_a.server.full_version or first_a.server.version} · "
             f"{checks[0].rounds} rounds, order alternating (A B, B A, …), each from a fresh server",
             f"- host `{first_a.host.hostname}` ({first_a.host.cpu_model}, {first_a.host.cpus} CPUs) · scenario "
             f"hash A `{first_a.scenario.hash[:19]}…`, B `{first_b.scenario.hash[:19]}…`", ""]
    for c in checks:
        if len(checks) > 1:
            lines += [f"### {code_span(c.case)}", ""]
        if c.time_boxed:
            lines += [f"- not fixed work (the sides ran different transaction counts), work not compared: "
                      f"{', '.join(code_span(p) for p in c.time_boxed)}", ""]
        if c.differences:
            lines += [*table(["counter per transaction", "round", "A", "B"],
                             ([code_span(d.key), d.instance, f"{d.a:.6g}", f"{d.b:.6g}"] for d in c.differences[:20])),
                      ""]
        lines += [*table(ROUNDS_COLUMNS, (paired_cells(r) for r in c.rows)), ""]
    return "\n".join(lines)


def judge_harness(a_results: Path, b_results: Path) -> tuple[str, bool, CheckVerdict]:
    """The base version's runs (A_RESULTS, a directory or file) against the head's: the
    report, whether the harness changed what it measures, and the typed verdict."""
    a = [load_result(p) for p in expand([a_results])]
    b = [load_result(p) for p in expand([b_results])]
    checks = [check(case, ra, rb) for case, (ra, rb) in sorted(pair_rounds(a, b).items())]
    text = harness_markdown(checks, a, b)
    changed = any(c.changed for c in checks)
    verdict = next(line for line in text.splitlines() if line.startswith("**"))
    return text, changed, CheckVerdict(check="harness", outcome=Outcome.REGRESSION if changed else Outcome.UNCHANGED,
                                       verdict_line=verdict)
