"""Shared fixtures. End-to-end tests use real components: a throwaway MariaDB
started by perfci itself on a free loopback port, and real sysbench."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
PERFCI = [sys.executable, "-m", "ci.cli"]

# A scenario small enough for failure-path tests (seconds, not minutes).
TINY_SCENARIO = """\
name: {name}
description: tiny scenario for tests
dataset:
  tables: 1
  rows: 2000
  row_format: COMPRESSED
  indexes: [{{name: idx_c, columns: [c]}}]
server:
  config: {{innodb_buffer_pool_size: 64M, innodb_flush_log_at_trx_commit: 0}}
workload: {{threads: 1, time: {time}, report_interval: 1}}
steps:
{steps}
profiles:
  smoke: {{expected_minutes: 0.2}}
  nightly: {{expected_minutes: 0.2}}
  seed: {{expected_minutes: 0.2}}
"""
TINY_STEPS = """\
  - kind: prepare
  - kind: apply_layout
  - kind: measure
    phase: only
    workload: oltp_write_only
"""


def pytest_configure(config):
    """One dataset snapshot cache for the whole session, never the user's: the first
    smoke run of a scenario saves its dataset, later runs restore it (and say so)."""
    if "PERFCI_SNAPSHOT_DIR" not in os.environ:
        import tempfile
        config._perfci_snapshots = tempfile.mkdtemp(prefix="perfci-test-snapshots-")
        os.environ["PERFCI_SNAPSHOT_DIR"] = config._perfci_snapshots


def pytest_unconfigure(config):
    created = getattr(config, "_perfci_snapshots", None)
    if created:  # hundreds of MB of datadirs: not left behind in /tmp
        shutil.rmtree(created, ignore_errors=True)
        os.environ.pop("PERFCI_SNAPSHOT_DIR", None)


def run_perfci(*args: str, env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([*PERFCI, *args], cwd=REPO, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def write_tiny(directory: Path, name: str = "tiny", steps: str = TINY_STEPS, time: int = 2) -> Path:
    path = directory / f"{name}.yaml"
    path.write_text(TINY_SCENARIO.format(name=name, steps=steps, time=time))
    return path


def server_processes(marker: str) -> list[str]:
    """Running server processes whose command line mentions `marker` (a workdir)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue  # the process ended while we looked
        if marker in args and ("mariadbd" in args or "mysqld" in args):
            found.append(args)
    return found


def result_files(out_dir: Path) -> list[Path]:
    return sorted(out_dir.glob("*.json")) if out_dir.exists() else []


@pytest.fixture(scope="session")
def real_server_tools():
    missing = [t for t in ("sysbench",) if not shutil.which(t)]
    if not (shutil.which("mariadbd", path=os.environ.get("PATH", "") + ":/usr/sbin") or shutil.which("mysqld")):
        missing.append("mariadbd")
    if missing:
        pytest.fail(f"end-to-end tests need {', '.join(missing)} (apt-get install mariadb-server sysbench; .ci/run does)")


@pytest.fixture(scope="session")
def smoke_result(real_server_tools, tmp_path_factory):
    """One real smoke run of rebuild-after-delete, shared by the end-to-end checks."""
    out = tmp_path_factory.mktemp("smoke-results")
    work = tmp_path_factory.mktemp("smoke-work")
    proc = run_perfci("run", "rebuild-after-delete", "--profile", "smoke", "--out", str(out), "--workdir", str(work))
    assert proc.returncode == 0, proc.stderr[-3000:]
    files = result_files(out)
    assert len(files) == 1, files
    return {"path": files[0], "result": json.loads(files[0].read_text()), "proc": proc, "workdir": work}
