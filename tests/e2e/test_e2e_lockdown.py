"""While a benchmark runs, nobody else on the host gets in: root answers only on a
socket in a directory private to perfci's user (no root over TCP, no anonymous user),
and the server reads or writes files only in its own scratch directory."""

from __future__ import annotations

import pytest

from conftest import assert_locked_down, listening, measuring, write_tiny


@pytest.mark.parametrize("server", ["local", "mysql-8.0.31"])
def test_no_root_over_tcp_and_files_only_in_the_scratch_dir(real_server_tools, fetched_servers, tmp_path, server):
    env, _ = fetched_servers
    scenario = write_tiny(tmp_path, time=60)
    work = tmp_path / "work"
    with measuring(scenario, tmp_path / "out", work, "--server", server, env=env) as (proc, err):
        port, socket = listening(work)
        where = assert_locked_down(port, socket)
        assert where.startswith(str(work)), where
        proc.terminate()
        proc.wait(timeout=60)
