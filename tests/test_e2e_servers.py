"""Servers by name, fetched for real: the Maven client gets the pinned jars from
Maven Central, perfci verifies and unpacks them once, and real runs go through
MySQL 8.0 and MariaDB 11.4 builds that no package on this host provides."""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import result_files, run_perfci, write_tiny

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def fetched(real_server_tools, tmp_path_factory):
    """One cache (and Maven repository) for the module: the fetches of a fresh host."""
    assert shutil.which("mvn"), "the Maven client is needed: apt-get install maven (scripts/install-deps does)"
    cache = tmp_path_factory.mktemp("server-cache")
    env = {"PERFCI_CACHE": str(cache)}
    proc = run_perfci("servers", "fetch", "mysql-8.0.31", "mysql-8.0.15", "mariadb-11.4.5", env=env, timeout=1800)
    assert proc.returncode == 0, proc.stderr
    return env, proc.stdout


def test_fetch_verifies_unpacks_and_identifies_each_server(fetched):
    env, out = fetched
    lines = dict(line.split(": ", 1) for line in out.strip().splitlines())
    assert lines["mysql-8.0.31"].startswith(f"mysql-8.0.31 in {env['PERFCI_CACHE']}/tarballs/38b8b41f7498fb3c-")
    assert lines["mysql-8.0.15"].startswith(f"mysql-8.0.15 in {env['PERFCI_CACHE']}/tarballs/a893e37643da168b-")
    assert lines["mariadb-11.4.5"].startswith(f"mariadb-11.4.5 in {env['PERFCI_CACHE']}/tarballs/5c6dcab86a79b6cd-")
    listing = run_perfci("servers", "list", env=env).stdout
    assert "not fetched" not in "".join(line for line in listing.splitlines() if "mysql-8.0.31" in line or
                                        "mariadb-11.4.5" in line)


@pytest.mark.parametrize("server_id, flavor, version", [
    ("mysql-8.0.31", "mysql", "8.0.31"),
    ("mysql-8.0.15", "mysql", "8.0.15"),
    ("mariadb-11.4.5", "mariadb", "11.4.5"),
])
def test_a_run_by_server_id_measures_that_server(fetched, tmp_path, server_id, flavor, version):
    env, _ = fetched
    scenario = write_tiny(tmp_path)
    proc = run_perfci("run", str(scenario), "--server", server_id, "--out", str(tmp_path / "out"), "--quiet",
                      env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(result_files(tmp_path / "out")[0].read_text())
    server = result["server"]
    assert (server["flavor"], server["version"], result["status"]) == (flavor, version, "ok")
    assert server["basedir"].startswith(env["PERFCI_CACHE"])
    assert result["phases"]["only"]["metrics"]["tps"] > 0
    # the reproduce command names the pinned spec, which works outside this checkout too
    assert "--server 'maven:" in result["reproduce"] and "#sha256=" in result["reproduce"]


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
