"""The result of one run of one case: a typed, versioned model.

Every writer builds a `Result` and every reader gets one from `results.load_result`,
which upgrades older formats first (`perfci.result/1` -> `/2`, see `store/results.py`).
`perfci schema result` prints the JSON Schema of this model.

Values stay plain JSON types (numbers, strings, lists, mappings); where a mapping
is open (server variables, counters), its value type is still fixed.
"""

from __future__ import annotations

import shlex
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from perfci.model.base import StrictModel

RESULT_SCHEMA = "perfci.result/2"

# A server option value as written to my.cnf: null is a bare flag line.
ConfigValue = bool | int | float | str | None
Number = int | float


# What a result file may call a run and a phase: result ids and phase names reach file
# names, issue markers (<!-- perfci-since: ID -->) and Markdown, so a file that does not
# fit is refused on load (a forged `-->` in an id would close the marker).
ResultId = Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9][\w.:=+-]*$")]
PhaseName = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_-]*$", max_length=80)]

class Status(StrEnum):
    ok = "ok"
    skipped = "skipped"  # the server cannot run this case as specified; see skip_reason


# ---------------------------------------------------------------- context


class Filesystem(StrictModel):
    mount: str
    device: str
    type: str


class BusyProcess(StrictModel):
    cpu_pct: float
    command: str


class HostCheck(StrictModel):
    """Is the host quiet enough to benchmark on (recorded before the run)."""

    cpu_governors: list[str] | None = None
    transparent_hugepages: str | None = None
    swap_total_bytes: int = 0
    swap_used_bytes: int = 0
    swappiness: str | None = None
    load_1m: float = 0.0
    busy_processes: list[BusyProcess] = []
    warnings: list[str] = []
    exclusive: bool | None = None          # perfci held the host lock (None: results before it existed)
    allow_busy: bool = False               # --allow-busy: measured although the host was not free
    others_running: list[str] = []         # what else measured or was measured (only with allow_busy)


class Host(StrictModel):
    runner_class: str = "local"
    hostname: str
    cpu_model: str
    cpus: int | None
    memory_bytes: int | None = None
    kernel: str
    machine: str | None = None
    python: str | None = None
    datadir_filesystem: Filesystem | None = None
    check: HostCheck | None = None

    def signature(self) -> HostSignature:
        """What makes two hosts the same kind for benchmarking purposes."""
        return HostSignature(cpu_model=self.cpu_model, cpus=self.cpus,
                             memory_gib=round((self.memory_bytes or 0) / 2**30))


class HostSignature(StrictModel):
    """perfci's one host-compatibility policy: numbers are comparable only between runs
    on the same signature (CPU model, CPU count, memory). Samples of different signatures
    never pool: `baseline update` refuses a run of another host (unless --force, which
    the sample records), and a history baseline takes only the samples of the judged
    run's host (the report says how many it left out). A pinned baseline file of another
    host is still judged against, since someone chose that file, but the report's
    first warning says the hosts differ."""

    cpu_model: str | None
    cpus: int | None
    memory_gib: int

    def mismatch(self, other: HostSignature | None) -> str | None:
        """Why `other` is not comparable with this host; None when it is (or is unknown)."""
        if other is None or other == self:
            return None
        return f"host {self.model_dump()} is not the baseline's {other.model_dump()}"


class Harness(StrictModel):
    """What produced the numbers: perfci's revision and the tools it drove."""

    git_sha: str = "unknown"
    dirty: bool | None = None
    sysbench: str = "unknown"
    perfci: str | None = None  # package version (None in /1 results)
    python: str | None = None
    dependencies: dict[str, str] = Field({}, description="versions of the numeric and GitHub dependencies")


class ServerConfig(StrictModel):
    scenario: dict[str, ConfigValue] = {}
    overrides: dict[str, ConfigValue] = {}
    written: dict[str, ConfigValue] = Field({}, description="what went into my.cnf after capability mapping")


class DsnAction(StrictModel):
    action: Literal["set_global", "not_applied", "created_database", "dropped_database", "restored_global",
                    "created_account", "dropped_account", "own_account_for_sysbench"]
    variable: str | None = None
    database: str | None = None
    user: str | None = None       # the account sysbench used (a temporary one, or the dsn's own)
    host: str | None = None
    grants: str | None = None
    value: ConfigValue = None
    previous: ConfigValue = None
    kept: ConfigValue = None
    reason: str | None = None


class Build(StrictModel):
    """How scripts/build-server built a build: server (its perfci-build.json)."""

    ref: str = Field(description="the git ref asked for (the commit is Server.commit)")
    repo: str = Field(description="the repository cloned: the flavor's upstream or PERFCI_BUILD_REPO")
    fork: bool = Field(False, description="built from PERFCI_BUILD_REPO (a fork or mirror), not upstream")
    compiler: str = ""
    cmake_flags: list[str] = []
    build_seconds: int | None = None
    cores: int | None = None
    ccache_hits: int | None = None
    ccache_misses: int | None = None


class Rerun(StrictModel):
    """What runs this case again, typed: `reproduce` is its command line (never parsed
    back: the reference A/B and the issue read this)."""

    scenario: str
    profile: str
    server: str = Field(description="the server spec; a build: spec on a branch as the commit it built")
    case: str | None = Field(None, description="a matrix case (None: the scenario's only one)")
    config: list[str] = Field([], description="--config overrides, NAME or NAME=VALUE, in order")
    measure: Literal["time", "work"] = "time"
    work_counter: str | None = None
    build_repo: str | None = Field(None, description="PERFCI_BUILD_REPO: the fork or mirror a build: spec came from")

    def args(self) -> list[str]:
        args = ["perfci", "run", self.scenario, "--profile", self.profile, "--server", self.server]
        if self.case:
            args += ["--case", self.case]
        for c in self.config:
            args += ["--config", c]
        if self.measure == "work":
            args += ["--measure", "work", "--work-counter", self.work_counter or "auto"]
        return args

    def command(self) -> str:
        fork = f"PERFCI_BUILD_REPO={shlex.quote(self.build_repo)} " if self.build_repo else ""
        return fork + shlex.join(self.args())


class Server(StrictModel):
    provider: str
    server_id: str | None = Field(None, description="the servers.yaml id whose spec this is, if any")
    flavor: Literal["mysql", "percona", "mariadb"]
    version: str = Field(min_length=1, description="major.minor.patch")
    full_version: str = ""
    version_comment: str = ""
    line: str = Field("", description="the release line issues and baselines follow, e.g. mysql-8.0")
    binary: str | None = None
    basedir: str | None = None
    commit: str | None = Field(None, description="build: the git commit scripts/build-server built")
    build: Build | None = Field(None, description="build: how it was built (compiler, cmake flags, time)")
    image: str | None = None
    image_digest: str | None = None
    image_id: str | None = None
    container_user: str | None = Field(None, description="uid:gid the server ran as in its container")
    network: str | None = Field(None, description="docker: host (server binds 127.0.0.1) or published")
    dsn: str | None = None
    dsn_actions: list[DsnAction] = []
    config: ServerConfig = ServerConfig()
    effective_config: dict[str, str] = Field({}, description="SHOW GLOBAL VARIABLES at the end of the run")


class ScenarioRef(StrictModel):
    name: str
    profile: str
    file: str = ""
    hash: str = Field(pattern=r"^sha256:[0-9a-f]{64}$|^sha256:")
    resolved: dict[str, JsonValue] = Field({}, description="the resolved scenario that ran (incl. compare rules)")

    def measured_phases(self) -> list[str]:
        steps = self.resolved.get("steps")
        if not isinstance(steps, list):
            return []
        return [str(s["phase"]) for s in steps if isinstance(s, dict) and s.get("kind") == "measure"]


# ---------------------------------------------------------------- steps and phases


class TableSize(StrictModel):
    file_size: int
    allocated_size: int


class Statement(StrictModel):
    sql: str
    duration_s: float
    rows: int


class Step(StrictModel):
    """One executed step; the fields after `duration_s` depend on its kind."""

    name: str
    kind: Literal["prepare", "apply_layout", "delete_random", "sql", "measure", "snapshot_restore"]
    started_at: str | None = None
    duration_s: float
    sizes_after: dict[str, TableSize] = {}
    innodb_cmp: dict[str, int] | None = Field(None, description="INNODB_CMP delta over the step (not for measures)")
    compress_miss_rate: float | None = None
    command: str | None = None                      # prepare (sysbench)
    loader: str | None = None                       # prepare (perfci loader)
    payload: str | None = None
    rows_loaded: int | None = None
    create_table: str | None = None
    statements: list[Statement] | None = None       # apply_layout, sql
    rows_deleted: int | None = None                 # delete_random
    rows_remaining: int | None = None
    phase: str | None = None                        # measure
    replaces: list[str] | None = None               # snapshot_restore
    buffer_pool_load: str | None = None


class Interval(StrictModel):
    """One `--report-interval` line of sysbench."""

    t: float
    threads: int
    tps: float
    qps: float
    qps_read: float
    qps_write: float
    qps_other: float
    latency_pct: float
    latency_ms: float
    errors_per_s: float
    reconnects_per_s: float


class QuiesceOutcome(StrictModel):
    history_length_at_start: int | None = None
    dirty_pages_at_start: int | None = None
    history_length_at_end: int | None = None
    dirty_pages_at_end: int | None = None
    duration_s: float | None = None
    timed_out: bool = False
    checkpoint_age_at_start: int | None = Field(None, description="redo bytes since the last checkpoint, which decides "
                                                                   "when the server flushes on its own during the phase "
                                                                   "(None: not read, results before 2026-11-29)")
    checkpoint_age_at_end: int | None = None


class Metrics(BaseModel):
    """Run-level metrics of a phase: sysbench's report and the per-transaction work
    derived from the counters. Metrics not named here (another latency percentile,
    change-buffer merge rates) are kept as extra numbers."""

    model_config = ConfigDict(extra="allow", frozen=True)
    __pydantic_extra__: dict[str, Number | None] = Field(init=False)

    duration_s: float
    events: int
    transactions: int
    tps: float
    queries: int
    qps: float
    errors: int = 0
    errors_per_s: float = 0.0
    reconnects: int = 0
    reconnects_per_s: float = 0.0
    latency_ms_avg: float | None = None
    latency_ms_p95: float | None = None
    latency_ms_p99: float | None = Field(None, description="from sysbench's histogram, where >= 1,000 transactions ran")
    latency_ms_p99_9: float | None = Field(None, description="from sysbench's histogram, where >= 10,000 transactions ran")
    index_page_splits_per_txn: float | None = None
    compress_failures_per_txn: float | None = None
    uncompress_ops_per_txn: float | None = None
    pages_written_per_txn: float | None = None
    compress_miss_rate: float | None = None
    server_cpu_util: float | None = None

    def numbers(self) -> dict[str, float]:
        """Every metric that has a value, by name (what baselines and history keep)."""
        return {k: v for k, v in self.model_dump().items()
                if isinstance(v, (int, float)) and not isinstance(v, bool)}

    def get(self, name: str) -> float | None:
        value = self.numbers().get(name)
        return value


class Counters(StrictModel):
    """Counter deltas over a phase."""

    innodb_metrics: dict[str, Number] = {}
    global_status: dict[str, Number] = {}
    innodb_cmp: dict[str, int] = {}
    innodb_cmp_per_page_size: dict[str, int] = {}
    server_cpu_seconds: float | None = None


class Phase(StrictModel):
    workload: str
    threads: int
    time_s: int
    command: str
    bound: Literal["time", "transactions"] = Field(
        "time", description="what ended the phase by design: a time box, or a fixed number of transactions")
    transactions_target: int | None = Field(None, description="fixed work: the transactions asked for")
    rand_seed: int | None = Field(None, description="fixed work: sysbench --rand-seed")
    host_cpu: dict[str, float] | None = Field(
        None, description="average cores used during the phase: host, server, client, perfci, kernel (its own "
              "threads: I/O completion, writeback), others (what is left: other processes' load)")
    quiesce: QuiesceOutcome = QuiesceOutcome()
    sysbench_version: str | None = None
    metrics: Metrics
    counters: Counters = Counters()
    gauges_after: dict[str, int] = {}
    intervals: list[Interval] = []
    sizes_before: dict[str, TableSize] = {}
    sizes_after: dict[str, TableSize] = {}
    counted_bursts: list[float] = Field(
        [], description="a counted run (measure work): instructions per transaction of each counted burst, "
                        "the warm-up left out (their spread is the phase's)")


class HeadlineValue(StrictModel):
    """A ratio of one phase metric between two phases (e.g. qps_write after/before)."""

    metric: str
    numerator: str
    denominator: str
    value: float | None

    @property
    def key(self) -> str:
        return f"{self.metric} {self.numerator}/{self.denominator}"


class ConfigNote(StrictModel):
    """How a requested server option was mapped, skipped or overridden (never silent)."""

    option: str
    value: ConfigValue = None
    origin: Literal["scenario", "override"] = "scenario"
    action: Literal["mapped", "skipped", "overridden"]
    to: dict[str, ConfigValue] | None = None
    reason: str


class TableState(StrictModel):
    rows: int
    checksum: int | None


class SnapshotRecord(StrictModel):
    key: str
    restored: bool
    note: str
    saved: bool | None = None
    created_at: str | None = None
    bytes: int | None = None
    prepared_steps: list[dict[str, JsonValue]] | None = None
    restore_s: float | None = None
    buffer_pool_load: str | None = None


class DatasetState(StrictModel):
    tables: dict[str, TableState] = {}
    snapshot: SnapshotRecord | None = None


class AbRole(StrictModel):
    id: str
    side: Literal["a", "b"]
    round: int
    of: int


# ---------------------------------------------------------------- the result


class Validity(StrictModel):
    """The run validity gate (run/validity.py): an invalid run enters no baseline and no verdict."""

    valid: bool = True
    reasons: list[str] = []


class Result(StrictModel):
    schema_: Literal["perfci.result/2"] = Field("perfci.result/2", alias="schema")
    id: ResultId
    status: Status
    skip_reason: str | None = None
    case: str = "default"
    axes: dict[str, str] = {}
    started_at: str = ""
    finished_at: str = ""
    duration_s: float = 0.0
    harness: Harness = Harness()
    host: Host
    server: Server
    scenario: ScenarioRef
    dataset: DatasetState = DatasetState()
    steps: list[Step] = []
    phases: dict[PhaseName, Phase] = {}
    headline: list[HeadlineValue] = []
    notes: list[ConfigNote] = []
    reproduce: str = ""
    rerun: Rerun | None = Field(None, description="reproduce, typed (None in results of perfci before 2026-11-29)")
    ab: AbRole | None = None
    validity: Validity = Validity()
    measure: Literal["time", "work"] = Field(
        "time", description="time: the phases timed natively; work: counted (instructions per transaction of the "
                            "statement path, the server slowed down under its counter: its time metrics say "
                            "nothing and only instructions_per_txn is judged). A case's two kinds keep apart "
                            "histories and baselines")
    work: str | None = Field(None, description="measure work: how the instructions were counted, and the server "
                                               "config counting needed")

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @property
    def ran(self) -> bool:
        return self.status is Status.ok

    @property
    def runner_class(self) -> str:
        return self.host.runner_class

    def dump(self) -> dict[str, JsonValue]:
        return self.model_dump(mode="json", by_alias=True)


class ResultV1(Result):
    """What perfci wrote before /2 (headline ratios as one joined key). Read only
    through the upgrade in `store/results.py`; here so `perfci schema result` can say
    which older files it accepts."""

    schema_: Literal["perfci.result/1"] = Field("perfci.result/1", alias="schema")  # type: ignore[assignment]
    headline: dict[str, float | None] = {}  # type: ignore[assignment]
