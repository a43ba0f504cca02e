"""Per-case skips with reasons on the real local MariaDB: axis values the server does not
support, or ignores, skip their case and say why (apart from the smoke series' tests in
test_e2e_matrix.py: this run measures, so scripts/check runs it on a quiet host)."""

from __future__ import annotations

import json

from conftest import result_files, run_perfci

SKIPPING = """\
name: knobs
description: axis values a MariaDB 10.11 server does not support, or ignores
dataset: {rows: 2000}
server:
  config: {innodb_buffer_pool_size: 64M, innodb_flush_log_at_trx_commit: 0}
workload: {threads: 1, time: 2, report_interval: 1}
axes:
  - name: knob
    variants:
      sync_array: {config: {innodb_sync_array_size: 2}}
      io_50: {config: {innodb_io_capacity: 50}}
      io_400: {config: {innodb_io_capacity: 400}}
steps:
  - kind: prepare
  - kind: measure
    phase: only
    workload: oltp_read_only
profiles:
  smoke: {expected_minutes: 0.3}
  nightly: {expected_minutes: 0.3}
  seed: {expected_minutes: 0.3}
"""


def test_unsupported_or_ignored_axis_values_are_skipped_with_a_reason(real_server_tools, tmp_path):
    path = tmp_path / "knobs.yaml"
    path.write_text(SKIPPING)
    out = tmp_path / "out"
    proc = run_perfci("run", str(path), "--out", str(out), "--quiet")
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = {r["case"]: r for r in (json.loads(p.read_text()) for p in result_files(out))}
    assert results["io_400"]["status"] == "ok" and results["io_400"]["skip_reason"] is None
    assert results["sync_array"]["status"] == "skipped"
    assert results["sync_array"]["skip_reason"] == ("innodb_sync_array_size=2 is not supported: removed in MariaDB 10.6 "
                                                    "(new InnoDB locking) (server: mariadb-10.11.19)") \
        or results["sync_array"]["skip_reason"].startswith("innodb_sync_array_size=2 is not supported: ")
    assert results["io_50"]["status"] == "skipped"
    assert results["io_50"]["skip_reason"] == "innodb_io_capacity=50: the server ignored it (it reports '100')"
    assert results["io_50"]["phases"] == {} and results["sync_array"]["steps"] == []
    summary = next(out.glob("knobs-smoke-io_50-*.md")).read_text()
    assert "**Skipped:** innodb_io_capacity=50: the server ignored it" in summary
    matrix = (out / "knobs-smoke-matrix.md").read_text()
    assert "| `sync_array` | skipped | innodb_sync_array_size=2 is not supported" in matrix
