"""Counting the work a server does per transaction: the instructions its statement path
executes, counted two ways, never beside a timed burst.

- `callgrind` (anywhere): the server runs under `valgrind --tool=callgrind`, collecting
  only inside the flavor's statement loop (`--toggle-collect`, the function found in the
  binary's dynamic symbols before anything starts); the counters are zeroed before a
  burst and dumped after it (vgdb's `zero` / `dump` monitor commands), and the dump's
  `summary:` line is the burst's instructions. Under valgrind a server is several times
  slower: a burst's time says nothing then, and is not judged.
- `pmu` (bare metal): `perf stat -e instructions:u` on the server's process over the
  burst, enabled and disabled over perf's control FIFO as the explain pass's profiles
  are (run/profiler.py): every user instruction of every server thread (statements and
  the background work they cause), natively, at full speed.

Instruction counts do not see I/O waits, locks, cache misses or the clock: a change
that shows in time only is not a code story (the report says which family moved).
Everything here is checked before a server starts: a missing tool, a binary without the
loop's symbol, a provider whose server is not a process on this host are bad input.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

from perfci.host import hostcpu
from perfci.model.flavor import FLAVORS
from perfci.model.result import ConfigValue
from perfci.providers.capabilities import KnownOptions
from perfci.providers.local import SANDBOX_SERVERS_ENV, LocalServer, sandboxed_servers
from perfci.providers.provider import ServerProvider
from perfci.run.profiler import ControlledPerf
from perfci.util.errors import BadInput, InfraFailure

Measure = Literal["time", "work"]
WorkMethod = Literal["callgrind", "pmu"]
MEASURES = ("time", "work")
WORK_METHODS = ("auto", "callgrind", "pmu")

# The function each flavor runs once per client command: collection is on inside it
# (the statement's parse, optimise, execute and reply), off while a connection waits.
# MariaDB 10.5+: do_command(THD*, bool); MySQL 5.7/8.0, Percona Server, MariaDB < 10.5:
# do_command(THD*). The exact signature is taken from the binary's symbols.
STATEMENT_LOOP = {flavor: "do_command" for flavor in FLAVORS}
# What the server needs under valgrind, on both sides alike (recorded with the run's
# config): no io_uring/libaio (valgrind does not emulate them); a buffer pool whose reserved
# maximum fits valgrind's address space (MariaDB 10.11+ reserves 8 TiB); and no spinning
# on a busy latch: valgrind runs one thread at a time, so a statement spinning on a latch
# a page cleaner holds counts instructions until the scheduler switches, as many as the
# timing gives (pair sd of update-index 13 % with spinning, benchmarks/results/work); and no
# TLS: MariaDB 11.4 generates an RSA key for its own certificate at startup, which under
# valgrind did not finish in 180 s (with ssl=0 the server is up in 12 s), and a TLS session
# would count encryption inside the statement loop (sysbench connects without TLS anyway).
# MySQL 8.0's user threads also spin waiting for the redo log writer: a counted update's
# burst pairs spread 75 % with it, 0.48 % without (benchmarks/results/work/2026-11-28-log-spin-trial).
VALGRIND_CONFIG: dict[str, ConfigValue] = {"innodb_use_native_aio": 0, "innodb_sync_spin_loops": 0,
                                           "innodb_spin_wait_delay": 0, "innodb_log_spin_cpu_pct_hwm": 0,
                                           "innodb_log_wait_for_flush_spin_hwm": 0, "ssl": 0}
BUFFER_POOL_MAX = "innodb_buffer_pool_size_max"
VALGRIND_OPTIONS_ENV = "PERFCI_VALGRIND_OPTIONS"  # more valgrind options for a trial (--fair-sched=yes)
VGDB_TIMEOUT_S = 120.0
# A counted burst's time cap is the phase's times this: callgrind runs a server 22-125x
# slower (the statement loop instrumented, every thread serialised)
SLOWDOWN_CAP = 150
# Counted bursts are sized by time, not by the phase's transactions: a first pair of
# PROBE_TRANSACTIONS measures how long one takes under the counter, the rest run what
# takes ~BURST_S (at least MIN_TRANSACTIONS, at most the phase's own burst). A and B run
# the same seeded transactions in every pair, so a burst's work need not be large to
# pair well: instructions per transaction of two sides' bursts differ by ~0.1 % where
# their times differ by several %.
PROBE_TRANSACTIONS = 10
BURST_S = 1.0
MIN_TRANSACTIONS = 5  # a compressed table's write transaction takes ~1 s under callgrind (40-80 M instructions)


def counted_burst_size(probe: int, probe_seconds: float, limit: int) -> int:
    """Transactions per counted burst after a probe of `probe` took `probe_seconds`."""
    per_transaction = max(probe_seconds, 1e-3) / probe
    return min(limit, max(MIN_TRANSACTIONS, round(BURST_S / per_transaction)))


@dataclass(frozen=True)
class WorkSetup:
    """How one side's server counts its work: the method, the command its binary is
    started under, the config it needs, and a line for the report."""
    method: WorkMethod
    launcher: list[str] = field(default_factory=list)
    config: dict[str, ConfigValue] = field(default_factory=dict)
    collected: str = ""  # callgrind: the function collection is limited to
    options: list[str] = field(default_factory=list)  # callgrind: valgrind options of PERFCI_VALGRIND_OPTIONS

    def describe(self) -> str:
        if self.method == "callgrind":
            return (f"instructions counted by callgrind inside {self.collected}"
                    + (f" (valgrind {' '.join(self.options)})" if self.options else ""))
        return "user instructions of the server process counted by the PMU (perf stat -e instructions:u)"


def tool_missing(method: WorkMethod) -> str | None:
    """Why this method cannot count here (None: it can)."""
    if sandboxed_servers() is not None and os.geteuid() != 0:
        # vgdb must enter the sandbox (providers/sandbox.entering_argv); perf stat on another uid's process needs
        # privileges a runner user should not have
        return (f"the servers run sandboxed ({SANDBOX_SERVERS_ENV}) and perfci is not root: a runner user cannot "
                "count a sandboxed server's work")
    if method == "callgrind":
        missing = [t for t in ("valgrind", "vgdb") if shutil.which(t) is None]
        return (f"{' and '.join(missing)} not found: counting work with callgrind needs valgrind "
                "(Debian: apt-get install valgrind)") if missing else None
    if shutil.which("perf") is None:
        return "perf not found: counting work with the PMU needs perf (Debian: apt-get install linux-perf)"
    return pmu_missing()


def pmu_missing() -> str | None:
    """Why this host has no hardware instruction counter (None: it has one)."""
    if not hostcpu.has_instruction_counter():
        return ("this host has no hardware instruction counter (no PMU: a VM without a virtual PMU); "
                "count with callgrind (--work-counter callgrind)")
    return None


def choose_method(asked: str) -> WorkMethod:
    """`auto`: the PMU where the host has one (native speed), else callgrind."""
    if asked == "auto":
        return "pmu" if tool_missing("pmu") is None else "callgrind"
    assert asked in ("callgrind", "pmu"), asked
    return asked  # type: ignore[return-value]


def loop_symbol(binary: Path, flavor: str) -> str:
    """The demangled signature of the flavor's statement loop in the binary's symbols
    (dynamic first: release binaries keep them; then the full table of a build)."""
    name = STATEMENT_LOOP.get(flavor)
    if name is None:
        raise BadInput(f"{binary}: flavor {flavor!r} has no known statement loop to count work in "
                       f"(known: {', '.join(sorted(STATEMENT_LOOP))})")
    if shutil.which("nm") is None:
        raise BadInput("nm not found: the statement loop's symbol cannot be checked (Debian: apt-get install binutils)")
    pattern = re.compile(rf"^\S*\s+[TtWw]\s+({re.escape(name)}\(.*\))$")
    for flags in (["-D", "-C"], ["-C"]):
        done = subprocess.run(["nm", *flags, str(binary)], capture_output=True, text=True, errors="replace",
                              timeout=120)
        for line in done.stdout.splitlines():
            if m := pattern.match(line.strip()):
                return m.group(1)
    raise BadInput(f"{binary}: no symbol {name}(...) (the {flavor} statement loop) in its symbol tables: "
                   "callgrind cannot limit counting to statements; use a binary that keeps its dynamic "
                   "symbols (release builds do) or --measure time")


def server_config(known: KnownOptions | frozenset[str] | set[str] | None,
                  buffer_pool: ConfigValue | None) -> dict[str, ConfigValue]:
    """The options a server needs under valgrind, as far as it has them."""
    config = {k: v for k, v in VALGRIND_CONFIG.items() if known is None or k in known}
    if known is not None and BUFFER_POOL_MAX in known:
        config[BUFFER_POOL_MAX] = buffer_pool if buffer_pool is not None else "128M"
    return config


def valgrind_options() -> list[str]:
    """PERFCI_VALGRIND_OPTIONS: more options for valgrind (e.g. --fair-sched=yes), recorded
    with the run's work note; anything but --NAME[=VALUE] words is bad input."""
    extra = os.environ.get(VALGRIND_OPTIONS_ENV, "").split()
    if bad := [o for o in extra if not re.fullmatch(r"--[a-z][a-z0-9-]*(=\S+)?", o)]:
        raise BadInput(f"${VALGRIND_OPTIONS_ENV}: {bad[0]!r}: valgrind options are --NAME or --NAME=VALUE words")
    return extra


def setup(provider: ServerProvider, asked: str, buffer_pool: ConfigValue | None, out_dir: Path) -> WorkSetup:
    """Check and decide how `provider`'s server counts work, before it starts."""
    binary = getattr(provider, "binary", None)
    if provider.kind not in ("local", "tarball", "maven", "build") or not isinstance(binary, Path):
        raise BadInput(f"--measure work: a {provider.kind} server is not a process perfci starts on this host; "
                       "work is counted on local, maven:, tarball: and build: servers")
    method = choose_method(asked)
    if why := tool_missing(method):
        raise BadInput(f"--measure work: {why}")
    if method == "pmu":
        return WorkSetup("pmu")
    symbol = loop_symbol(binary, provider.identity.flavor)
    out_dir.mkdir(parents=True, exist_ok=True)
    extra = valgrind_options()
    launcher = ["valgrind", "--tool=callgrind", "--vgdb=yes", f"--toggle-collect={symbol}",
                f"--callgrind-out-file={out_dir}/callgrind.out.%p", "--dump-line=no", "--compress-strings=no", *extra]
    return WorkSetup("callgrind", launcher, server_config(provider.known_options(), buffer_pool), symbol, extra)


# ---------------------------------------------------------------- counting a burst


class WorkCounter(Protocol):
    def start(self) -> None:
        """Before the burst: the count starts at 0."""

    def stop(self) -> int:
        """After the burst: the instructions counted since start()."""

    def functions(self) -> FunctionCounts | None:
        """The last burst's instructions per function (None: this counter sees no functions)."""


def summary_of(dump: str) -> int:
    """A callgrind dump's total: its `summary:` line (the first event, Ir)."""
    for line in dump.splitlines():
        if line.startswith("summary:"):
            return int(line.split()[1])
    raise ValueError("no summary: line")


COST_LINE_STARTS = "0123456789+-*"


@dataclass(frozen=True)
class FunctionCounts:
    """A counted burst's instructions per function: its own code (`own`, callgrind's self
    cost) and with everything it called (`inclusive`), the view that follows a change
    down its call path."""
    own: dict[str, int]
    inclusive: dict[str, int]
    calls: dict[tuple[str, str], int] = field(default_factory=dict)  # (caller, callee) -> the calls' inclusive cost


def function_costs(dump: str) -> FunctionCounts:
    """A callgrind dump's instructions per function. Own: the cost lines of each `fn=`
    block, less those after a `calls=` line (the inclusive cost of a call it makes).
    Inclusive: own plus those calls' costs, a function's calls of itself left out (their
    cost is already its own or its callees'; mutual recursion still counts twice), for the
    functions with counted code of their own. Calls: each caller-callee edge's inclusive
    cost (what a call graph, and a flame graph estimated from it, is made of). Names
    may be compressed (`fn=(12) name` once, `(12)` after it; a `cfn=` line defines them too)."""
    names: dict[str, str] = {}
    own: dict[str, int] = {}
    calls: dict[str, int] = {}
    edges: dict[tuple[str, str], int] = {}
    positions = 1
    current: str | None = None
    callee: str | None = None
    call_cost_next = False
    for line in dump.splitlines():
        if not line:
            continue
        if line[0] in COST_LINE_STARTS:
            fields = line.split()
            if current is None or len(fields) <= positions:
                call_cost_next = False
                continue
            cost = int(fields[positions])
            if call_cost_next:
                call_cost_next = False
                if callee != current and callee is not None:
                    calls[current] = calls.get(current, 0) + cost
                    edges[(current, callee)] = edges.get((current, callee), 0) + cost
            else:
                own[current] = own.get(current, 0) + cost
        elif line.startswith("fn="):
            current = _function_name(line[3:], names)
        elif line.startswith("cfn="):
            callee = _function_name(line[4:], names)
        elif line.startswith("calls="):
            call_cost_next = True
        elif line.startswith("positions:"):
            positions = len(line.split()) - 1
    # the functions that ran counted code themselves: the statement loop and below (its
    # callers, the connection thread's frames, hold its calls only and would head every path)
    inclusive = {name: cost + calls.get(name, 0) for name, cost in own.items()}
    return FunctionCounts(own, inclusive, edges)


def _function_name(spec: str, names: dict[str, str]) -> str:
    if not spec.startswith("("):
        return spec
    ident, _, name = spec.partition(")")
    if name.strip():
        names[ident] = name.strip()
    return names.get(ident, spec)


class CallgrindCounter:
    """Zero and dump a running callgrind's counters around a burst (vgdb); the dump's
    total is the burst's count, its function blocks say where it went."""

    def __init__(self, pid: int, out_dir: Path, vgdb: Callable[[str], tuple[list[str], int]] | None = None):
        self.pid, self.out_dir = pid, out_dir
        # how vgdb reaches the valgrind, and the pid its dumps are named by (in a sandbox's
        # process namespace, another than the host's)
        self.vgdb = vgdb or (lambda command: (["vgdb", f"--pid={pid}", command], pid))
        self.last_functions: FunctionCounts | None = None

    def functions(self) -> FunctionCounts | None:
        return self.last_functions

    def _monitor(self, command: str) -> None:
        try:
            done = subprocess.run(self.vgdb(command)[0], capture_output=True, text=True, timeout=VGDB_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise InfraFailure(f"vgdb {command} on pid {self.pid} did not answer within {VGDB_TIMEOUT_S:.0f} s") from None
        if done.returncode != 0:
            raise InfraFailure(f"vgdb {command} on pid {self.pid} failed (exit {done.returncode}): "
                               f"{(done.stderr or done.stdout).strip()[-300:]}")

    def _dumps(self) -> list[Path]:
        return list(self.out_dir.glob(f"callgrind.out.{self.vgdb('dump')[1]}.*"))

    def start(self) -> None:
        for old in self._dumps():
            old.unlink(missing_ok=True)
        self._monitor("zero")

    def stop(self) -> int:
        self._monitor("dump")
        dumps = self._dumps()
        if not dumps:
            raise InfraFailure(f"callgrind on pid {self.pid} wrote no dump into {self.out_dir}")
        newest = max(dumps, key=lambda p: int(p.name.rsplit(".", 1)[1]) if p.name.rsplit(".", 1)[1].isdigit() else 0)
        try:
            text = newest.read_text(errors="replace")
            self.last_functions = function_costs(text)
            return summary_of(text)
        except ValueError as exc:
            raise InfraFailure(f"callgrind dump {newest}: {exc}") from None
        finally:
            for dump in dumps:
                dump.unlink(missing_ok=True)


PMU_EVENT = "instructions:u"


def parse_perf_stat(text: str, event: str = PMU_EVENT) -> int:
    """`perf stat -x,` output -> the count of `event` (CSV: value, unit, event, run time,
    share of the run counted, metric, metric unit; a hybrid CPU's event is named
    `cpu_core/instructions/u`)."""
    name = event.split(":")[0]
    for line in text.splitlines():
        fields = line.split(",")
        if len(fields) >= 3 and (fields[2] == event or fields[2].split("/")[1:2] == [name] or fields[2] == name):
            if fields[0].strip() in ("<not supported>", "<not counted>"):
                raise InfraFailure(f"perf stat: {event} {fields[0].strip()} on this host (no PMU)")
            return int(float(fields[0]))
    raise InfraFailure(f"perf stat printed no {event} count: {text.strip()[-300:]}")


class PmuCounter:
    """`perf stat -e instructions:u` over the burst (run/profiler.py's controlled perf)."""

    def __init__(self, pid: int, event: str = PMU_EVENT):
        self.pid, self.event = pid, event
        self.perf: ControlledPerf | None = None

    def start(self) -> None:
        self.perf = ControlledPerf(["stat", "-e", self.event, "-x", ","], self.pid)
        self.perf.start()

    def stop(self) -> int:
        assert self.perf is not None, "stop() before start()"
        return parse_perf_stat(self.perf.finish(), self.event)

    def functions(self) -> FunctionCounts | None:
        return None  # a count, no places (the explain pass's perf profile says where, sampled)


def counter_for(work: WorkSetup, server: ServerProvider) -> WorkCounter:
    """The counter of the server process now running (callgrind's dumps in its workdir)."""
    pid = server.pid
    if pid is None:
        raise InfraFailure("the server has no process id on this host: its work cannot be counted")
    if work.method != "callgrind":
        return PmuCounter(pid)
    vgdb = server.vgdb_argv if isinstance(server, LocalServer) else None
    return CallgrindCounter(pid, server.workdir / "callgrind", vgdb)
