"""`perfci run --measure work` on the distribution's MariaDB under callgrind: the case's
counted series, as the nightly keeps it (a module of its own: scripts/check runs the
end-to-end modules two at a time, a module to a worker)."""

from __future__ import annotations

import json

import pytest

from conftest import COUNTED_STEPS, require_valgrind, run_perfci, write_tiny

pytestmark = [pytest.mark.e2e]


def test_a_counted_run_is_the_cases_work_series_in_the_nightly(real_server_tools, tmp_path):
    """`perfci run --measure work`: the dataset loaded and the step between the phases run
    natively, each phase counted under callgrind (warm-up bursts, then counted ones, the same
    transactions counted the same in both phases); the result says how it counted and
    reproduces itself; the nightly keeps it as the case's `smoke.work` series, apart from
    the timed one, and judges nothing but its instructions."""
    require_valgrind()
    scenario = write_tiny(tmp_path, steps=COUNTED_STEPS, time=60, transactions=20000, burst=4000)  # counted: 400
    out, history = tmp_path / "out", tmp_path / "history"
    history.mkdir()
    proc = run_perfci("run", str(scenario), "--measure", "work", "--work-counter", "callgrind", "--out", str(out),
                      env={"PERFCI_ALLOW_BUSY": "1"})
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    [path] = out.glob("*.json")
    result = json.loads(path.read_text())
    assert result["measure"] == "work" and "callgrind inside do_command" in result["work"], result["work"]
    counted = {phase: result["phases"][phase]["counted_bursts"] for phase in ("reads", "again")}
    for phase, bursts in counted.items():
        assert len(bursts) == 3, bursts
        assert result["phases"][phase]["metrics"]["instructions_per_txn"] == pytest.approx(sum(bursts) / 3, rel=1e-3)
    # the same seeded transactions count the same, burst by burst (a seed's rows differ: a page
    # to decompress costs ~1 M instructions, so the bursts of one phase may differ by several %)
    for reads, again in zip(*counted.values()):
        assert again == pytest.approx(reads, rel=0.01), counted
    assert proc.stderr.count("done restart server under its work counter") == 2, proc.stderr[-3000:]
    assert proc.stderr.count("done restart server natively for analyze") == 1
    assert "--measure work --work-counter callgrind" in result["reproduce"]
    assert "innodb_use_native_aio" not in result["reproduce"]  # counting's config comes with --measure work
    assert "measured: **work**" in proc.stdout and "| instructions / txn |" in proc.stdout
    night = run_perfci("nightly", str(path), "--history", str(history), "--dry-run", "--out",
                       str(tmp_path / "issues"))
    assert night.returncode == 0, night.stdout + night.stderr
    [series] = history.glob("*/*/*/*/*.jsonl")
    assert series.relative_to(history).parts[2:] == ("tiny", "smoke.work", "default.jsonl"), series
    record = json.loads(series.read_text().splitlines()[0])
    assert record["metrics"]["reads.instructions_per_txn"] > 0
