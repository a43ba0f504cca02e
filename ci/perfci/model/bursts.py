"""The bursts file of an interleaved A/B (`*.bursts.json`, schema perfci.ab-bursts/1):
both sides' servers, and every burst each side ran, with its metrics. The runner
(sessions/interleave.py) writes it; the judge (judge/bursts.py) and calibrate read it."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from perfci.model.base import StrictModel
from perfci.model.formats import FileFormat
from perfci.model.result import Host


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


class SideInfo(StrictModel):
    name: str
    spec: str
    described: str
    flavor: str
    full_version: str
    line: str
    freezer: str
    setup_sql: list[str] = []


class InterleavedRun(StrictModel):
    schema_: Literal["perfci.ab-bursts/1"] = Field("perfci.ab-bursts/1", alias="schema")
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
    bursts_per_phase: dict[str, int]
    warmup_pairs: int
    order: str = "ABBA"
    sides: list[SideInfo]
    bursts: list[Burst]
    notes: list[str] = []

    def dump(self) -> dict:
        return self.model_dump(mode="json", by_alias=True)


BURSTS_FILE = FileFormat("A/B bursts file", InterleavedRun, "perfci.ab-bursts/1")
