"""A sweep's file (perfci sweep): per case and server, the A/B against the base."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from perfci.model.abratio import AbRatio
from perfci.model.base import StrictModel
from perfci.model.formats import FileFormat


class SweepCell(StrictModel):
    case: str
    server: str                       # the server id (or spec) measured against the base
    status: Literal["measured", "failed", "skipped"]
    reason: str = ""
    version: str = Field("", description="the server's full version, as it reported it")
    base_version: str = ""
    ratios: dict[str, AbRatio] = Field({}, description="judged metrics: B/base, interval, MDE, verdict")
    regressions: list[str] = []
    sizing: str = ""
    bursts_file: str | None = None
    report_file: str | None = None
    why: str = Field("", description="the explain pass's Why section of a regressed cell (its report's), if one ran")
    explain_dir: str | None = Field(None, description="the explain pass's directory: profiles and flame graphs")


class Sweep(StrictModel):
    schema_: Literal["perfci.sweep/1"] = Field("perfci.sweep/1", alias="schema")
    scenario: str
    scenario_hash: str
    profile: str
    servers: list[str] = Field(description="the base first, then each server A/B'd against it")
    runner_class: str
    started_at: str
    cells: list[SweepCell] = []

    def dump(self) -> dict:
        return self.model_dump(mode="json", by_alias=True)

    def cell(self, case: str, server: str) -> SweepCell | None:
        return next((c for c in self.cells if c.case == case and c.server == server), None)


SWEEP_FILE = FileFormat("sweep", Sweep, "perfci.sweep/1")
