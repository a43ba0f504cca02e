"""The bursts file of an interleaved A/B (`*.bursts.json`, schema perfci.ab-bursts/2):
both sides' servers, the instance pairs (each a fresh A and B server from the
dataset, its own side order), and every burst each side ran, with its metrics. The
runner (sessions/interleave.py) writes it; the judge (judge/burst_verdicts.py) and
calibrate read it. Version 1 files (one instance pair, A always first) upgrade."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from perfci.model.ab_verdict import SideArgs
from perfci.model.base import StrictModel
from perfci.model.formats import FileFormat, JsonObject
from perfci.model.result import Build, Host


class Burst(StrictModel):
    phase: str
    index: int                       # 0-based within the phase (warm-up included)
    side: str                        # "a" or "b"
    position: int                    # 0: measured first in its pair, 1: second
    warmup: bool
    rand_seed: int
    transactions: int
    duration_s: float
    metrics: dict[str, float]        # tps, latency, and every counter per transaction
    host_cpu: dict[str, float] | None = None
    instance: int = 0                # which instance pair (fresh servers) ran it


class InstancePair(StrictModel):
    """One pair of fresh servers: which side restored, started and was measured first."""
    index: int
    first: Literal["a", "b"]
    started_at: str = ""


class SideInfo(StrictModel):
    name: str
    spec: str
    described: str
    run: SideArgs | None = Field(None, description="spec and overrides, typed (None in bursts files before 2026-11-29)")
    flavor: str
    full_version: str
    line: str
    freezer: str
    setup_sql: list[str] = []
    commit: str | None = Field(None, description="build: the commit scripts/build-server built")
    build: Build | None = Field(None, description="build: how it was built (perfci-build.json)")
    work: str | None = Field(None, description="--measure work: how this side's work was counted, and the config "
                                               "its server needed for it (None: timed)")


class InterleavedRun(StrictModel):
    schema_: Literal["perfci.ab-bursts/2"] = Field("perfci.ab-bursts/2", alias="schema")
    id: str
    scenario: str
    profile: str
    case: str
    scenario_hash: str
    runner_class: str
    host: Host
    started_at: str
    finished_at: str
    burst_transactions: dict[str, int]
    bursts_per_phase: dict[str, int]  # per instance pair
    warmup_pairs: int
    order: str = "ABBA"
    sides: list[SideInfo]
    instances: list[InstancePair] = [InstancePair(index=0, first="a")]
    planned_instances: int | None = Field(None, description="instance pairs planned; fewer ran when an interim look "
                                                            "or the budget stopped the A/B early (None: as many as "
                                                            "ran)")
    stopped: Literal["interim", "budget"] | None = Field(
        None, description="why fewer instance pairs ran than planned: a regression clear at the interim look, or "
                          "the next pair would have ended past the A/B's time budget (None: all ran)")
    alpha: float | None = Field(None, gt=0, lt=1, description="the A/B's family-wise false-alarm level over its "
                                                             "looks (None: 0.5 %, a person's A/B; a nightly's "
                                                             "reference A/B: its false-issue budget's share)")
    bursts: list[Burst]
    notes: list[str] = []
    threads: dict[str, int] = Field({}, description="client threads per phase (a phase not listed: one)")
    measure: Literal["time", "work"] = Field("time", description="what the bursts measured: time (throughput, "
                                                                 "latency, CPU) or work (instructions per "
                                                                 "transaction, counted; no time metric)")
    work_functions: dict[str, dict[str, dict[str, float]]] = Field(
        {}, description="counted by callgrind: per phase and side (a, b), the instructions per transaction each "
                        "function executed in its own code (self cost) over the measured bursts; functions under "
                        "0.1 % of both sides' totals left out")
    work_inclusive: dict[str, dict[str, dict[str, float]]] = Field(
        {}, description="as work_functions, each function with everything it called (inclusive cost): the view "
                        "that follows a change down its call path")
    work_calls: dict[str, dict[str, list[tuple[str, str, float]]]] = Field(
        {}, description="counted by callgrind: per phase and side, the call graph's edges [caller, callee, "
                        "instructions per transaction of those calls, with everything they called]; edges under "
                        "0.05 % of the side's total left out (what the counted flame graphs are estimated from)")

    def threads_of(self, phase: str) -> int:
        return self.threads.get(phase, 1)

    def dump(self) -> dict:
        return self.model_dump(mode="json", by_alias=True)

    def of_instance(self, index: int) -> list[Burst]:
        return [b for b in self.bursts if b.instance == index]


def _v1_to_v2(data: JsonObject) -> JsonObject:
    """Version 1: one instance pair, side A restored, started and measured first."""
    return {**data, "schema": "perfci.ab-bursts/2", "instances": [{"index": 0, "first": "a"}]}


BURSTS_SCHEMA = "perfci.ab-bursts/2"
BURSTS_FILE = FileFormat("A/B bursts file", InterleavedRun, BURSTS_SCHEMA, upgrades={"perfci.ab-bursts/1": _v1_to_v2})
