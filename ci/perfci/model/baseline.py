"""A baseline: run-level samples of every metric of one case, with provenance (the
values; store/baseline_files.py reads and writes them).

Layout on disk: baselines/<runner class>/<server line>/<scenario>/<profile>/<case>.json
(`identity.CaseIdentity`). One file per case holds the last `window` accepted
samples (not one number), each with the result id, date, exact server version,
harness sha and scenario hash it came from. Files of schema `perfci.baseline/1`
load through the upgrade step below.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from perfci.model.formats import FileFormat
from perfci.model.history import DEFAULT_HISTORY_WINDOW, CaseHistory, run_summary
from perfci.model.identity import DEFAULT_FOLLOW, CaseIdentity, Follow
from perfci.model.noise import NoiseModel, noise_path
from perfci.model.result import HostSignature, Rerun, Result

BASELINE_SCHEMA = "perfci.baseline/2"
DEFAULT_WINDOW = 10


class Sample(BaseModel):
    model_config = ConfigDict(extra="forbid")
    result_id: str
    date: str
    server_version: str = ""
    harness_sha: str
    scenario_hash: str
    host: HostSignature
    forced: list[str] = []
    metrics: dict[str, float]
    counters: dict[str, float] = {}
    intervals: dict[str, list[float]] = {}
    reproduce: str = ""  # how the sample was run: the confirmation A/B's "last good" server and config
    rerun: Rerun | None = None  # the same, typed (None in samples of perfci before 2026-11-29)


class BaselineCase(BaseModel):
    """Which case the samples belong to (see identity.CaseIdentity)."""

    model_config = ConfigDict(extra="forbid")
    runner_class: str
    server: str
    flavor: str
    scenario: str
    profile: str
    case: str = "default"


class Baseline(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    schema_: Literal["perfci.baseline/2"] = Field("perfci.baseline/2", alias="schema")
    case: BaselineCase
    scenario_hash: str = Field(description="the scenario hash of the newest sample")
    host: HostSignature = Field(description="the host signature every sample must match")
    window: int = Field(DEFAULT_WINDOW, ge=1)
    samples: list[Sample] = []

    @property
    def runner_class(self) -> str:
        return self.case.runner_class

    def values(self, key: str) -> list[float]:
        return [s.metrics[key] for s in self.samples if key in s.metrics]

    def dump(self) -> dict[str, JsonValue]:
        return self.model_dump(mode="json", by_alias=True)


def _v1_to_v2(data: dict[str, JsonValue]) -> dict[str, JsonValue]:
    """/1 kept raw server/scenario dicts and keyed by the exact server version."""
    server = data.get("server") if isinstance(data.get("server"), dict) else {}
    scenario = data.get("scenario") if isinstance(data.get("scenario"), dict) else {}
    assert isinstance(server, dict) and isinstance(scenario, dict)
    out = {k: v for k, v in data.items() if k not in ("server", "scenario", "runner_class")}
    out["schema"] = BASELINE_SCHEMA
    out["case"] = {"runner_class": data.get("runner_class"), "server": f"{server.get('flavor')}-{server.get('version')}",
                   "flavor": server.get("flavor"), "scenario": scenario.get("name"),
                   "profile": scenario.get("profile"), "case": scenario.get("case") or "default"}
    out["scenario_hash"] = scenario.get("hash")
    return out


BASELINE_FILE = FileFormat("baseline", Baseline, BASELINE_SCHEMA, upgrades={"perfci.baseline/1": _v1_to_v2},
                           hint="restore it from git or rebuild it with 'perfci baseline update'")


def sample_from(result: Result, forced: list[str]) -> Sample:
    return Sample(**run_summary(result), forced=forced,
                  intervals={p: [iv.tps for iv in d.intervals] for p, d in result.phases.items()})


def refusals(result: Result, baseline: Baseline | None) -> list[str]:
    """Why a result may not join a baseline (empty: it may)."""
    why = []
    if not result.ran:
        why.append(f"run status is {result.status.value!r}, not 'ok'")
    if not result.validity.valid:
        why.append(f"invalid run ({'; '.join(result.validity.reasons)})")
    missing = [p for p in result.scenario.measured_phases() if p not in result.phases]
    if missing or not result.phases:
        why.append(f"partial run: phases without metrics: {', '.join(missing) or 'all'}")
    if baseline is None:
        return why
    if result.scenario.hash != baseline.scenario_hash:
        why.append(f"scenario hash {result.scenario.hash[:19]} differs from the baseline's "
                   f"{baseline.scenario_hash[:19]} (the scenario or profile changed)")
    if result.scenario.profile != baseline.case.profile:
        why.append(f"profile {result.scenario.profile!r} is not the baseline's {baseline.case.profile!r}")
    if result.runner_class != baseline.runner_class:
        why.append(f"runner class {result.runner_class!r} is not the baseline's {baseline.runner_class!r}")
    if (host := result.host.signature().mismatch(baseline.host)) is not None:
        why.append(host)
    return why


def new_baseline(result: Result, window: int, follow: Follow = DEFAULT_FOLLOW) -> Baseline:
    ident = CaseIdentity.of(result, follow)
    return Baseline(
        case=BaselineCase(runner_class=ident.runner_class, server=ident.server, flavor=result.server.flavor,
                          scenario=ident.scenario, profile=ident.profile, case=ident.case),
        scenario_hash=result.scenario.hash,
        host=result.host.signature(),
        window=window,
    )


def baseline_of_results(results: list[Result], follow: Follow = DEFAULT_FOLLOW) -> Baseline | None:
    """A baseline made of results themselves (`perfci diff`: side A judged as B's
    baseline), every one that may join a baseline; None when none may."""
    usable = [r for r in results if not refusals(r, None)]
    if not usable:
        return None
    base = new_baseline(usable[0], max(len(usable), DEFAULT_WINDOW), follow)
    return base.model_copy(update={"samples": [sample_from(r, []) for r in usable]})


def baseline_from_history(hist: CaseHistory, result: Result, window: int = DEFAULT_HISTORY_WINDOW,
                          follow: Follow = DEFAULT_FOLLOW) -> Baseline | None:
    """The case's baseline made from its history: the last `window` baseline records
    (see CaseHistory.baseline_records) of the result's scenario hash; None when there are none."""
    ident = CaseIdentity.of(result, follow)
    records = hist.baseline_records(result.scenario.hash, window, skip=result.id, host=result.host.signature())
    if not records:
        return None
    host = records[-1].host or result.host.signature()
    samples = [Sample(result_id=r.result_id, date=r.date, server_version=r.server_version or "",
                      harness_sha=r.harness_sha or "", scenario_hash=r.scenario_hash, host=r.host or host,
                      metrics=r.metrics, counters=r.counters, reproduce=r.reproduce, rerun=r.rerun)
               for r in records]
    case = BaselineCase(runner_class=ident.runner_class, server=ident.server, flavor=result.server.flavor,
                        scenario=ident.scenario, profile=ident.profile, case=ident.case)
    return Baseline(case=case, scenario_hash=result.scenario.hash, host=host, window=window, samples=samples)


def provenance(hist: CaseHistory, baseline: Baseline | None) -> list[str]:
    """Lines for a report: where a history baseline came from and what it left out."""
    lines = []
    if hist.resets:
        last = hist.resets[-1]
        lines.append(f"reset at `{last.result_id}` on {last.date[:10]}: {last.reason}")
    lines += [f"excluded `{r.result_id}`: {hist.excluded[r.result_id].reason}"
              for r in hist.records if r.result_id in hist.excluded]
    used = {s.result_id for s in baseline.samples} if baseline else set()
    held = [r.result_id for r in hist.since_reset()
            if r.standing and r.judged_since == hist.reset_id and r.result_id not in used]
    if held:
        lines.append(f"left out {len(held)} night(s) on which a regression stood and no reset accepted (from `{held[0]}`)")
    if baseline is not None:
        other = [r.result_id for r in hist.usable(baseline.scenario_hash) if baseline.host.mismatch(r.host)]
        if other:
            lines.append(f"left out {len(other)} sample(s) from another host (from `{other[0]}`): "
                         "numbers pool only within one host signature")
    return lines


@dataclass
class CaseInputs:
    """What one case is judged on (store/case_inputs.py reads it; judge/compare.py
    judges it): its results, the baseline (a pinned file or made from the history;
    None: there is none), where that came from, and the case's noise model."""

    results: list[Result]
    baseline: Baseline | None
    baseline_file: Path | None
    noise_model: NoiseModel | None = None
    provenance: list[str] = field(default_factory=list)  # a history baseline: reset, exclusions, nights left out
    warnings: list[str] = field(default_factory=list)  # e.g. a baseline pinned on another runner class


NOISE_DIR = "noise"  # noise models live in baselines/noise/, beside the pinned baselines


@dataclass
class BaselinesTree:
    """A baselines/ tree as read (store/baseline_files.py read_tree): every pinned
    baseline and noise model by its path under the root, loaded and as bytes (what a
    diff of two trees compares)."""

    cases: dict[str, Baseline] = field(default_factory=dict)
    case_bytes: dict[str, bytes] = field(default_factory=dict)
    models: dict[str, NoiseModel] = field(default_factory=dict)
    model_bytes: dict[str, bytes] = field(default_factory=dict)

    @staticmethod
    def model_of(baseline: Baseline) -> str:
        """Where the noise model of a baseline's case is, under the root."""
        c = baseline.case
        return str(noise_path(Path(NOISE_DIR), c.runner_class, c.server, c.scenario, c.profile, c.case))
