"""A real, short sweep: two pinned MySQL releases (the older the base) on a tiny
fixed-work scenario of two microbenchmarks, one case each (an axis whose variants name
the phase they run; one a Lua test of the scenario's own): interleaved A/Bs, table,
heatmap and a resumed rerun that measures nothing again."""

from __future__ import annotations

import json

import jsonschema
import pytest

from conftest import REPO, run_perfci, write_tiny

pytestmark = [pytest.mark.e2e, pytest.mark.alone]  # a sweep measures on a quiet host only (no --allow-busy)

TWO_PHASES = """\
  - kind: prepare
  - kind: measure
    phase: write
    workload: oltp_write_only
  - kind: measure
    phase: scan
    workload: scan_all
"""
SCAN = """lua:
  scan_all: |
    require("oltp_common")
    function prepare_statements() end
    function event() con:query("SELECT COUNT(*) FROM sbtest1 WHERE LENGTH(c) < 0") end
axes:
  - name: bench
    variants:
      write: {phases: [write]}
      scan: {phases: [scan]}
"""


def test_a_sweep_of_two_releases_gives_b_over_base_per_case_and_resumes(fetched_servers, tmp_path):
    env, _ = fetched_servers
    scenario = write_tiny(tmp_path, name="tiny-sweep", steps=TWO_PHASES, time=60, transactions=800, burst=100)
    scenario.write_text(scenario.read_text() + SCAN)
    out = tmp_path / "sweep"
    # one instance pair per case: the sweep's table, not the A/B's power, is under test here (CI time)
    args = ["sweep", str(scenario), "--between", "mysql-8.0.15", "mysql-8.0.31", "--instances", "1", "--out", str(out),
            "-q"]
    proc = run_perfci(*args, env=env, timeout=900)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr[-3000:]
    data = json.loads((out / "sweep-tiny-sweep-smoke.json").read_text())
    assert data["schema"] == "perfci.sweep/1" and data["servers"] == ["mysql-8.0.15", "mysql-8.0.31"]
    assert [(c["case"], c["server"]) for c in data["cells"]] == [("write", "mysql-8.0.31"), ("scan", "mysql-8.0.31")]
    for cell, phase in zip(data["cells"], ("write", "scan")):
        assert cell["status"] == "measured", cell["reason"]
        assert cell["base_version"].startswith("8.0.15") and cell["version"].startswith("8.0.31")
        assert f"{phase}.tps" in cell["ratios"]
        assert all(k.startswith(f"{phase}.") for k in cell["ratios"])  # each case ran its own microbenchmark only
        for r in cell["ratios"].values():
            assert r["low"] <= r["ratio"] <= r["high"] and r["verdict"]
        assert cell["sizing"].startswith("1 instance pair x 6 burst pairs")  # --instances; the bursts: PERFCI_AB_SIZE=profile
    text = (out / "sweep-tiny-sweep-smoke.md").read_text()
    assert "| write | `write` |" in text and "| scan | `scan` |" in text and "mysql-8.0.31 (8.0.31" in text
    assert (out / "sweep-tiny-sweep-smoke.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (proc.returncode == 1) == any(c["regressions"] for c in data["cells"])
    # not quiet: it says what it kept; --json alone on stdout is the sweep file, of its schema
    again = run_perfci(*args[:-1], "--json", env=env, timeout=300)
    assert again.returncode == proc.returncode and "kept from the earlier run (measured)" in again.stderr
    assert json.loads((out / "sweep-tiny-sweep-smoke.json").read_text())["cells"] == data["cells"]
    printed = json.loads(again.stdout)
    jsonschema.validate(printed, json.loads((REPO / "docs/schema/sweep.schema.json").read_text()))
    assert printed["cells"] == data["cells"] and "| write | `write` |" in again.stderr
