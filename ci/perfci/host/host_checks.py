"""`perfci doctor`: is this host ready to be a benchmark runner? Each check says what
it found and, where something is off, the command that fixes it.

A failing check (`fail`) means perfci would refuse or cannot run here (another server
running, no sysbench, hooks the runner cannot start, no room for an A/B's two buffer
pools); a warning (`warn`) means the numbers would be worse than they could be
(governor, THP, swap, no freezer, a tmpfs datadir). The same facts every result
records come from hostinfo.host_check(): one place decides what "quiet" means.
"""

from __future__ import annotations

import grp
import os
import pwd
import re
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from perfci.host import hostcpu, hostinfo, hostlock, policy
from perfci.host.freezer import V1_ROOT, V2_ROOT, cgroup_freezer
from perfci.providers.local import find_binary
from perfci.util.errors import BadInput

MIN_FREE_DISK = 20 * 2**30
HOOK_VARS = ("ACTIONS_RUNNER_HOOK_JOB_STARTED", "ACTIONS_RUNNER_HOOK_JOB_COMPLETED")
RUNNABLE_HOOKS = (".sh", ".ps1", ".js")  # what actions/runner starts (by extension)


@dataclass(frozen=True)
class Finding:
    check: str
    status: str  # ok | info | warn | fail
    found: str
    fix: str = ""


def governor(check: dict) -> Finding:
    governors = check.get("cpu_governors")
    if not governors:
        return Finding("cpu governor", "info", "no cpufreq governor exposed (a VM, or a fixed clock)")
    problem = policy.governor_problem(governors)
    if problem is None:
        return Finding("cpu governor", "ok", "performance")
    return Finding("cpu governor", "warn", problem,
                   "echo performance | tee /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor")


def huge_pages(check: dict) -> Finding:
    mode = check.get("transparent_hugepages")
    problem = policy.huge_pages_problem(mode)
    if problem:
        return Finding("transparent huge pages", "warn", problem,
                       "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled")
    return Finding("transparent huge pages", "ok", str(mode))


def swap(check: dict) -> Finding:
    used = int(check.get("swap_used_bytes") or 0)
    problem = policy.swap_problem(used)
    if problem:
        return Finding("swap", "warn", problem, "swapoff -a && swapon -a; sysctl vm.swappiness=1")
    return Finding("swap", "ok", f"{used >> 20} MiB in use, swappiness {check.get('swappiness')}")


def load(check: dict) -> Finding:
    problem = policy.load_problem(float(check.get("load_1m") or 0.0), os.cpu_count() or 1)
    if problem:
        return Finding("load", "warn", problem, "wait for what runs to end (ps -eo pcpu,comm --sort=-pcpu)")
    return Finding("load", "ok", f"load average {check.get('load_1m')}")


def other_servers(processes: list[str]) -> Finding:
    if processes:
        return Finding("other servers", "fail", f"{', '.join(processes)}: perfci refuses to measure beside them",
                       "stop them (systemctl disable --now mariadb / mysql), or measure with --allow-busy")
    return Finding("other servers", "ok", "no mysqld, mariadbd or sysbench running")


def freezer(v1_root: Path = V1_ROOT, v2_root: Path = V2_ROOT) -> Finding:
    found = cgroup_freezer(v1_root, v2_root)
    if found == "v1":
        return Finding("freezer", "ok", f"cgroup v1 freezer ({v1_root}): the A/B's idle side is frozen")
    if found == "v2":
        return Finding("freezer", "ok", f"cgroup v2 ({v2_root}, cgroup.freeze)")
    return Finding("freezer", "warn", "no writable cgroup freezer: the A/B's idle side is stopped with SIGSTOP "
                   "(its threads stop one by one)",
                   "mount the v1 freezer (mount -t cgroup -o freezer freezer /sys/fs/cgroup/freezer) "
                   "or run the runner with a delegated cgroup v2")


def cpu_time(proc: Path = Path("/proc")) -> Finding:
    if (proc / "self" / "schedstat").exists():
        return Finding("thread cpu time", "ok", "schedstat: statement CPU per transaction is measured")
    return Finding("thread cpu time", "warn", "no /proc/<pid>/schedstat: statement CPU per transaction is not "
                   "measured (tps alone is noisier)", "a kernel with CONFIG_SCHEDSTATS / CONFIG_SCHED_INFO")


def pmu(sys_root: Path = Path("/sys"), proc: Path = Path("/proc"),
        which: Callable[[str], str | None] = shutil.which) -> Finding:
    """How `perfci ab --measure work` would count instructions here: the PMU (perf stat,
    native speed) where the CPU offers an instructions event, else callgrind."""
    paranoid = _read(proc / "sys" / "kernel" / "perf_event_paranoid")
    callgrind = "callgrind (valgrind)" if which("valgrind") and which("vgdb") else None
    if hostcpu.has_instruction_counter(sys_root):
        return Finding("pmu", "ok", f"hardware instruction counter present (perf_event_paranoid {paranoid or 'unknown'}): "
                       "--measure work counts with perf stat at native speed")
    found = "no hardware instruction counter (a VM without a virtual PMU): "
    if callgrind:
        return Finding("pmu", "info", found + f"--measure work counts with {callgrind}, several times slower per burst")
    return Finding("pmu", "warn", found + "and no valgrind: --measure work cannot count here",
                   "apt-get install valgrind (callgrind counts anywhere)")


def disk(where: Path, min_free: int = MIN_FREE_DISK) -> Finding:
    fs = hostinfo.filesystem_of(where)
    try:
        free = shutil.disk_usage(where).free
    except OSError as exc:
        return Finding("disk", "fail", f"{where}: {exc.strerror}", "create it, or set TMPDIR / --workdir")
    found = f"{where}: {fs['type']} on {fs['device']}, {free / 2**30:.1f} GiB free"
    if fs["type"] in ("tmpfs", "ramfs", "overlay"):
        return Finding("disk", "warn", f"{found}: datadirs there do not measure the disk under test",
                       "point TMPDIR (or --workdir) at the NVMe under test")
    if free < min_free:
        return Finding("disk", "warn", f"{found}: below {min_free >> 30} GiB (datadirs, snapshots, builds)",
                       "free space, or point TMPDIR and PERFCI_CACHE at a larger disk")
    return Finding("disk", "ok", found)


def memory(available: int | None, buffer_pools: list[int], what: str) -> Finding:
    if available is None:
        return Finding("memory", "info", "MemAvailable unknown")
    if not buffer_pools:
        return Finding("memory", "info", f"{available / 2**30:.1f} GiB available (name a scenario to check it "
                       "against two servers' buffer pools)")
    need = hostinfo.servers_memory_need([max(buffer_pools)] * 2)  # an interleaved A/B runs two servers at once
    found = f"{available / 2**30:.1f} GiB available; {what}'s A/B needs ~{need / 2**30:.1f} GiB for two servers"
    if need > available:
        return Finding("memory", "fail", found, "a smaller profile, or a host with more memory (or `perfci ab "
                       "--mode rounds`, one server at a time)")
    return Finding("memory", "ok", found)


def tools(which: Callable[[str], str | None] = shutil.which) -> list[Finding]:
    found = []
    sysbench = which("sysbench")
    found.append(Finding("sysbench", "ok", sysbench) if sysbench else
                 Finding("sysbench", "fail", "not on PATH", "apt-get install sysbench (scripts/install-deps)"))
    try:
        server: str | None = str(find_binary(None))  # what `--server local` would run
    except BadInput:
        server = None
    found.append(Finding("local server", "ok", server) if server else
                 Finding("local server", "warn", "no mariadbd or mysqld: only servers.yaml's fetched or built "
                         "servers and images", "apt-get install mariadb-server (scripts/install-deps)"))
    mvn = which("mvn")
    found.append(Finding("maven", "ok" if mvn else "info", mvn or "not on PATH: maven: servers cannot be fetched",
                         "" if mvn else "apt-get install maven"))
    return found


def hooks(runner_dir: Path | None, runner_uid: int | None = None) -> Finding:
    """The job hooks as actions/runner starts them: named in RUNNER_DIR/.env, present,
    with an extension it starts, parsing under `bash -e`, and not editable by the
    runner's user (a job could otherwise rewrite the hook that judges the next job)."""
    if runner_dir is None:
        return Finding("runner hooks", "info", "not checked (pass --runner-dir, the actions-runner directory)")
    env_file = runner_dir / ".env"
    named = {}
    for line in (_read(env_file) or "").splitlines():
        key, _, value = line.partition("=")
        if key.strip() in HOOK_VARS:
            named[key.strip()] = value.strip()
    fix = f"scripts/runner-bootstrap {runner_dir} (then restart the runner service)"
    missing = [v for v in HOOK_VARS if v not in named]
    if missing:
        return Finding("runner hooks", "fail", f"{env_file}: {', '.join(missing)} not set: no fork guard, no clean-up",
                       fix)
    owner = runner_uid if runner_uid is not None else runner_dir.stat().st_uid
    for var, value in named.items():
        path = Path(value)
        if not path.is_file():
            return Finding("runner hooks", "fail", f"{var}={value}: no such file", fix)
        if path.suffix not in RUNNABLE_HOOKS:
            return Finding("runner hooks", "fail", f"{var}={value}: actions/runner starts only "
                           f"{', '.join(RUNNABLE_HOOKS)} hooks: every job would fail at 'Set up runner'", fix)
        if path.suffix == ".sh":
            parsed = subprocess.run(["bash", "--noprofile", "--norc", "-e", "-o", "pipefail", "-n", str(path)],
                                    capture_output=True, text=True)
            if parsed.returncode != 0:
                return Finding("runner hooks", "fail", f"{value} does not parse under bash -e: "
                               f"{parsed.stderr.strip().splitlines()[0] if parsed.stderr.strip() else ''}", fix)
        for part in (path, path.parent, *job_started_parts(path)):
            problem = not_root_only(part, owner)
            if problem:
                return Finding("runner hooks", "fail", f"{problem}: a job could change what judges or cleans up "
                               "after the next one", fix)
    problem = not_root_only(env_file, owner)
    if problem:
        return Finding("runner hooks", "fail", f"{problem}: a job could rename the hooks away at the runner's next "
                       "start", fix)
    return Finding("runner hooks", "ok", f"{', '.join(named.values())} (named in {env_file}; the hooks, their "
                   "directory, interpreter and .env root's and not writable by others)")


def hook_token(runner_dir: Path | None) -> Finding:
    """The hook's token (PERFCI_HOOK_TOKEN_FILE in the runner's .env): the hook runs as the
    runner's user, so every job can read it too; worth nothing beyond read access."""
    if runner_dir is None:
        return Finding("hook token", "info", "not checked (pass --runner-dir)")
    named = dict(line.split("=", 1) for line in (_read(runner_dir / ".env") or "").splitlines() if "=" in line)
    path = named.get("PERFCI_HOOK_TOKEN_FILE", "").strip()
    if not path:
        return Finding("hook token", "warn", "no PERFCI_HOOK_TOKEN_FILE in the runner's .env: a fork's approval "
                       "cannot be checked (who applied the label), so fork PRs never run here",
                       "a fine-grained token with Metadata: read and Pull requests: read on this repository only, "
                       "in a root-owned file named by PERFCI_HOOK_TOKEN_FILE in the runner's .env")
    problem = not_root_only(Path(path), runner_dir.stat().st_uid)
    if problem:
        return Finding("hook token", "fail", f"{problem}: a job could swap the token the hook uses",
                       f"chown root:root {path}; chmod 0644 {path}")
    return Finding("hook token", "info", f"{path}: every job on this runner can read it (the hook runs as the "
                   "runner's user): it must grant nothing beyond reading pull requests and metadata of this "
                   "repository")


def docker_access(runner_dir: Path | None, group_of: Callable[[str], grp.struct_group] = grp.getgrnam) -> Finding:
    """Whether the runner's user (its directory's owner) may use the Docker engine: the
    docker group's members are root on the host in practice (a container mounting / as
    root), so every job would be."""
    if runner_dir is None:
        return Finding("runner docker access", "info", "not checked (pass --runner-dir)")
    uid = runner_dir.stat().st_uid
    try:
        user = pwd.getpwuid(uid)
    except KeyError:
        return Finding("runner docker access", "info", f"uid {uid} has no account entry")
    try:
        docker = group_of("docker")
    except KeyError:
        return Finding("runner docker access", "ok", "no docker group on this host")
    if user.pw_name in docker.gr_mem or user.pw_gid == docker.gr_gid:
        return Finding("runner docker access", "warn",
                       f"{user.pw_name} (the runner's user) is in the docker group: every job it runs is root on "
                       "this host in practice", "only where every job is trusted (no fork PRs) or the VM is "
                       "rebuilt after each job; else gpasswd -d " + user.pw_name + " docker and no image specs")
    return Finding("runner docker access", "ok", f"{user.pw_name} is not in the docker group")


def not_root_only(path: Path, runner_uid: int) -> str | None:
    """Why `path` is not a file only root may change (None: it is): a symlink, owned by
    the runner's user (or anyone but root), or writable by group or others."""
    try:
        info = path.lstat()
    except OSError as exc:
        return f"{path}: {exc.strerror}"
    if stat.S_ISLNK(info.st_mode):
        return f"{path} is a symlink"
    info = path.stat()
    if info.st_uid != 0 or (runner_uid != 0 and info.st_uid == runner_uid):
        return f"{path} is owned by uid {info.st_uid}, not root"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"{path} is writable by group or others"
    return None


def job_started_parts(hook: Path) -> list[Path]:
    """What the job-started hook starts: the Python hook beside it and the interpreter
    it names (PYTHON=..., absolute: PATH at job start is the runner user's)."""
    if hook.name != "job-started.sh":
        return []
    text = _read(hook) or ""
    found = re.search(r"^PYTHON=(\S+)$", text, re.MULTILINE)
    if not (found and found.group(1).startswith("/")):
        return [hook.parent / "job-started.py", Path("python3 (from PATH: the runner user's .path decides)")]
    return [hook.parent / "job-started.py", Path(os.path.realpath(found.group(1)))]


def lock() -> Finding:
    path = hostlock.lock_path()
    if os.access(path.parent, os.W_OK) and (not path.exists() or os.access(path, os.W_OK)):
        return Finding("host lock", "ok", str(path))
    return Finding("host lock", "fail", f"{path}: not writable: runs cannot take the one-benchmark-per-host lock",
                   "set PERFCI_LOCK_FILE to a path every runner user can write")


def diagnose(runner_dir: Path | None = None, buffer_pools: list[int] | None = None, what: str = "",
             workdir: Path | None = None) -> list[Finding]:
    check = hostinfo.host_check()
    return [
        other_servers(hostlock.bench_processes()),
        *tools(),
        governor(check), huge_pages(check), swap(check), load(check),
        freezer(), cpu_time(), pmu(),
        disk(workdir or Path(tempfile.gettempdir())),
        memory(hostinfo.meminfo_bytes("MemAvailable"), buffer_pools or [], what),
        hooks(runner_dir),
        hook_token(runner_dir),
        docker_access(runner_dir),
        lock(),
    ]


def as_dicts(findings: list[Finding]) -> list[dict[str, str]]:
    return [asdict(f) for f in findings]


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None
