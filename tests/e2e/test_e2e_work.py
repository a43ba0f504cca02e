"""`perfci ab --measure work` on the distribution's MariaDB under callgrind: instructions
per transaction counted per burst inside the server's statement loop, judged, and the
checks that refuse what cannot be counted before any server starts."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from perfci.judge.burst_verdicts import TIME_METRICS
from perfci.model.ab_verdict import AbVerdict
from perfci.model.bursts import BURSTS_FILE

from conftest import COUNTED_STEPS, require_valgrind, run_perfci, write_tiny

pytestmark = [pytest.mark.e2e]

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




# not `alone`: it runs beside another end-to-end module (scripts/check), --allow-busy. A
# counted burst is never dropped for a busy host (the count does not see the host), and the
# verdict must not need a quiet one
def test_a_config_that_adds_code_to_every_statement_is_flagged_by_its_counted_work(real_server_tools, tmp_path):
    """performance_schema=ON on B instruments every statement. `--measure both`: the counting
    A/B finds more instructions per transaction on both phases, a regression (exit 1) of the
    family "more code"; the step between the phases ran natively and each side restarted
    under its counter; the timed A/B ran after it, natively, and its verdict is kept beside."""
    require_valgrind()
    scenario = write_tiny(tmp_path, steps=COUNTED_STEPS, time=60, transactions=2000, burst=400)
    out = tmp_path / "out"
    proc = run_perfci("ab", str(scenario), "--b-config", "performance_schema=ON", "--measure", "both",
                      "--work-counter", "callgrind", "--instances", "2", "--bursts", "4", "--explain", "auto",
                      "--out", str(out), "--json", str(tmp_path / "verdict.json"))
    assert proc.returncode == 1, proc.stdout + proc.stderr[-3000:]
    verdict = AbVerdict.model_validate(json.loads((tmp_path / "verdict.json").read_text()))
    assert verdict.family is not None and verdict.family.kind == "more-code", verdict.family
    assert set(verdict.family.phases) == {"reads", "again"}
    assert verdict.verdict_line.startswith("**Regression**: more code ran for the same statements")
    counted, timed = verdict.parts
    assert {"reads.instructions_per_txn", "again.instructions_per_txn"} <= set(counted.regressions), counted.regressions
    judged = {m.key for m in counted.metrics if m.judged}
    assert not {k for k in judged if k.split(".", 1)[1] in TIME_METRICS}, judged  # time says nothing under a counter
    # the timed part measured natively, after (whether it can judge depends on how quiet the
    # host was beside the other module: busy pairs are dropped, so its bursts are checked)
    timed_run = BURSTS_FILE.load(Path(timed.bursts_file))
    assert timed_run.measure == "time" and {b.phase for b in timed_run.bursts} == {"reads", "again"}
    assert all(b.metrics.get("tps", 0) > 0 and "instructions_per_txn" not in b.metrics for b in timed_run.bursts)
    assert Path(counted.bursts_file).parent == out / "work" and Path(timed.bursts_file).parent == out / "time"
    for side in "AB":  # in each instance pair of the counting A/B; the timed one ran the step in place
        assert proc.stderr.count(f"done restart server {side} natively for analyze") == 2
    assert "Measured: **work**" in proc.stdout and (out / "both.md").read_text().strip() == proc.stdout.strip()
    # the four lines first (report/opening.py): what, how sure, why (the family and the top function), reproduce
    what, sure, why, again = proc.stdout.splitlines()[2:6]
    assert what.startswith("- **What**: B is worse. ") and "instructions per transaction +" in what, what
    assert sure.startswith("- **How sure**: ") and why.startswith("- **Why**: more code ran") and "callgrind" in why
    assert again.startswith("- **Reproduce**: `perfci ab ") and "--b-config performance_schema=ON" in again
    # the Why from the bursts' own function counts: performance_schema's instrumentation did it
    # (the distribution's binary names few of its functions: psi_mutex_lock is one)
    assert verdict.why is not None and verdict.why.startswith("where the instructions went (callgrind)"), verdict.why
    listed = re.findall(r"^\| `([^`]+)` \|", verdict.why, re.MULTILINE)
    assert any("psi" in name.lower() or "pfs" in name.lower() for name in listed), listed
    assert "do\\_command" in proc.stdout  # where it counted, in the report's how-it-ran
    # the counted flame graphs, from the bursts' call graph: each side's and B against A, per phase
    flames = Path(counted.explain_dir or "")
    assert flames.name.endswith(".explain") and "Flame graphs of each side and B against A" in proc.stdout
    for phase in ("reads", "again"):
        diff = (flames / f"{phase}-diff.svg").read_text()
        assert diff.startswith("<?xml") and "instructions" in diff
        stacks = [line.rsplit(" ", 1) for line in (flames / f"{phase}-b.folded").read_text().splitlines()]
        total = sum(int(n) for _, n in stacks)
        under_loop = sum(int(n) for stack, n in stacks if "do_command" in stack)
        # most of it under the statement loop (clone;start_thread;…;do_command;…: the edges above
        # it are kept too); a function whose callers' edges were too thin to keep is a root of its own
        assert under_loop > 0.5 * total, (under_loop, total, stacks[:5])

