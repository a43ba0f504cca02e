"""A noise model: what one runner's noise is, per runner class, server line,
scenario, profile, case and metric, as `perfci calibrate` learned it from A/As (the
values; judge/calibration.py learns them and turns them into tolerances and minimum
detectable effects, store/noise_files.py reads and writes them)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import Field

from perfci.model.base import StrictModel
from perfci.model.formats import FileFormat, JsonObject
from perfci.model.identity import slug


@dataclass(frozen=True)
class InstancePrior:
    """The spread (sd of log B/A) of one instance pair's difference in an A/A, and
    the degrees of freedom it was learned with."""
    sd: float
    df: int


class MetricNoise(StrictModel):
    pair_sd: float
    block_sd: float
    lag1: float
    run_cv: float | None
    pairs: int
    runs: int
    pair_seconds: float            # wall time of one burst pair of this metric's phase
    instance_sd: float | None = None  # between instance pairs, log(B/A) (None: fewer than 2 instance pairs)
    instance_df: int = 0

    def prior(self) -> InstancePrior | None:
        return InstancePrior(self.instance_sd, self.instance_df) if self.instance_sd is not None else None


class NoiseModel(StrictModel):
    schema_: Literal["perfci.noise/2"] = Field("perfci.noise/2", alias="schema")
    runner_class: str
    server_line: str
    scenario: str
    profile: str
    case: str
    scenario_hash: str
    created_at: str
    host: str
    runs: list[str]               # the A/A runs' ids (provenance)
    burst_transactions: dict[str, int]
    metrics: dict[str, MetricNoise]
    measure: Literal["time", "work"] = Field("time", description="what the A/As' bursts measured: time, or work "
                                                                 "(instructions per transaction, counted): a "
                                                                 "model of each, kept apart")

    def dump(self) -> JsonObject:
        return self.model_dump(mode="json", by_alias=True)


    def priors(self) -> dict[str, InstancePrior]:
        return {key: prior for key, m in self.metrics.items() if (prior := m.prior()) is not None}


def _v1_to_v2(data: JsonObject) -> JsonObject:
    """Version 1 had no instance-level spread (and counted both sides of an A/A as runs)."""
    return {**data, "schema": "perfci.noise/2"}


NOISE_FILE = FileFormat("noise model", NoiseModel, "perfci.noise/2", upgrades={"perfci.noise/1": _v1_to_v2})


def noise_path(root: Path, runner_class: str, server_line: str, scenario: str, profile: str, case: str,
               measure: str = "time") -> Path:
    """Where a case's noise model lives; a counted (work) model beside the timed one."""
    suffix = "" if measure == "time" else f".{measure}"
    return root / slug(runner_class) / slug(server_line) / scenario / profile / f"{slug(case)}{suffix}.json"
