"""`perfci ab --measure work` on the distribution's MariaDB under callgrind: instructions
per transaction counted per burst inside the server's statement loop, judged, and the
checks that refuse what cannot be counted before any server starts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import run_perfci, write_tiny

pytestmark = [pytest.mark.e2e]

# A trigger burning CPU in every updated row (BENCHMARK of MD5s): more code run by the
# same statements. A carries it with no iterations, so both sides run the same triggers.
BURN = ("CREATE TRIGGER perfci_burn BEFORE UPDATE ON sbtest1 FOR EACH ROW "
        "SET @perfci_burn = BENCHMARK({n}, MD5('perfci'))")


def require_valgrind() -> None:
    if shutil.which("valgrind") is None or shutil.which("vgdb") is None:
        pytest.skip("needs valgrind (apt-get install valgrind; scripts/install-deps does)")


@pytest.mark.alone
def test_a_counting_ab_flags_the_extra_code_a_trigger_runs_and_says_it_is_more_code(real_server_tools, tmp_path):
    """Two instance pairs of eight burst pairs (two warm-up) of write-only transactions
    under callgrind: B's trigger runs 20 MD5s per updated row, A's none; the instructions
    per transaction of B are flagged, every measured burst carries the count and no time
    metric, and the report says what was measured and how (the sides' counting config)."""
    require_valgrind()
    scenario = write_tiny(tmp_path, time=60, transactions=1600, burst=200)
    out = tmp_path / "out"
    proc = run_perfci("ab", str(scenario), "--measure", "work", "--work-counter", "callgrind", "--instances", "2",
                      "--bursts", "8", "--a-sql", BURN.format(n=0), "--b-sql", BURN.format(n=20),
                      "--out", str(out), "--json", str(tmp_path / "verdict.json"), "-q", timeout=900)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    verdict = json.loads((tmp_path / "verdict.json").read_text())
    assert verdict["regressions"] == ["only.instructions_per_txn"], verdict["regressions"]
    assert "Measured: **work**" in proc.stdout and "more code ran for the same statements" in proc.stdout
    [bursts_file] = out.glob("*.bursts.json")
    run = json.loads(bursts_file.read_text())
    assert run["measure"] == "work" and len(run["instances"]) == 2
    measured = [b for b in run["bursts"] if not b["warmup"]]
    assert len(measured) == 2 * 6 * 2
    assert all(b["metrics"]["instructions_per_txn"] > 10_000 and "tps" not in b["metrics"]
               and "statement_cpu_us_per_txn" not in b["metrics"] for b in measured)
    for side in run["sides"]:
        assert side["work"].startswith("instructions counted by callgrind inside do_command(THD*, bool)")
        assert "innodb_use_native_aio=0" in side["work"] and "innodb_buffer_pool_size_max=64M" in side["work"]
    a = [b["metrics"]["instructions_per_txn"] for b in measured if b["side"] == "a"]
    spread = (max(a) - min(a)) / min(a)
    assert spread < 0.02, a  # counted work: bursts of the same seeded work agree to ~0.1 %


def fake_server(directory: Path) -> Path:
    """A 'server' that says it is MySQL 8.0.31 but is a shell script: no symbols at all."""
    binary = directory / "bin" / "mysqld"
    binary.parent.mkdir(parents=True)
    binary.write_text("#!/bin/sh\necho 'mysqld  Ver 8.0.31 for Linux on x86_64 (MySQL Community Server - GPL)'\n")
    binary.chmod(0o755)
    return directory


def test_what_cannot_be_counted_is_refused_in_one_line_before_any_server_starts(real_server_tools, tmp_path):
    """A binary without the statement loop's symbol, no valgrind on PATH, a server that
    is not a process on this host: exit 2, one line each, nothing started."""
    require_valgrind()
    scenario = write_tiny(tmp_path, time=60, transactions=1600, burst=200)
    basedir = fake_server(tmp_path / "fake")
    for args, env, said in [
        (["--a", f"local:{basedir}", "--b", f"local:{basedir}"], {},
         "no symbol do_command(...) (the mysql statement loop)"),
        ([], {"PATH": str(tmp_path / "empty")}, "--measure work: valgrind and vgdb not found"),
        (["--a", "dsn:mysql://bench@127.0.0.1:1/sbtest", "--b", "dsn:mysql://bench@127.0.0.1:1/sbtest"], {},
         "--measure work: a dsn server is not a process perfci starts on this host"),
    ]:
        proc = run_perfci("ab", str(scenario), "--measure", "work", "--work-counter", "callgrind", *args,
                          "--out", str(tmp_path / "out"), env={"PERFCI_ALLOW_BUSY": "1", **env})
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        assert said in proc.stderr and proc.stderr.strip().count("\n") == 0, proc.stderr
        assert "start server" not in proc.stderr
