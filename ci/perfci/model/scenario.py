"""Scenario files: the typed model, loading with clear errors, and profile resolution.

A scenario file declares a dataset, server config, an ordered list of steps and
profiles that scale it. `load_scenario` validates a file; `resolve` applies one
profile and gives the exact parameters a run uses (and hashes them).
"""

from __future__ import annotations

import fnmatch
import hashlib
import itertools
import json
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, BeforeValidator, Field, ValidationError, model_validator

from perfci.model.base import StrictModel
from perfci.model.verdicts import Direction
from perfci.util.errors import BadInput
from perfci.util.paths import scenarios_dir
from perfci.util.text import control_char, first_control_char

REQUIRED_PROFILES = ("smoke", "nightly", "seed")

Identifier = Annotated[str, Field(pattern=r"^[A-Za-z][A-Za-z0-9_]*$", max_length=64)]
StepName = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_-]*$", max_length=64)]
SysbenchScript = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]*$")]
# sysbench's own Lua tests (1.0.20): a scenario's `lua` scripts must not shadow them
SYSBENCH_TESTS = frozenset({"bulk_insert", "oltp_common", "oltp_delete", "oltp_insert", "oltp_point_select",
                            "oltp_read_only", "oltp_read_write", "oltp_update_index", "oltp_update_non_index",
                            "oltp_write_only", "select_random_points", "select_random_ranges"})
# A server option value. `null` writes a bare flag line (e.g. `skip-log-bin`);
# YAML's ON/OFF arrive as booleans and are written back as ON/OFF.
def _one_line(value: object) -> object:
    found = control_char(value, one_line=True) if isinstance(value, str) else None
    if found:
        raise ValueError(f"control character {found} not allowed (a server option is one my.cnf line)")
    return value


# checked before the union is tried, so the error names the problem, not each member type
OneLine = Annotated[str, BeforeValidator(_one_line)]
ConfigValue = Annotated[bool | int | float | str | None, BeforeValidator(_one_line)]
SysbenchValue = bool | int | float | str


# a column, optionally with a prefix length: `c(20)`
IndexColumn = Annotated[str, Field(pattern=r"^[A-Za-z][A-Za-z0-9_]*(\(\d{1,4}\))?$", max_length=72)]


class Index(StrictModel):
    name: Identifier
    columns: list[IndexColumn] = Field(min_length=1)


RowFormat = Literal["REDUNDANT", "COMPACT", "DYNAMIC", "COMPRESSED"]
KeyBlockSize = Literal[1, 2, 4, 8, 16]
# sysbench: its random digit groups; text: seeded English-like words (compresses
# like real text, seed 003); only the perfci loader writes text.
Payload = Literal["sysbench", "text"]


class Dataset(StrictModel):
    """sysbench tables sbtest1..N and the layout applied to them after prepare."""

    tables: int = Field(1, ge=1, le=1024)
    rows: int = Field(ge=1, description="rows per table (sysbench --table-size)")
    row_format: RowFormat | None = None
    key_block_size: KeyBlockSize | None = None
    indexes: list[Index] = []
    payload: Payload = "sysbench"

    @model_validator(mode="after")
    def _kbs_needs_compressed(self):
        if self.key_block_size is not None and self.row_format != "COMPRESSED":
            raise ValueError("key_block_size is allowed only with row_format: COMPRESSED")
        return self


Threads = Annotated[int, Field(ge=1, le=4096)]


class Workload(StrictModel):
    """Defaults for every measured phase; a profile or a step may override them."""

    threads: int = Field(1, ge=1, le=4096)
    thread_sweep: list[Threads] = Field([1], min_length=1,
                                        description="thread counts of a measure step with `threads: sweep`")
    time: int = Field(60, ge=1, description="seconds per measured phase; with `transactions`, the cap (a guard)")
    report_interval: int = Field(1, ge=1, description="seconds between interval lines")
    transactions: int | None = Field(
        None, ge=1, description="fixed work: every measured phase runs exactly this many transactions "
                                "(sysbench --events) with a seeded random stream, so every run performs the same "
                                "statements on the same rows; a phase that hits the `time` cap first is invalid")
    rand_seed: int = Field(1, ge=1, description="sysbench --rand-seed of fixed-work phases (recorded)")
    burst_transactions: int | None = Field(
        None, ge=1, description="interleaved A/B: transactions per burst (default: a tenth of `transactions`)")

    @property
    def fixed_work(self) -> bool:
        return self.transactions is not None

    def bursts(self) -> tuple[int, int]:
        """(transactions per burst, bursts) of an interleaved fixed-work phase."""
        assert self.transactions is not None
        size = self.burst_transactions or max(1, self.transactions // 10)
        return size, max(1, round(self.transactions / size))


class Quiesce(StrictModel):
    """Before each measured phase: let purge finish and flush dirty pages, so every
    phase (and every run) starts from the same state instead of inheriting the
    background work of the step before it."""

    purge: bool = True
    flush_dirty_pages: bool = True
    timeout_s: int = Field(300, ge=1)


class PrepareStep(StrictModel):
    """Create and fill the tables. `sysbench`: `sysbench <workload> prepare`;
    `perfci`: CREATE TABLE with the dataset's row format and KEY_BLOCK_SIZE (so the
    load itself writes that format, as in seeds 001-003), PK only, then batched
    inserts of the dataset's payload. Both record the load time."""

    kind: Literal["prepare"]
    name: StepName = "prepare"
    loader: Literal["sysbench", "perfci"] = "sysbench"
    workload: SysbenchScript = "oltp_common"
    options: dict[str, SysbenchValue] = {}
    seed: int = Field(1, description="perfci loader: random seed of k values and payload")


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
    """SQL statements; one containing `{table}` runs once per dataset table.
    `{name}` of a case's `vars` (set by matrix axes) is replaced too."""

    kind: Literal["sql"]
    name: StepName
    statements: list[str] = Field(min_length=1)


class MeasureStep(StrictModel):
    """A sysbench run whose numbers and counters are recorded as a named phase."""

    kind: Literal["measure"]
    phase: StepName
    workload: SysbenchScript
    # `sweep`: one phase per count of workload.thread_sweep, named <phase>-t<N>
    threads: Threads | Literal["sweep"] | None = None
    time: int | None = Field(None, ge=1)
    transactions: int | None = Field(None, ge=1, description="fixed work for this phase (see workload.transactions)")
    options: dict[str, SysbenchValue] = {}

    @property
    def name(self) -> str:
        return self.phase


Step = Annotated[
    PrepareStep | ApplyLayoutStep | DeleteRandomStep | SqlStep | MeasureStep,
    Field(discriminator="kind"),
]


class DatasetOverride(StrictModel):
    tables: int | None = Field(None, ge=1, le=1024)
    rows: int | None = Field(None, ge=1)


class WorkloadOverride(StrictModel):
    threads: int | None = Field(None, ge=1, le=4096)
    thread_sweep: list[Threads] | None = Field(None, min_length=1)
    time: int | None = Field(None, ge=1)
    report_interval: int | None = Field(None, ge=1)
    transactions: int | None = Field(None, ge=1)
    rand_seed: int | None = Field(None, ge=1)
    burst_transactions: int | None = Field(None, ge=1)


class DatasetPatch(StrictModel):
    """What one axis value changes in the dataset."""

    tables: int | None = Field(None, ge=1, le=1024)
    rows: int | None = Field(None, ge=1)
    row_format: RowFormat | None = None
    key_block_size: KeyBlockSize | None = None
    indexes: list[Index] | None = None
    payload: Payload | None = None


AxisValueId = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", max_length=64)]
AxisScalar = Annotated[bool | int | str, BeforeValidator(_one_line)]


class AxisVariant(StrictModel):
    """A named point of an axis: its id is its key (e.g. `cx_full`)."""

    description: str = ""
    dataset: DatasetPatch = DatasetPatch()
    config: dict[OneLine, ConfigValue] = {}
    workload: WorkloadOverride = WorkloadOverride()
    vars: dict[Identifier, str] = Field({}, description="replaces {name} in sql step statements")
    phases: list[Identifier] = Field(
        [], description="run only these measure phases in this variant's cases (default: all); e.g. one "
                        "microbenchmark per case")


class Axis(StrictModel):
    """One dimension of the case matrix. Either `option` + a list of values (a
    server option set to each; case id part `name=value`), or named `variants`
    (case id part: the variant's key)."""

    name: Identifier
    option: OneLine | None = None
    values: list[AxisScalar] | None = None
    variants: dict[AxisValueId, AxisVariant] | None = None

    @model_validator(mode="after")
    def _one_form(self):
        if (self.variants is None) == (self.values is None):
            raise ValueError(f"axis {self.name}: give either `option` with `values`, or `variants`")
        if self.values is not None and not self.option:
            raise ValueError(f"axis {self.name}: `values` needs `option` (the server option they set)")
        if self.variants is not None and self.option:
            raise ValueError(f"axis {self.name}: `option` goes with `values`; variants set `config` themselves")
        ids = self.ids()
        if not ids:
            raise ValueError(f"axis {self.name}: needs at least one value")
        if len(set(ids)) != len(ids):
            raise ValueError(f"axis {self.name}: values must be unique")
        return self

    def ids(self) -> list[str]:
        if self.variants is not None:
            return list(self.variants)
        return [config_text(v) for v in self.values or []]

    def case_part(self, value_id: str) -> str:
        return value_id if self.variants is not None else f"{self.name}={value_id}"

    def variant(self, value_id: str) -> AxisVariant:
        if self.variants is not None:
            return self.variants[value_id]
        value = next(v for v in self.values or [] if config_text(v) == value_id)
        assert self.option is not None  # an axis has variants or an option (validated)
        return AxisVariant(config={self.option: value})


def config_text(value) -> str:
    """How an option value reads in a case id and my.cnf (YAML's on/off are booleans)."""
    if isinstance(value, bool):
        return "ON" if value else "OFF"
    return str(value)


class Profile(StrictModel):
    description: str = ""
    expected_minutes: float = Field(gt=0, description="wall time on a 2-core runner")
    dataset: DatasetOverride = DatasetOverride()
    workload: WorkloadOverride = WorkloadOverride()
    config: dict[OneLine, ConfigValue] = {}
    axes: dict[Identifier, list[AxisValueId]] = Field(
        {}, description="run only these values of an axis at this profile (default: all)")


class ServerSection(StrictModel):
    config: dict[OneLine, ConfigValue] = {}


class Headline(StrictModel):
    """A ratio of one phase metric between two phases, e.g. qps_write after/before."""

    metric: str
    numerator: StepName
    denominator: StepName


class CompareSpec(StrictModel):
    """A metric to judge against baselines (applies to every phase and headline)."""

    metric: str
    direction: Direction | None = None
    tolerance: float | None = Field(None, gt=0, lt=1, description="relative, e.g. 0.05 for 5 %")
    floor: float | None = Field(None, ge=0, description="absolute change below which nothing is flagged")


class Scenario(StrictModel):
    name: Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]*$")]
    description: str
    source: str | None = Field(None, description="the public report it reproduces: a bug number and title, an article")
    dataset: Dataset
    server: ServerSection = ServerSection()
    workload: Workload = Workload()
    quiesce: Quiesce = Quiesce()
    steps: list[Step] = Field(min_length=1)
    profiles: dict[StepName, Profile]
    headline: list[Headline] = []
    compare: list[CompareSpec] = Field([], description="metrics judged against baselines; default: see ci/perfci/model/metrics.py")
    axes: list[Axis] = Field([], description="the case matrix: one case per point of the product of axes")
    snapshot: bool = Field(False, description="keep the dataset built by the leading data steps in the snapshot "
                                              "cache and restore it on later runs (not where load time is a metric)")
    lua: dict[SysbenchScript, str] = Field(
        {}, description="sysbench Lua tests of this scenario, by name: a measure step's `workload` may name one "
                        "(the text is part of the scenario and of its hash; `require(\"oltp_common\")` works)")

    @model_validator(mode="before")
    @classmethod
    def _seed_is_the_old_name_of_source(cls, data: Any) -> Any:
        if isinstance(data, dict) and "seed" in data and "source" not in data:
            data = {**{k: v for k, v in data.items() if k != "seed"}, "source": data["seed"]}
        return data

    @model_validator(mode="after")
    def _consistent(self):
        axis_names = [a.name for a in self.axes]
        if len(set(axis_names)) != len(axis_names):
            raise ValueError("axis names must be unique")
        by_name = {a.name: a for a in self.axes}
        for pname, prof in self.profiles.items():
            for axis, values in prof.axes.items():
                if axis not in by_name:
                    raise ValueError(f"profiles.{pname}.axes: unknown axis {axis!r}; axes: {', '.join(by_name) or 'none'}")
                unknown = [v for v in values if v not in by_name[axis].ids()]
                if unknown:
                    raise ValueError(f"profiles.{pname}.axes.{axis}: unknown value {unknown[0]!r}; "
                                     f"allowed: {', '.join(by_name[axis].ids())}")
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
        shadowing = sorted(set(self.lua) & SYSBENCH_TESTS)
        if shadowing:
            raise ValueError(f"lua.{shadowing[0]}: is the name of one of sysbench's own tests; name it otherwise")
        for step in self.steps:
            if isinstance(step, MeasureStep) and step.workload not in SYSBENCH_TESTS | set(self.lua):
                raise ValueError(f"step {step.phase}: workload {step.workload!r} is neither one of sysbench's tests "
                                 f"({', '.join(sorted(SYSBENCH_TESTS))}) nor a script of this scenario's `lua`")
        for ax in self.axes:
            for value_id, variant in (ax.variants or {}).items():
                unknown = [p for p in variant.phases if p not in phases]
                if unknown:
                    raise ValueError(f"axes.{ax.name}.variants.{value_id}.phases: {unknown[0]!r} is not a measure "
                                     f"step; phases: {', '.join(phases)}")
        sweeps = any(isinstance(s, MeasureStep) and s.threads == "sweep" for s in self.steps)
        for h in self.headline if not sweeps else []:  # sweep phase names are known per profile
            for p in (h.numerator, h.denominator):
                if p not in phases:
                    raise ValueError(f"headline phase {p!r} is not a measure step; phases: {', '.join(phases)}")
        return self

    @property
    def phases(self) -> list[str]:
        """Measure step phase names (a thread sweep's phases become `<phase>-t<N>`)."""
        return [s.phase for s in self.steps if isinstance(s, MeasureStep)]


class ResolvedScenario(StrictModel):
    """What one run executes: the scenario with one profile applied."""

    name: str
    profile: str
    case: str = "default"
    axes: dict[str, str] = Field({}, description="axis name -> value id of this case")
    axis_options: list[str] = Field([], description="server options the case's axes set (must take effect)")
    vars: dict[str, str] = {}
    dataset: Dataset
    workload: Workload
    quiesce: Quiesce
    config: dict[OneLine, ConfigValue]
    steps: list[Step]
    headline: list[Headline]
    compare: list[CompareSpec] = Field([], description="the verdict rules: part of what ran, and of its hash")
    expected_minutes: float
    snapshot: bool = False
    lua: dict[str, str] = Field({}, description="the scenario's own sysbench Lua tests, by name")

    def content_hash(self) -> str:
        # defaults left out: a new optional field does not change the hash of existing scenarios
        canonical = json.dumps(self.model_dump(mode="json", exclude_defaults=True), sort_keys=True, separators=(",", ":"))
        return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()

    def table_names(self) -> list[str]:
        return [f"sbtest{i}" for i in range(1, self.dataset.tables + 1)]


def _merge(base: BaseModel, override: BaseModel) -> dict[str, Any]:
    data = base.model_dump()
    data.update({k: v for k, v in override.model_dump().items() if v is not None})
    return data


def _expand_sweeps(steps: list, workload: Workload) -> list:
    out = []
    for step in steps:
        if isinstance(step, MeasureStep) and step.threads == "sweep":
            out += [step.model_copy(update={"phase": f"{step.phase}-t{n}", "threads": n})
                    for n in workload.thread_sweep]
        else:
            out.append(step)
    return out


def _check_headline(headline: list[Headline], steps: list, source: str) -> None:
    phases = [s.phase for s in steps if isinstance(s, MeasureStep)]
    for h in headline:
        for p in (h.numerator, h.denominator):
            if p not in phases:
                raise BadInput(f"{source}: headline phase {p!r} is not a phase of this profile; phases: {', '.join(phases)}")


def resolve(scenario: Scenario, profile: str, source: str = "") -> ResolvedScenario:
    """The scenario at one profile, without axes (a matrix scenario: use `cases`)."""
    if profile not in scenario.profiles:
        raise BadInput(
            f"{source or scenario.name}: unknown profile {profile!r}; "
            f"allowed: {', '.join(scenario.profiles)}"
        )
    p = scenario.profiles[profile]
    workload = Workload(**_merge(scenario.workload, p.workload))
    steps = _expand_sweeps(scenario.steps, workload)
    _check_headline(scenario.headline, steps, source or scenario.name)
    return ResolvedScenario(
        name=scenario.name,
        profile=profile,
        dataset=Dataset(**_merge(scenario.dataset, p.dataset)),
        workload=workload,
        quiesce=scenario.quiesce,
        config={**scenario.server.config, **p.config},
        steps=steps,
        headline=scenario.headline,
        compare=scenario.compare,
        expected_minutes=p.expected_minutes,
        snapshot=scenario.snapshot,
        lua=scenario.lua,
    )


def cases(scenario: Scenario, profile: str, source: str = "", only: list[str] | None = None) -> list[ResolvedScenario]:
    """One resolved scenario per point of the axes' product (the profile may pick
    values of an axis); `only` keeps the case ids matching any of its glob patterns."""
    base = resolve(scenario, profile, source)
    if not scenario.axes:
        points: list[list[tuple[Axis, str]]] = [[]]
    else:
        picked = scenario.profiles[profile].axes
        points = [[(axis, v) for axis, v in combo] for combo in itertools.product(
            *[[(axis, v) for v in (picked.get(axis.name) or axis.ids())] for axis in scenario.axes])]
    out = []
    for point in points:
        resolved = base if not point else _apply_point(base, scenario.steps, point, source or scenario.name)
        if not only or any(fnmatch.fnmatchcase(resolved.case, pat) for pat in only):
            out.append(resolved)
    if not out:
        all_ids = ", ".join(r.case for r in cases(scenario, profile, source))
        raise BadInput(f"--case {' '.join(only or [])}: matches no case of {scenario.name} at {profile}; cases: {all_ids}")
    return out


def _apply_point(base: ResolvedScenario, scenario_steps: list, point: list, source: str) -> ResolvedScenario:
    dataset = base.dataset.model_dump()
    workload = base.workload.model_dump()
    config = dict(base.config)
    variables: dict[str, str] = {}
    options: list[str] = []
    for axis, value_id in point:
        v = axis.variant(value_id)
        dataset.update({k: val for k, val in v.dataset.model_dump().items() if val is not None})
        workload.update({k: val for k, val in v.workload.model_dump().items() if val is not None})
        config.update(v.config)
        options += list(v.config)
        variables.update(v.vars)
    case_id = "/".join(axis.case_part(value_id) for axis, value_id in point)
    try:
        ds = Dataset(**dataset)
        wl = Workload(**workload)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = f"{exc.title.lower()}.{_format_loc(tuple(err['loc']))}" if err["loc"] else exc.title.lower()
        raise BadInput(f"{source}: case {case_id}: {where}: {err['msg'].removeprefix('Value error, ')}") from None
    steps = _expand_sweeps(_only_phases(scenario_steps, point), wl)
    kept = {st.phase for st in steps if isinstance(st, MeasureStep)}
    headline = [h for h in base.headline if {h.numerator, h.denominator} <= kept]  # a ratio needs both phases
    return base.model_copy(update={
        "case": case_id, "axes": {axis.name: value_id for axis, value_id in point},
        "axis_options": sorted(set(options)), "vars": variables,
        "dataset": ds, "workload": wl, "config": config, "steps": steps, "headline": headline})


def only_phases(resolved: ResolvedScenario, phases: tuple[str, ...] | list[str]) -> ResolvedScenario:
    """The case measuring only `phases` (`--phase`: an A/B sized and judged on one kind of
    statement; data steps and other steps kept); headlines needing a dropped phase go.
    A name that is not a measure phase of the case is a one-line error listing them."""
    if not phases:
        return resolved
    known = [st.phase for st in resolved.steps if isinstance(st, MeasureStep)]
    unknown = [ph for ph in phases if ph not in known]
    if unknown:
        raise BadInput(f"--phase {unknown[0]!r}: not a measure phase of {resolved.name} at {resolved.profile}"
                       f"{'' if resolved.case == 'default' else f' (case {resolved.case})'}; phases: {', '.join(known)}")
    steps = [st for st in resolved.steps if not isinstance(st, MeasureStep) or st.phase in phases]
    headline = [h for h in resolved.headline if {h.numerator, h.denominator} <= set(phases)]
    return resolved.model_copy(update={"steps": steps, "headline": headline})


def _only_phases(steps: list, point: list) -> list:
    """The steps of a case whose variants name `phases`: every other step, and the measure
    steps each of those variants keeps."""
    for axis, value_id in point:
        keep = axis.variant(value_id).phases
        if keep:
            steps = [st for st in steps if not isinstance(st, MeasureStep) or st.phase in keep]
    return steps


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
        elif current in (Profile, AxisVariant):
            continue  # dict key of `profiles` / `variants`
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


def _error_line(source: str, err: Any, model: type[BaseModel]) -> str:
    loc = tuple(err["loc"])
    where = _format_loc(loc)
    if err["type"] == "extra_forbidden":
        allowed = _allowed_keys(model, loc)
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


def validation_message(source: str, exc: ValidationError, model: type[BaseModel] | None = None) -> str:
    """One line for a validation error: the file, the field and what is allowed."""
    errors = exc.errors()
    line = _error_line(source, errors[0], model or Scenario)
    if len(errors) > 1:
        line += f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})"
    return line


def load_yaml(text: str, source: str) -> object:
    """YAML, or bad input naming the file, line and column."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}:{mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise BadInput(f"{source}{where}: not valid YAML: {problem}") from None


def parse_scenario(text: str, source: str) -> Scenario:
    data = load_yaml(text, source)
    if not isinstance(data, dict):
        raise BadInput(f"{source}: a scenario file must be a YAML mapping at the top level")
    hit = first_control_char(data)
    if hit:
        raise BadInput(f"{source}: field {hit[0]}: control character {hit[1]} not allowed in scenario text")
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
    directory = scenarios_dir()
    candidate = directory / f"{name_or_path}.yaml"
    if candidate.is_file():
        return candidate
    known = ", ".join(sorted(q.stem for q in directory.glob("*.yaml"))) or "none"
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
    return sorted(scenarios_dir().glob("*.yaml"))
