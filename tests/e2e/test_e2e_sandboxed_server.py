"""A server built from a pull request runs in the sandbox (PERFCI_SANDBOX_SERVERS,
providers/local.py): as the sandbox account, no network of the host's, its own process
namespace, nothing writable but its own files; perfci and sysbench reach it on its socket,
the freezer and callgrind's vgdb reach it across the uid."""

from __future__ import annotations

import json
import socket

import pytest

from conftest import COUNTED_STEPS, SANDBOX_ACCOUNT, require_valgrind, run_perfci, write_tiny
from small_server_tree import escaping_basedir, sleepers

pytestmark = [pytest.mark.e2e]


def test_a_sandboxed_servers_escapes_fail_and_its_counted_run_is_whole(real_server_tools, shared_dir, tmp_path):
    """A built server whose mariadb-install-db (the build's own) tries to write the runner
    user's git config, a trusted cache and ~/.cargo/bin, to reach a listener on the host's
    loopback and to leave a renamed `setsid` sleeper. `perfci run --measure work` with
    PERFCI_SANDBOX_SERVERS: the run is whole (its phases counted through vgdb entering the
    sandbox, sysbench on the socket), every write failed, the listener heard nothing, no
    sleeper is left, and what the server wrote is the account's. (The server binary's own
    escapes, at each of its starts: the act test of the server-code check. Removed once:
    run as this user, the three files were written and the listener was reached.)"""
    require_valgrind()
    home, listener = tmp_path / "runner-home", socket.create_server(("127.0.0.1", 0))
    trusted = home / ".cache" / "perfci" / "builds"
    trusted.mkdir(parents=True)
    listener.setblocking(False)
    basedir = escaping_basedir(shared_dir, home, trusted, listener.getsockname()[1])
    scenario = write_tiny(tmp_path, steps=COUNTED_STEPS, time=60, transactions=2400, burst=400)
    out, area = tmp_path / "out", shared_dir / "servers"
    proc = run_perfci("run", str(scenario), "--server", f"local:{basedir}", "--measure", "work", "--work-counter",
                      "callgrind", "--out", str(out), "--no-snapshot", "--keep-workdir",
                      env={"PERFCI_ALLOW_BUSY": "1", "PERFCI_SANDBOX_USER": SANDBOX_ACCOUNT,
                           "PERFCI_SANDBOX_SERVERS": str(area)})
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    [path] = out.glob("*.json")
    result = json.loads(path.read_text())
    assert all(result["phases"][p]["metrics"]["instructions_per_txn"] > 0 for p in ("reads", "again")), result
    assert sorted(p.name for p in home.rglob("*")) == [".cache", "builds", "perfci"], "a write got out"
    with pytest.raises(BlockingIOError):
        listener.accept()
    assert not sleepers()
    [workdir] = area.iterdir()  # kept: the server's own files, under the directory named
    uid = int(SANDBOX_ACCOUNT.split(":")[0])
    assert (workdir / "data").stat().st_uid == uid and (workdir / "log" / "error.log").stat().st_uid == uid
    said = (workdir / "initialize.log").read_text()
    # (its writes "done" went to the sandbox's throwaway /tmp: the host's files are checked above)
    assert "escape: network: failed" in said and "escape: sleeper:" in said, said[:2000]
