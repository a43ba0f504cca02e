"""The snapshot cache on real files: refusals, replacement, LRU eviction by size."""

from __future__ import annotations

import json
from pathlib import Path

from perfci.model.flavor import ServerIdentity, Version
from perfci.model.scenario import cases, load_scenario
from perfci.run.snapshots import MANIFEST, SnapshotCache, data_prefix, shrink_redo, small_redo_restart, snapshot_spec, spec_key

SB = "sysbench 1.0.20"

SERVER = {"flavor": "mariadb", "full_version": "10.11.19-MariaDB"}


def _datadir(tmp_path: Path, name: str, size: int) -> Path:
    d = tmp_path / name / "data"
    (d / "sbtest").mkdir(parents=True, exist_ok=True)
    (d / "sbtest" / "sbtest1.ibd").write_bytes(b"x" * size)
    return d


def _save(cache, tmp_path, key, size=1000, clean=True, server=SERVER):
    return cache.save(key, {"k": key}, _datadir(tmp_path, f"src-{key}", size), server, clean,
                      {"sbtest1": {"rows": 10, "checksum": 1}}, [{"name": "prepare"}])


def test_saved_snapshot_is_restored_with_a_valid_manifest(tmp_path):
    cache = SnapshotCache(tmp_path / "cache")
    entry = _save(cache, tmp_path, "k1")
    manifest = json.loads((entry / MANIFEST).read_text())
    assert manifest["clean_shutdown"] and manifest["bytes"] == 1000 and manifest["tables"]["sbtest1"]["rows"] == 10
    found = cache.lookup("k1", SERVER["full_version"])
    assert found.datadir == entry / "data" and (found.datadir / "sbtest" / "sbtest1.ibd").stat().st_size == 1000
    assert found.note == "restored snapshot k1"


def test_unclean_shutdown_is_never_saved(tmp_path):
    cache = SnapshotCache(tmp_path / "cache")
    assert _save(cache, tmp_path, "k1", clean=False) is None
    assert cache.lookup("k1", SERVER["full_version"]).datadir is None


def test_tampered_manifest_and_other_version_are_refused(tmp_path):
    cache = SnapshotCache(tmp_path / "cache")
    entry = _save(cache, tmp_path, "k1")
    manifest = json.loads((entry / MANIFEST).read_text())
    manifest["tables"]["sbtest1"]["rows"] = 11  # edited without updating its checksum
    (entry / MANIFEST).write_text(json.dumps(manifest))
    found = cache.lookup("k1", SERVER["full_version"])
    assert found.datadir is None and "manifest checksum does not match" in found.note
    assert not entry.exists()  # discarded, so the next run prepares and saves again

    _save(cache, tmp_path, "k2")
    other = cache.lookup("k2", "10.11.20-MariaDB")
    assert other.datadir is None and "refused a snapshot of server 10.11.19-MariaDB (this is 10.11.20-MariaDB)" in other.note
    replaced = _save(cache, tmp_path, "k2", server={**SERVER, "full_version": "10.11.20-MariaDB"})
    assert cache.lookup("k2", "10.11.20-MariaDB").datadir == replaced / "data"


def test_eviction_removes_least_recently_used_beyond_the_size_limit(tmp_path):
    cache = SnapshotCache(tmp_path / "cache", max_bytes=2500)
    _save(cache, tmp_path, "old")
    _save(cache, tmp_path, "mid")
    cache.lookup("old", SERVER["full_version"])  # used: now the most recent
    _save(cache, tmp_path, "new")                # 3000 bytes > 2500: evict the LRU one
    assert sorted(p.name for p, _ in cache.entries()) == ["new", "old"]


def test_key_covers_dataset_steps_and_format_but_not_the_measured_config():
    scenario, path = load_scenario("change-buffer-matrix")
    all_cases = cases(scenario, "nightly", str(path))
    ident = ServerIdentity("mariadb", Version.parse("10.11.19"), "10.11.19-MariaDB")
    keys = {c.case: spec_key(snapshot_spec(c, ident, {"innodb_change_buffering": c.config["innodb_change_buffering"]}, SB))
            for c in all_cases}
    # the four buffering modes of a layout share one dataset; layouts differ
    assert keys["cx_full/change_buffering=all"] == keys["cx_full/change_buffering=none"]
    assert keys["cx_full/change_buffering=all"] != keys["x_full/change_buffering=all"]
    c = all_cases[0]
    assert spec_key(snapshot_spec(c, ident, {"innodb_page_size": "8k"}, SB)) != spec_key(snapshot_spec(c, ident, {}, SB))
    mysql = ServerIdentity("mysql", Version.parse("8.0.42"), "8.0.42")
    assert spec_key(snapshot_spec(c, mysql, {}, SB)) != spec_key(snapshot_spec(c, ident, {}, SB))
    # a jar's datadir (our accounts) never restores into a container (the image's accounts)
    assert spec_key(snapshot_spec(c, mysql, {}, SB, "tarball")) != spec_key(snapshot_spec(c, mysql, {}, SB, "docker"))
    assert [s.kind for s in data_prefix(c)] == ["prepare", "apply_layout"]


def test_a_forged_snapshot_is_refused_and_prepared_again(tmp_path):
    """Manifest rewritten with a valid self-checksum and one data file changed: the
    per-file digests catch it; the entry is discarded so the next run prepares."""
    from perfci.run.snapshots import _manifest_digest
    cache = SnapshotCache(tmp_path / "cache")
    entry = _save(cache, tmp_path, "k1")
    manifest = json.loads((entry / MANIFEST).read_text())
    manifest["tables"]["sbtest1"]["rows"] = 11
    manifest["manifest_sha256"] = _manifest_digest(manifest)  # a forger recomputes the unkeyed checksum
    (entry / MANIFEST).write_text(json.dumps(manifest))
    (entry / "data" / "sbtest" / "sbtest1.ibd").write_bytes(b"y" * 1000)  # same size, other content
    found = cache.lookup("k1", SERVER["full_version"])
    assert found.datadir is None
    assert found.note == ("refused a snapshot whose data files do not match its manifest "
                          "(sbtest/sbtest1.ibd changed; discarded): prepared")
    assert not entry.exists()

    entry = _save(cache, tmp_path, "k2")
    (entry / "data" / "sbtest" / "planted.ibd").write_bytes(b"z")
    assert "(sbtest/planted.ibd not in the manifest;" in cache.lookup("k2", SERVER["full_version"]).note
    entry = _save(cache, tmp_path, "k3")
    manifest = json.loads((entry / MANIFEST).read_text())
    del manifest["files"]  # a manifest of the old format: no digests, refused
    manifest["manifest_sha256"] = _manifest_digest(manifest)
    (entry / MANIFEST).write_text(json.dumps(manifest))
    assert "(no file digests;" in cache.lookup("k3", SERVER["full_version"]).note


def test_the_key_changes_with_the_code_that_writes_the_data(monkeypatch):
    from perfci.run import snapshots
    scenario, path = load_scenario("rebuild-after-delete")
    case = cases(scenario, "smoke", str(path))[0]
    ident = ServerIdentity("mariadb", Version.parse("10.11.19"), "10.11.19-MariaDB")
    before = spec_key(snapshot_spec(case, ident, {}, SB))
    monkeypatch.setattr(snapshots, "data_code_hash", lambda: "0123456789abcdef")
    assert spec_key(snapshot_spec(case, ident, {}, SB)) != before


def test_mariadb_gets_its_small_snapshot_redo_log_from_a_start_not_an_online_resize():
    maria = ServerIdentity("mariadb", Version.parse("10.11.19"), "10.11.19-MariaDB")
    options = {"innodb_log_file_size": "2G", "innodb_buffer_pool_size": "512M"}
    small = small_redo_restart(maria, options)
    assert small == {**options, "innodb_log_file_size": 16 << 20, "innodb_buffer_pool_load_at_startup": "OFF",
                     "innodb_buffer_pool_dump_at_shutdown": "OFF"}
    assert small_redo_restart(maria, {**options, "innodb_log_buffer_size": "64M"})["innodb_log_file_size"] == 64 << 20
    assert small_redo_restart(maria, {"innodb_log_file_size": "16M"}) is None        # small already
    assert small_redo_restart(maria, {})["innodb_log_file_size"] == 16 << 20          # the 96M default
    old = ServerIdentity("mariadb", Version.parse("10.2.11"), "10.2.11-MariaDB")
    mysql = ServerIdentity("mysql", Version.parse("8.0.31"), "8.0.31")
    assert small_redo_restart(old, options) is None and small_redo_restart(mysql, options) is None
    assert shrink_redo(None, maria) is False  # never SET GLOBAL innodb_log_file_size (no connection used)
