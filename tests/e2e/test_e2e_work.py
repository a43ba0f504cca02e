"""`perfci ab --measure work` on the distribution's MariaDB under callgrind: instructions
per transaction counted per burst inside the server's statement loop, judged, and the
checks that refuse what cannot be counted before any server starts."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import run_perfci, write_tiny

pytestmark = [pytest.mark.e2e]

def require_valgrind() -> None:
    if shutil.which("valgrind") is None or shutil.which("vgdb") is None:
        pytest.skip("needs valgrind (apt-get install valgrind; scripts/install-deps does)")


def fake_server(directory: Path) -> Path:
    """A 'server' that says it is MySQL 8.0.31 but is a shell script: no symbols at all."""
    binary = directory / "bin" / "mysqld"
    binary.parent.mkdir(parents=True)
    binary.write_text("#!/bin/sh\necho 'mysqld  Ver 8.0.31 for Linux on x86_64 (MySQL Community Server - GPL)'\n")
    binary.chmod(0o755)
    return directory


def test_what_cannot_be_counted_is_refused_in_one_line_before_any_server_starts(real_server_tools, tmp_path):
    """A binary without the statement loop's symbol, no valgrind on PATH: exit 2, one line
    each, nothing started."""
    require_valgrind()
    scenario = write_tiny(tmp_path, time=60, transactions=1600, burst=200)
    basedir = fake_server(tmp_path / "fake")
    for args, env, said in [
        (["--a", f"local:{basedir}", "--b", f"local:{basedir}"], {},
         "no symbol do_command(...) (the mysql statement loop)"),
        ([], {"PATH": str(tmp_path / "empty")}, "--measure work: valgrind and vgdb not found"),
    ]:
        proc = run_perfci("ab", str(scenario), "--measure", "work", "--work-counter", "callgrind", *args,
                          "--out", str(tmp_path / "out"), env={"PERFCI_ALLOW_BUSY": "1", **env})
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        assert said in proc.stderr and proc.stderr.strip().count("\n") == 0, proc.stderr
        assert "start server" not in proc.stderr
