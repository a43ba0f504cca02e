"""Servers by name, fetched for real: the Maven client gets the pinned jars from
Maven Central, perfci verifies and unpacks them once, and every scenario's smoke
profile runs on MySQL 8.0.31 and MariaDB 11.4.5 (builds no package on this host
provides), and rebuild-after-delete on MySQL 8.0.15 (no innodb_redo_log_capacity)."""

from __future__ import annotations

import json
import threading

import pytest

from conftest import result_files, run_perfci

pytestmark = pytest.mark.e2e

SCENARIOS = ("rebuild-after-delete", "change-buffer-matrix", "row-format-compression", "compressed-read-only-scaling")
# server id -> (flavor, version, scenarios at smoke)
SERIES = {
    "mysql-8.0.31": ("mysql", "8.0.31", SCENARIOS),
    "mariadb-11.4.5": ("mariadb", "11.4.5", SCENARIOS),
    "mysql-8.0.15": ("mysql", "8.0.15", ("rebuild-after-delete",)),
}


def test_fetch_verifies_unpacks_and_identifies_each_server(fetched_servers):
    env, out = fetched_servers
    lines = dict(line.split(": ", 1) for line in out.strip().splitlines())
    assert lines["mysql-8.0.31"].startswith(f"mysql-8.0.31 in {env['PERFCI_CACHE']}/tarballs/38b8b41f7498fb3c-")
    assert lines["mysql-8.0.15"].startswith(f"mysql-8.0.15 in {env['PERFCI_CACHE']}/tarballs/a893e37643da168b-")
    assert lines["mariadb-11.4.5"].startswith(f"mariadb-11.4.5 in {env['PERFCI_CACHE']}/tarballs/5c6dcab86a79b6cd-")
    listing = run_perfci("servers", "list", env=env).stdout
    assert "not fetched" not in "".join(line for line in listing.splitlines() if "mysql-8.0.31" in line or
                                        "mariadb-11.4.5" in line)


@pytest.fixture(scope="module")
def smoke_everywhere(fetched_servers, tmp_path_factory):
    """{(server id, scenario): (exit code, stderr, results)}. The MySQL 8.0.31 series runs
    beside the MariaDB 11.4.5 + MySQL 8.0.15 one (--allow-busy, recorded): phases are
    time-boxed, so this halves the wall time, and no number is judged here."""
    env, _ = fetched_servers
    out_root = tmp_path_factory.mktemp("smoke-everywhere")
    runs: dict[tuple[str, str], tuple[int, str, list[dict]]] = {}

    def series(server_ids: tuple[str, ...]) -> None:
        for server_id in server_ids:
            for scenario in SERIES[server_id][2]:
                out = out_root / server_id / scenario
                proc = run_perfci("run", scenario, "--profile", "smoke", "--server", server_id, "--out", str(out),
                                  "--allow-busy", "--quiet", env=env, timeout=1200)
                results = [json.loads(p.read_text()) for p in result_files(out)]
                runs[(server_id, scenario)] = (proc.returncode, proc.stderr[-3000:], results)

    threads = [threading.Thread(target=series, args=(ids,))
               for ids in (("mysql-8.0.31",), ("mariadb-11.4.5", "mysql-8.0.15"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return runs


@pytest.mark.parametrize("server_id, scenario",
                         [(server_id, scenario) for server_id, (_, _, names) in SERIES.items() for scenario in names])
def test_every_scenario_runs_at_smoke_on_each_fetched_server(smoke_everywhere, fetched_servers, server_id, scenario):
    code, stderr, results = smoke_everywhere[(server_id, scenario)]
    assert code == 0, stderr
    assert results, "a result per case"
    flavor, version, _ = SERIES[server_id]
    for result in results:
        server = result["server"]
        assert (server["flavor"], server["version"]) == (flavor, version)
        assert server["basedir"].startswith(fetched_servers[0]["PERFCI_CACHE"])
        # the reproduce command names the pinned spec, which works outside this checkout too
        assert "--server 'maven:" in result["reproduce"] and "#sha256=" in result["reproduce"]
        if result["status"] == "ok":
            assert all(phase["metrics"]["tps"] > 0 for phase in result["phases"].values())
    if (server_id, scenario) == ("mariadb-11.4.5", "change-buffer-matrix"):
        assert {r["status"] for r in results} == {"skipped"}
        for r in results:
            assert r["skip_reason"] == (f"innodb_change_buffering={r['axes']['change_buffering']} is not supported: "
                                        "MariaDB 11.0 removed the change buffer (server: mariadb-11.4.5)")
    else:
        assert {r["status"] for r in results} == {"ok"}, [r.get("skip_reason") for r in results]


def test_mysql_8_0_31_buffers_changes_and_8_0_15_gets_the_redo_option_mapped(smoke_everywhere):
    _, _, matrix = smoke_everywhere[("mysql-8.0.31", "change-buffer-matrix")]
    merges = {r["case"]: sum(r["phases"]["write"]["metrics"][f"ibuf_merges_{kind}_per_s"]
                             for kind in ("insert", "delete_mark", "delete")) for r in matrix}
    assert len(merges) == 4 and all((v > 10) == k.endswith("=all") for k, v in merges.items()), merges
    _, _, (old,) = smoke_everywhere[("mysql-8.0.15", "rebuild-after-delete")]
    written = old["server"]["config"]["written"]
    assert "innodb_redo_log_capacity" not in written and written["innodb_log_file_size"] == 256 * 2**20
    mapped, = [n for n in old["notes"] if n["option"] == "innodb_redo_log_capacity"]
    assert (mapped["action"], mapped["to"]) == ("mapped", {"innodb_log_file_size": 256 * 2**20})


def test_a_jar_whose_sha256_does_not_match_is_removed_and_nothing_unpacked(tmp_path):
    """A real (small) artifact pinned with a wrong digest: Maven fetches it, perfci refuses it."""
    cache = tmp_path / "cache"
    spec = "maven:org.hamcrest:hamcrest-core:1.3/org#sha256=" + "0" * 64
    proc = run_perfci("run", "rebuild-after-delete", "--server", spec, "--out", str(tmp_path / "o"),
                      env={"PERFCI_CACHE": str(cache)}, timeout=600)
    assert proc.returncode == 2, proc.stderr
    line, = proc.stderr.strip().splitlines()
    assert line.startswith(f"error: --server '{spec}': sha256 mismatch: the jar is ")
    assert line.endswith("; removed, nothing unpacked")
    assert not list(cache.rglob("hamcrest-core-1.3.jar"))
    assert not (cache / "tarballs").exists() or not any((cache / "tarballs").iterdir())

