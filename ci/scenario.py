"""Scenario files: the typed model, loading with clear errors, and profile resolution.

A scenario file declares a dataset, server config, an ordered list of steps and
profiles that scale it. `load_scenario` validates a file; `resolve` applies one
profile and gives the exact parameters a run uses (and hashes them).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Annotated, Any, Literal, Union

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .errors import BadInput

REQUIRED_PROFILES = ("smoke", "nightly", "seed")
SCENARIO_DIR = Path(__file__).resolve().parent.parent / "scenarios"

Identifier = Annotated[str, Field(pattern=r"^[A-Za-z][A-Za-z0-9_]*$", max_length=64)]
StepName = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_-]*$", max_length=64)]
SysbenchScript = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]*$")]
# A server option value. `null` writes a bare flag line (e.g. `skip-log-bin`);
# YAML's ON/OFF arrive as booleans and are written back as ON/OFF.
ConfigValue = Union[bool, int, float, str, None]
SysbenchValue = Union[bool, int, float, str]


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Index(StrictModel):
    name: Identifier
    columns: list[Identifier] = Field(min_length=1)


class Dataset(StrictModel):
    """sysbench tables sbtest1..N and the layout applied to them after prepare."""

    tables: int = Field(1, ge=1, le=1024)
    rows: int = Field(ge=1, description="rows per table (sysbench --table-size)")
    row_format: Literal["REDUNDANT", "COMPACT", "DYNAMIC", "COMPRESSED"] | None = None
    key_block_size: Literal[1, 2, 4, 8, 16] | None = None
    indexes: list[Index] = []

    @model_validator(mode="after")
    def _kbs_needs_compressed(self):
        if self.key_block_size is not None and self.row_format != "COMPRESSED":
            raise ValueError("key_block_size is allowed only with row_format: COMPRESSED")
        return self


class Workload(StrictModel):
    """Defaults for every measured phase; a profile or a step may override them."""

    threads: int = Field(1, ge=1, le=4096)
    time: int = Field(60, ge=1, description="seconds per measured phase")
    report_interval: int = Field(1, ge=1, description="seconds between interval lines")


class Quiesce(StrictModel):
    """Before each measured phase: let purge finish and flush dirty pages, so every
    phase (and every run) starts from the same state instead of inheriting the
    background work of the step before it."""

    purge: bool = True
    flush_dirty_pages: bool = True
    timeout_s: int = Field(300, ge=1)


class PrepareStep(StrictModel):
    kind: Literal["prepare"]
    name: StepName = "prepare"
    workload: SysbenchScript = "oltp_common"
    options: dict[str, SysbenchValue] = {}


class ApplyLayoutStep(StrictModel):
    """ALTER TABLE each table to the dataset's indexes, row format and KEY_BLOCK_SIZE."""

    kind: Literal["apply_layout"]
    name: StepName = "apply-layout"


class DeleteRandomStep(StrictModel):
    """Delete a pseudo-random, reproducible fraction of rows (a hash of id and seed)."""

    kind: Literal["delete_random"]
    name: StepName = "delete-random"
    fraction: float = Field(gt=0, lt=1)
    seed: int = 1
    chunk_rows: int = Field(50_000, ge=1, description="id range deleted per statement")


class SqlStep(StrictModel):
    """SQL statements; one containing `{table}` runs once per dataset table."""

    kind: Literal["sql"]
    name: StepName
    statements: list[str] = Field(min_length=1)


class MeasureStep(StrictModel):
    """A sysbench run whose numbers and counters are recorded as a named phase."""

    kind: Literal["measure"]
    phase: StepName
    workload: SysbenchScript
    threads: int | None = Field(None, ge=1, le=4096)
    time: int | None = Field(None, ge=1)
    options: dict[str, SysbenchValue] = {}

    @property
    def name(self) -> str:
        return self.phase


Step = Annotated[
    Union[PrepareStep, ApplyLayoutStep, DeleteRandomStep, SqlStep, MeasureStep],
    Field(discriminator="kind"),
]


class DatasetOverride(StrictModel):
    tables: int | None = Field(None, ge=1, le=1024)
    rows: int | None = Field(None, ge=1)


class WorkloadOverride(StrictModel):
    threads: int | None = Field(None, ge=1, le=4096)
    time: int | None = Field(None, ge=1)
    report_interval: int | None = Field(None, ge=1)


class Profile(StrictModel):
    description: str = ""
    expected_minutes: float = Field(gt=0, description="wall time on a 2-core runner")
    dataset: DatasetOverride = DatasetOverride()
    workload: WorkloadOverride = WorkloadOverride()
    config: dict[str, ConfigValue] = {}


class ServerSection(StrictModel):
    config: dict[str, ConfigValue] = {}


class Headline(StrictModel):
    """A ratio of one phase metric between two phases, e.g. qps_write after/before."""

    metric: str
    numerator: StepName
    denominator: StepName


class CompareSpec(StrictModel):
    """A metric to judge against baselines (applies to every phase and headline)."""

    metric: str
    direction: Literal["higher", "lower"] | None = None
    tolerance: float | None = Field(None, gt=0, lt=1, description="relative, e.g. 0.05 for 5 %")


class Scenario(StrictModel):
    name: Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]*$")]
    description: str
    seed: str | None = Field(None, description="the seed document it reproduces")
    dataset: Dataset
    server: ServerSection = ServerSection()
    workload: Workload = Workload()
    quiesce: Quiesce = Quiesce()
    steps: list[Step] = Field(min_length=1)
    profiles: dict[StepName, Profile]
    headline: list[Headline] = []
    compare: list[CompareSpec] = Field([], description="metrics judged against baselines; default: see ci/metrics.py")

    @model_validator(mode="after")
    def _consistent(self):
        missing = [p for p in REQUIRED_PROFILES if p not in self.profiles]
        if missing:
            raise ValueError(f"profiles must define {', '.join(REQUIRED_PROFILES)}; missing: {', '.join(missing)}")
        names = [s.name for s in self.steps]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"step names must be unique; repeated: {', '.join(dupes)}")
        phases = self.phases
        if not phases:
            raise ValueError("steps need at least one `measure` step")
        for h in self.headline:
            for p in (h.numerator, h.denominator):
                if p not in phases:
                    raise ValueError(f"headline phase {p!r} is not a measure step; phases: {', '.join(phases)}")
        return self

    @property
    def phases(self) -> list[str]:
        return [s.phase for s in self.steps if isinstance(s, MeasureStep)]


class ResolvedScenario(StrictModel):
    """What one run executes: the scenario with one profile applied."""

    name: str
    profile: str
    dataset: Dataset
    workload: Workload
    quiesce: Quiesce
    config: dict[str, ConfigValue]
    steps: list[Step]
    headline: list[Headline]
    expected_minutes: float

    def content_hash(self) -> str:
        canonical = json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
        return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()

    def table_names(self) -> list[str]:
        return [f"sbtest{i}" for i in range(1, self.dataset.tables + 1)]


def _merge(base: BaseModel, override: BaseModel) -> dict[str, Any]:
    data = base.model_dump()
    data.update({k: v for k, v in override.model_dump().items() if v is not None})
    return data


def resolve(scenario: Scenario, profile: str, source: str = "") -> ResolvedScenario:
    if profile not in scenario.profiles:
        raise BadInput(
            f"{source or scenario.name}: unknown profile {profile!r}; "
            f"allowed: {', '.join(scenario.profiles)}"
        )
    p = scenario.profiles[profile]
    return ResolvedScenario(
        name=scenario.name,
        profile=profile,
        dataset=Dataset(**_merge(scenario.dataset, p.dataset)),
        workload=Workload(**_merge(scenario.workload, p.workload)),
        quiesce=scenario.quiesce,
        config={**scenario.server.config, **p.config},
        steps=scenario.steps,
        headline=scenario.headline,
        expected_minutes=p.expected_minutes,
    )


# ---------------------------------------------------------------- loading


def _format_loc(loc: tuple) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "(top level)"


def _allowed_keys(model: type[BaseModel], loc: tuple) -> list[str] | None:
    """Walk the model along an error location to list the keys allowed there."""
    current: Any = model
    for part in loc[:-1]:
        if isinstance(part, int):
            continue  # list index: the item type is already `current`
        if isinstance(current, type) and issubclass(current, BaseModel) and part in current.model_fields:
            current = _model_in(current.model_fields[part].annotation)
        elif part in _STEP_TAGS:
            current = _STEP_TAGS[part]  # discriminated union: pydantic puts the tag in loc
        elif current is Profile:
            continue  # dict key of `profiles`
        else:
            return None
    if isinstance(current, type) and issubclass(current, BaseModel):
        return list(current.model_fields)
    return None


_STEP_TAGS = {
    "prepare": PrepareStep,
    "apply_layout": ApplyLayoutStep,
    "delete_random": DeleteRandomStep,
    "sql": SqlStep,
    "measure": MeasureStep,
}


def _model_in(annotation: Any) -> Any:
    """The BaseModel class inside an annotation like list[X], dict[str, X], X | None."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def _error_line(source: str, err: dict) -> str:
    loc = tuple(err["loc"])
    where = _format_loc(loc)
    if err["type"] == "extra_forbidden":
        allowed = _allowed_keys(Scenario, loc)
        hint = f"; allowed: {', '.join(allowed)}" if allowed else ""
        return f"{source}: field {where}: unknown key{hint}"
    if err["type"] == "union_tag_invalid":
        return f"{source}: field {where}: unknown step kind {err['input'].get('kind')!r}; allowed: {', '.join(_STEP_TAGS)}"
    if err["type"] == "missing":
        return f"{source}: field {where}: required but missing"
    msg = err["msg"]
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, "):]
    got = err.get("input")
    shown = "" if isinstance(got, (dict, list)) or got is None else f" (got {got!r})"
    return f"{source}: field {where}: {msg}{shown}"


def validation_message(source: str, exc: ValidationError) -> str:
    errors = exc.errors()
    line = _error_line(source, errors[0])
    if len(errors) > 1:
        line += f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})"
    return line


def parse_scenario(text: str, source: str) -> Scenario:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}:{mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise BadInput(f"{source}{where}: not valid YAML: {problem}") from None
    if not isinstance(data, dict):
        raise BadInput(f"{source}: a scenario file must be a YAML mapping at the top level")
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        raise BadInput(validation_message(source, exc)) from None


def scenario_path(name_or_path: str) -> Path:
    """A scenario given by file path, or by name from the scenarios/ directory."""
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml") or p.exists():
        if not p.is_file():
            raise BadInput(f"{p}: scenario file not found")
        return p
    candidate = SCENARIO_DIR / f"{name_or_path}.yaml"
    if candidate.is_file():
        return candidate
    known = ", ".join(sorted(q.stem for q in SCENARIO_DIR.glob("*.yaml"))) or "none"
    raise BadInput(f"unknown scenario {name_or_path!r}; known: {known} (or give a path to a .yaml file)")


def load_scenario(name_or_path: str) -> tuple[Scenario, Path]:
    path = scenario_path(name_or_path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise BadInput(f"{path}: cannot read: {exc.strerror}") from None
    scenario = parse_scenario(text, str(path))
    if scenario.name != path.stem:
        raise BadInput(f"{path}: field name: {scenario.name!r} must match the file name {path.stem!r}")
    return scenario, path


def all_scenario_files() -> list[Path]:
    return sorted(SCENARIO_DIR.glob("*.yaml"))
