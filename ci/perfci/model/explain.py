"""The explain pass's record (`*.explain.json`, schema perfci.explain/1): after the
verdict's bursts, extra bursts of the regressed phases on both sides of the last
instance pair, each with a CPU profile of the server (folded stacks, kept as files
beside it), the statement digests and the waits that performance_schema counted
during it. sessions/explain_pass.py writes it, judge/profile_diff.py compares its
sides, report/why.py says what stood out."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from perfci.model.base import StrictModel
from perfci.model.formats import FileFormat


def parse_folded(text: str) -> dict[str, int]:
    """Folded stacks -> {stack: value}; a line is `frame;frame;… value` (value last,
    after a space: frames may contain spaces)."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        stack, _, value = line.rstrip().rpartition(" ")
        if stack and value.isdigit():
            out[stack] = out.get(stack, 0) + int(value)
    return out



def folded_text(folded: dict[str, int]) -> str:
    return "".join(f"{stack} {ns}\n" for stack, ns in sorted(folded.items()))


class DigestRow(StrictModel):
    """One statement digest over one burst (performance_schema, totals of the burst)."""
    digest: str
    text: str                      # DIGEST_TEXT, shortened
    calls: int
    latency_ps: int                # SUM_TIMER_WAIT (picoseconds)
    rows_examined: int = 0
    rows_sent: int = 0
    tmp_tables: int = 0            # SUM_CREATED_TMP_TABLES
    tmp_disk_tables: int = 0
    sort_passes: int = 0           # SUM_SORT_MERGE_PASSES
    no_index_used: int = 0


class ExplainBurst(StrictModel):
    phase: str
    side: Literal["a", "b"]
    index: int                     # 0-based within the phase's explain bursts
    transactions: int
    duration_s: float
    profile: str | None = None     # file name of the folded stacks (CPU ns per stack), beside the record
    profile_cpu_ns: int = 0        # sum of the folded stacks
    digests: list[DigestRow] = []
    waits_ps: dict[str, int] = {}  # wait event -> SUM_TIMER_WAIT during the burst (instrumented waits only)


class ExplainSideInfo(StrictModel):
    name: Literal["a", "b"]
    line: str                      # server line (flavor and version)
    binary: str                    # the profiled executable, as perf names it
    performance_schema: bool       # digests and waits were read (a startup option; off: none)


class ExplainRun(StrictModel):
    schema_: Literal["perfci.explain/1"] = Field("perfci.explain/1", alias="schema")
    run_id: str                    # the A/B whose last instance pair ran it
    why_run: str                   # "regression in …" or "asked for (--explain always)"
    phases: list[str]
    sides: list[ExplainSideInfo]
    profiler: str                  # e.g. "perf record -e cpu-clock -F 499 --call-graph dwarf"
    bursts: list[ExplainBurst]
    notes: list[str] = []          # what could not be collected, and why
    seconds: float | None = None   # the pass's wall time (bursts, profiling, folding, flame graphs)

    def dump(self) -> dict:
        return self.model_dump(mode="json", by_alias=True)

    def of(self, phase: str, side: str) -> list[ExplainBurst]:
        return [b for b in self.bursts if b.phase == phase and b.side == side]


EXPLAIN_FILE = FileFormat("explain record", ExplainRun, "perfci.explain/1")
