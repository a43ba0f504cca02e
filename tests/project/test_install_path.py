"""`perfci` on PATH after scripts/install-deps (#57): scripts/link-perfci, as install-deps
starts it, links a venv's perfci where a new shell finds it, and says when that place is
not on PATH."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from conftest import REPO


def link(tmp_path: Path, bin_dir: Path, path: str) -> subprocess.CompletedProcess:
    venv = tmp_path / "venv" / "bin"
    venv.mkdir(parents=True, exist_ok=True)
    (venv / "perfci").write_text("#!/bin/sh\necho perfci from the venv\n")
    (venv / "perfci").chmod(0o755)
    return subprocess.run(["bash", str(REPO / "scripts" / "link-perfci"), str(venv / "perfci")], capture_output=True,
                          text=True, timeout=30, env={**os.environ, "PERFCI_BIN_DIR": str(bin_dir), "PATH": path})


def test_a_new_shell_finds_perfci_after_install_deps(tmp_path):
    bin_dir = tmp_path / "bin"
    done = link(tmp_path, bin_dir, f"{bin_dir}:/usr/bin:/bin")
    assert done.returncode == 0 and "is not on your PATH" not in done.stdout, done.stderr
    shell = subprocess.run(["bash", "-c", "perfci"], capture_output=True, text=True, timeout=30,
                           env={"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path)})
    assert shell.stdout == "perfci from the venv\n", shell.stderr
    again = link(tmp_path, bin_dir, f"{bin_dir}:/usr/bin:/bin")  # idempotent
    assert again.returncode == 0 and (bin_dir / "perfci").resolve() == tmp_path / "venv" / "bin" / "perfci"


def test_it_says_how_when_the_place_is_not_on_path_and_never_overwrites_a_file(tmp_path):
    bin_dir = tmp_path / "local-bin"
    done = link(tmp_path, bin_dir, "/usr/bin:/bin")
    assert done.returncode == 0 and f"{bin_dir} is not on your PATH: add it" in done.stdout
    (bin_dir / "perfci").unlink()
    (bin_dir / "perfci").write_text("theirs\n")
    kept = link(tmp_path, bin_dir, "/usr/bin:/bin")
    assert kept.returncode == 0 and "exists and is not a link: left alone" in kept.stderr
    assert (bin_dir / "perfci").read_text() == "theirs\n"


def bare_path(tmp_path: Path) -> str:
    """A PATH that has bash and the few tools install-deps itself uses, and none of what it
    installs: every package it checks for is missing."""
    bare = tmp_path / "bare"
    bare.mkdir()
    for tool in ("bash", "dirname", "id", "python3", "sed"):
        (bare / tool).symlink_to(subprocess.run(["bash", "-c", f"command -v {tool}"], capture_output=True,
                                                text=True).stdout.strip())
    return str(bare)


def test_install_deps_quickstart_installs_only_what_the_quickstart_needs(tmp_path):
    """`scripts/install-deps --quickstart` (#57: an install without Docker, Chromium, Rust or
    Go for the quickstart): run as a user starts it, with --dry-run on a host that has none
    of the tools, it would install the server, sysbench and the client only."""
    env = {"PATH": bare_path(tmp_path), "HOME": str(tmp_path), "PERFCI_DOCKER": "1"}

    def would(*args: str) -> set[str]:
        proc = subprocess.run(["bash", str(REPO / "scripts" / "install-deps"), *args, "--dry-run"],
                              capture_output=True, text=True, timeout=60, env=env)
        assert proc.returncode == 0, proc.stderr
        [line] = [x for x in proc.stdout.splitlines() if x.startswith("would install: ")]
        return set(line.removeprefix("would install: ").split())

    everything, quick = would(), would("--quickstart")
    assert {"sysbench", "mariadb-client"} <= quick
    assert quick <= {"sysbench", "mariadb-server", "mariadb-client", "python3-venv"}
    assert {"maven", "chromium", "valgrind", "linux-perf", "cmake", "docker.io"} <= everything
    bad = subprocess.run(["bash", str(REPO / "scripts" / "install-deps"), "--bogus"], capture_output=True, text=True,
                         timeout=60, env=env)
    assert bad.returncode == 2 and "allowed: --quickstart, --dry-run" in bad.stderr
