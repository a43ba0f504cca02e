"""run/profiler.py: what the explain pass needs to profile, said when it is missing,
and a real test record where perf and inferno are installed."""

from __future__ import annotations

import pytest

from perfci.run import profiler


def test_without_perf_or_inferno_the_reason_names_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CARGO_HOME", str(tmp_path / "cargo"))
    assert profiler.why_no_profiles() == "perf is not installed (Debian: apt-get install linux-perf)"
    (tmp_path / "perf").write_text("#!/bin/sh\n")
    (tmp_path / "perf").chmod(0o755)
    assert "cargo install inferno --version 0.12.8 --locked" in (profiler.why_no_profiles() or "")
    works, found = profiler.record_check()
    assert not works and "inferno is not installed" in found


@pytest.mark.e2e
def test_perf_records_a_busy_process_here_and_inferno_folds_it():
    """What `perfci doctor` tries: perf attaches to a running process over its control
    FIFO, samples it with cpu-clock, and collapse-perf folds the stacks."""
    if profiler.why_no_profiles():
        pytest.skip(f"{profiler.why_no_profiles()} (scripts/install-deps installs both)")
    works, found = profiler.record_check()
    assert works, found
    assert found.startswith("perf recorded ") and "stacks of a busy shell" in found
