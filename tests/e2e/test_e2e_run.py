"""End to end on real components: one benchmark per host, the host lock held by a real
run (the shared smoke run of rebuild-after-delete is read in test_e2e_smoke_run.py)."""

from __future__ import annotations

import re
import signal
import time

import pytest

from conftest import measuring, run_perfci, server_processes, write_tiny

pytestmark = [pytest.mark.e2e, pytest.mark.alone]


def test_two_runs_on_one_host_the_second_refuses_naming_the_first(real_server_tools, tmp_path):
    """One benchmark per host: while a real run measures, a second `perfci run` refuses
    within seconds, naming the first; the first is then interrupted and cleans up."""
    scenario = write_tiny(tmp_path, time=60)
    work = tmp_path / "work"
    with measuring(scenario, tmp_path / "out1", work) as (first, _):
        started = time.monotonic()
        second = run_perfci("run", str(scenario), "--out", str(tmp_path / "out2"), "--workdir", str(tmp_path / "w2"))
        elapsed = time.monotonic() - started
        first.send_signal(signal.SIGINT)
        first.wait(timeout=120)
    assert second.returncode == 3, second.stderr
    assert re.match(rf"error: this host is busy: the perfci host lock \S+ is held by pid {first.pid} "
                    rf"\(perfci run {re.escape(str(scenario))} ", second.stderr), second.stderr
    assert elapsed < 5, f"refusing took {elapsed:.1f} s"
    assert not (tmp_path / "out2").exists() and not (tmp_path / "w2").exists()
    assert server_processes(str(work)) == []
