"""Freezing the idle side of an interleaved A/B, so that its background threads
(page cleaner, purge, log flush) take no CPU from the side being measured.

Preferred: the cgroup freezer (v1 `freezer.state`, v2 `cgroup.freeze`). It stops
every thread of the server at once and invisibly: no signal reaches the server,
its parent's waitpid sees no state change, and a thaw resumes exactly where it
stopped. A container is paused by its engine (`docker pause`, the same freezer).
Fallback where no freezer hierarchy is writable: SIGSTOP/SIGCONT to the process
(also stops every thread, but is visible to the parent and to ptrace; said in the
A/B report as the method used).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from perfci.util.errors import InfraFailure

V1_ROOT = Path("/sys/fs/cgroup/freezer")
V2_ROOT = Path("/sys/fs/cgroup")
SETTLE_TIMEOUT_S = 10.0


class Freezer(Protocol):
    method: str

    def freeze(self) -> None: ...
    def thaw(self) -> None: ...
    def release(self) -> None: ...


def _wait_for(path: Path, want: str, what: str) -> None:
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    while time.monotonic() < deadline:
        if want in path.read_text():
            return
        time.sleep(0.002)
    raise InfraFailure(f"{what}: {path} did not reach {want!r} within {SETTLE_TIMEOUT_S:g} s")


class CgroupFreezer:
    """A cgroup of our own holding the server; frozen and thawed through its control
    file, settled when its state file says so."""

    method = "cgroup freezer"
    control = state = frozen = thawed = frozen_state = thawed_state = ""

    def __init__(self, pid: int, root: Path):
        self.pid = pid
        self.root = root
        self.group = root / f"perfci-{uuid.uuid4().hex[:8]}"
        self.group.mkdir()
        (self.group / "cgroup.procs").write_text(str(pid))  # moves every thread of the process

    def freeze(self) -> None:
        (self.group / self.control).write_text(self.frozen)
        _wait_for(self.group / self.state, self.frozen_state, "freeze")

    def thaw(self) -> None:
        (self.group / self.control).write_text(self.thawed)
        _wait_for(self.group / self.state, self.thawed_state, "thaw")

    def release(self) -> None:
        """Thaw, move the process back to the root group and remove ours."""
        try:
            self.thaw()
            for pid in (self.group / "cgroup.procs").read_text().split():
                (self.root / "cgroup.procs").write_text(pid)
            self.group.rmdir()
        except OSError:
            pass  # the process is gone; an empty group is removed by the next release or reboot


class CgroupV1Freezer(CgroupFreezer):
    method = "cgroup v1 freezer"
    control = state = "freezer.state"
    frozen = frozen_state = "FROZEN"
    thawed = thawed_state = "THAWED"

    def __init__(self, pid: int, root: Path = V1_ROOT):
        super().__init__(pid, root)


class CgroupV2Freezer(CgroupFreezer):
    method = "cgroup v2 freezer"
    control, state = "cgroup.freeze", "cgroup.events"
    frozen, frozen_state = "1", "frozen 1"
    thawed, thawed_state = "0", "frozen 0"

    def __init__(self, pid: int, root: Path = V2_ROOT):
        super().__init__(pid, root)


class SignalFreezer:
    method = "SIGSTOP/SIGCONT"

    def __init__(self, pid: int, send: Callable[[int], None] | None = None):
        self.pid = pid
        # how a signal reaches the server (a sandboxed one's account is not ours to signal)
        self.send = send or (lambda sig: os.kill(pid, sig))

    def freeze(self) -> None:
        self.send(signal.SIGSTOP)
        self._settle(stopped=True)  # a signal is delivered asynchronously: measure only once it took

    def thaw(self) -> None:
        self.send(signal.SIGCONT)
        self._settle(stopped=False)

    def _settle(self, stopped: bool) -> None:
        deadline = time.monotonic() + SETTLE_TIMEOUT_S
        while time.monotonic() < deadline:
            try:
                state = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                return  # the process is gone
            if (state in "Tt") == stopped:
                return
            time.sleep(0.001)
        raise InfraFailure(f"{'SIGSTOP' if stopped else 'SIGCONT'} to pid {self.pid}: no effect within "
                           f"{SETTLE_TIMEOUT_S:g} s")

    def release(self) -> None:
        try:
            self.thaw()
        except ProcessLookupError:
            pass


class DockerPause:
    method = "docker pause"

    def __init__(self, container: str):
        self.container = container

    def _docker(self, verb: str) -> None:
        done = subprocess.run(["docker", verb, self.container], capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            raise InfraFailure(f"docker {verb} {self.container} failed: {done.stderr.strip()[-300:]}")

    def freeze(self) -> None:
        self._docker("pause")

    def thaw(self) -> None:
        self._docker("unpause")

    def release(self) -> None:
        subprocess.run(["docker", "unpause", self.container], capture_output=True, timeout=60)


class NoFreezer:
    """For a server that is not ours to stop (dsn:): both sides keep running."""

    method = "none (remote server: not frozen)"

    def freeze(self) -> None:
        pass

    def thaw(self) -> None:
        pass

    def release(self) -> None:
        pass


def freezer_for(pid: int | None, container: str | None = None, v1_root: Path = V1_ROOT,
                v2_root: Path = V2_ROOT, send: Callable[[int], None] | None = None) -> Freezer:
    """The best freezer for a running server: its engine's pause for a container,
    else a cgroup freezer (v1 where mounted, else v2 where writable), else signals
    (through `send` where the server's process is not this user's to signal)."""
    if container:
        return DockerPause(container)
    if pid is None:
        return NoFreezer()
    kind = cgroup_freezer(v1_root, v2_root)
    try:
        if kind == "v1":
            return CgroupV1Freezer(pid, v1_root)
        if kind == "v2":
            return CgroupV2Freezer(pid, v2_root)
    except OSError:
        pass
    return SignalFreezer(pid, send)


def cgroup_freezer(v1_root: Path = V1_ROOT, v2_root: Path = V2_ROOT) -> str | None:
    """Which cgroup freezer this host offers: "v1" where its hierarchy is mounted, else
    "v2" where the unified hierarchy is, else None (signals only)."""
    if (v1_root / "freezer.state").exists() or (v1_root / "cgroup.procs").exists():
        return "v1"
    if (v2_root / "cgroup.controllers").exists():
        return "v2"
    return None
