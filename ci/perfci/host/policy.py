"""What "quiet" means for a benchmark host: one place, read by the check recorded in
every result before it runs (host/hostinfo.py host_check), `perfci doctor`, a run's
validity gate (run/validity.py) and an A/B's burst filter (judge/burst_verdicts.py)."""

from __future__ import annotations

# Other processes' CPU, in cores on average, beyond which a measurement is not trusted:
# over a run's phase (the run is invalid) and over one burst of an A/B (its pair is
# dropped). On a 2-core runner, a quarter of a core is 12.5 % of the machine.
BUSY_OTHER_CORES = 0.25
# Before a run: a 1-minute load average above this many per CPU says the host is not quiet.
QUIET_LOAD_PER_CPU = 0.5
# Swap in use beyond which a buffer pool may be measuring the disk.
SWAP_USED_LIMIT = 64 << 20
# A process using at least this much of one CPU before a run is named in the result
# (which processes were busy; not a limit).
NAMED_PROCESS_CPU_PCT = 10.0


def busy(other_cores: float | None) -> bool:
    return other_cores is not None and other_cores > BUSY_OTHER_CORES


def busy_problem(other_cores: float | None, what: str) -> str | None:
    if not busy(other_cores):
        return None
    return f"{what}: host busy: other processes used {other_cores:.2f} cores on average (limit {BUSY_OTHER_CORES})"


def governor_problem(governors: list[str] | None) -> str | None:
    if governors and governors != ["performance"]:
        return f"CPU frequency governor is {', '.join(governors)}, not performance: clock changes move the numbers"
    return None


def huge_pages_problem(mode: str | None) -> str | None:
    if mode == "always":
        return "transparent huge pages are 'always': compaction stalls show up as latency spikes"
    return None


def swap_problem(used_bytes: int) -> str | None:
    if used_bytes > SWAP_USED_LIMIT:
        return f"{used_bytes >> 20} MiB of swap in use: a swapped-out buffer pool measures the disk"
    return None


def load_problem(load_1m: float, cpus: int) -> str | None:
    if load_1m > QUIET_LOAD_PER_CPU * cpus:
        return f"load average {load_1m:.1f} on {cpus} CPUs before the run: the host is not quiet"
    return None
