"""A real bisect over git commits. The "server source" is a small git repository whose
build (scripts/build-server: cmake configure, build, install, cached per commit) is
the distribution's MariaDB run with the options the source names; of its three
commits the middle one makes every commit durable, the last only touches a README.
`perfci bisect --good build:… --bad build:… --metric fsyncs_per_txn` lists the commits
from the good to the bad ref, builds each step, A/Bs it on real servers and names the
middle commit. The metric is the deterministic one that commit changes (0 -> 1 fsync
per transaction): on this VM the same commit costs ~32 % of tps, but fsync latency
spreads tps burst pairs past the stability limit in about half of these short A/Bs
(judged "unstable", measured again), and this test is about the walk, not the judge."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest

from conftest import REPO, require_tools, run_perfci, write_tiny

pytestmark = pytest.mark.e2e

CMAKE_LISTS = """\
cmake_minimum_required(VERSION 3.16)
project(tiny_server NONE)
file(READ "${CMAKE_SOURCE_DIR}/server-options" OPTIONS)
string(STRIP "${OPTIONS}" OPTIONS)
configure_file(mariadbd.in mariadbd @ONLY)
install(PROGRAMS "${CMAKE_BINARY_DIR}/mariadbd" DESTINATION sbin)  # where its install-db looks
install(CODE "file(MAKE_DIRECTORY \\"\\${CMAKE_INSTALL_PREFIX}/bin\\")")
foreach(link IN LISTS LINKS)
  string(REPLACE "=" ";" pair "${link}")
  list(GET pair 0 name)
  list(GET pair 1 target)
  install(CODE "file(CREATE_LINK \\"${target}\\" \\"\\${CMAKE_INSTALL_PREFIX}/${name}\\" SYMBOLIC)")
endforeach()
"""


def server_source(root: Path) -> tuple[Path, list[str]]:
    """The repository and its three commits, oldest first (tag `good` on the first)."""
    real = Path(shutil.which("mariadbd", path="/usr/sbin:/usr/bin") or "/usr/sbin/mariadbd")
    links = [f"share={real.parent.parent / 'share'}", f"lib={real.parent.parent / 'lib'}"]
    for program in ("mariadb-install-db", "my_print_defaults", "resolveip", "mariadb"):
        found = shutil.which(program, path="/usr/bin:/usr/sbin")
        if found:
            links.append(f"bin/{program}={found}")
    repo = root / "server-src"
    repo.mkdir()
    (repo / "CMakeLists.txt").write_text(f'set(LINKS "{";".join(links)}")\n' + CMAKE_LISTS)
    (repo / "mariadbd.in").write_text(f'#!/bin/sh\nexec {real} "$@" @OPTIONS@\n')
    (repo / "server-options").write_text("\n")

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(repo), "-c", "user.name=dev", "-c", "user.email=dev@example.invalid",
                               *args], check=True, capture_output=True, text=True).stdout.strip()

    git("init", "-q", "-b", "main")
    git("add", ".")
    git("commit", "-q", "-m", "server: as released")
    git("tag", "good")
    (repo / "server-options").write_text("--innodb-flush-log-at-trx-commit=1\n")
    git("commit", "-q", "-am", "log: flush at every commit")
    (repo / "README").write_text("the tiny server\n")
    git("add", "README")
    git("commit", "-q", "-m", "docs: a README")
    return repo, git("log", "--reverse", "--format=%H").split()


def test_a_bisect_over_commits_builds_each_step_and_names_the_commit_that_did_it(real_server_tools, tmp_path):
    require_tools("git", "cmake", "ninja", hint="scripts/build-server's tools; scripts/install-deps installs them")
    repo, commits = server_source(tmp_path)
    scenario = write_tiny(tmp_path, name="tiny-commits", time=60, transactions=2400, burst=400)
    env = {"PERFCI_CACHE": str(tmp_path / "cache"), "PERFCI_BUILD_REPO": str(repo)}
    out = tmp_path / "bisect"
    proc = run_perfci("bisect", str(scenario), "--good", "build:mariadb@good", "--bad", "build:mariadb@main",
                      "--metric", "fsyncs_per_txn", "--out", str(out), "-q", "--json", str(tmp_path / "bisect.json"),
                      env=env, timeout=900)
    assert proc.returncode == 1, proc.stdout + proc.stderr[-3000:]
    good, culprit, last = commits
    record = json.loads((tmp_path / "bisect.json").read_text())
    jsonschema.validate(record, json.loads((REPO / "docs/schema/bisect.schema.json").read_text()))
    assert record["first_bad"] == f"build:mariadb@{culprit}" and record["last_good"] == f"build:mariadb@{good}"
    assert record["ends_apart"] and [s["verdict"] for s in record["steps"]] == ["regression", "regression"]
    assert f"**first slower in build:mariadb@{culprit} (B/A " in proc.stdout, proc.stdout
    assert f"build:mariadb@{good} was not**" in proc.stdout
    assert f"- `{culprit[:12]}` log: flush at every commit" in proc.stdout  # the line it walked, with subjects
    [log] = out.glob("bisect-tiny-commits-*.jsonl")
    steps = [json.loads(line) for line in log.read_text().splitlines()]
    # the ends, then the midpoint (the culprit) against the good end: two A/Bs, both regressions
    assert [(s["reference"], s["candidate"], s["verdict"]) for s in steps] == [
        (f"build:mariadb@{good}", f"build:mariadb@{last}", "regression"),
        (f"build:mariadb@{good}", f"build:mariadb@{culprit}", "regression")]
    assert all(s["low"] > 10 for s in steps), steps  # ~1 fsync per transaction against next to none
    # the A/B's bursts file names each side's commit and how it was built (from the fork)
    sides = json.loads(Path(steps[0]["bursts_file"]).read_text())["sides"]
    assert [s["commit"] for s in sides] == [good, last]
    assert all(s["build"]["fork"] and s["build"]["repo"] == str(repo) for s in sides), sides
    # each commit built once, into its own cached install dir, with the culprit's option in its server
    built = sorted(p for p in (tmp_path / "cache" / "builds").iterdir() if p.is_dir())
    assert sorted(p.name.split("-")[1] for p in built) == sorted(commits)
    assert sorted(p.name for p in (tmp_path / "cache" / "builds").glob("*.log")) == sorted(f"{p.name}.log" for p in built)
    wrapper = next(p for p in built if culprit in p.name) / "sbin" / "mariadbd"
    assert "--innodb-flush-log-at-trx-commit=1" in wrapper.read_text()
    # each build says what it built and how (a result's provenance), its log kept beside it
    for directory in built:
        info = json.loads((directory / "perfci-build.json").read_text())
        assert info["schema"] == "perfci.build/1" and info["commit"] in directory.name and info["flavor"] == "mariadb"
        assert "-DCMAKE_BUILD_TYPE=RelWithDebInfo" in info["cmake_flags"] and info["build_seconds"] >= 0
        assert "-DCMAKE_C_FLAGS=-fno-omit-frame-pointer" in info["cmake_flags"] and info["compiler"]
        assert "build-server: mariadb" in (directory / "build.log").read_text()
