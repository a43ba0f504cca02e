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
