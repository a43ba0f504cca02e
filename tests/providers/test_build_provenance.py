"""A build: server's result says what was built and how (scripts/build-server's
perfci-build.json), and its reproduce command builds the same commit from the same
repository."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from types import SimpleNamespace

import pytest

from perfci.providers.basedirs import build_provenance, build_record
from perfci.run.plan import reproduce_command
from perfci.util.errors import InfraFailure

SHA = "0123456789abcdef0123456789abcdef01234567"


def install(tmp_path: Path, **record) -> Path:
    basedir = tmp_path / f"mariadb-{SHA}-0123456789ab"
    basedir.mkdir()
    (basedir / "perfci-build.json").write_text(json.dumps({
        "schema": "perfci.build/1", "flavor": "mariadb", "ref": "main", "commit": SHA,
        "repo": "/srv/mariadb repo", "fork": True, "build_seconds": 2400, "cores": 2,
        "compiler": "c++ (Debian 12.2.0-14) 12.2.0", "cmake_flags": ["-DCMAKE_BUILD_TYPE=RelWithDebInfo"],
        "ccache_hits": 0, "ccache_misses": 1200, **record}))
    return basedir


def plan_of(commit: str, build: dict | None, spec: str) -> SimpleNamespace:
    """What reproduce_command reads of a plan: its case, spec, and the provider's describe()
    (a local provider of a build: spec adds the commit and the build record to it)."""
    described = {"provider": "build", "binary": "/x/bin/mariadbd", "commit": commit,
                 **({"build": build} if build else {})}
    resolved = SimpleNamespace(name="microbench", profile="smoke", case="default")
    return SimpleNamespace(provider=SimpleNamespace(describe=lambda: described), server_spec=spec,
                           resolved=resolved, requested=[], work=None)


def test_a_build_records_how_it_was_built_and_reproduces_from_its_fork(tmp_path):
    plan = plan_of(SHA, build_record(install(tmp_path)), "build:mariadb@main")
    commit, build = build_provenance(plan.provider.describe())
    assert commit == SHA and build is not None
    assert build.fork and build.compiler.startswith("c++") and build.cmake_flags == ["-DCMAKE_BUILD_TYPE=RelWithDebInfo"]
    command = reproduce_command(plan)  # type: ignore[arg-type]
    assert shlex.split(command) == ["PERFCI_BUILD_REPO=/srv/mariadb repo", "perfci", "run", "microbench",
                                    "--profile", "smoke", "--server", f"build:mariadb@{SHA}"]


def test_a_build_of_upstream_reproduces_without_a_repository():
    upstream = {"ref": "main", "repo": "https://github.com/MariaDB/server.git", "fork": False}
    command = reproduce_command(plan_of(SHA, upstream, "build:mariadb@main"))  # type: ignore[arg-type]
    assert command == f"perfci run microbench --profile smoke --server build:mariadb@{SHA}"


def test_an_install_without_a_record_has_none_and_a_broken_one_is_named(tmp_path):
    assert build_record(tmp_path) is None  # built before build-server wrote one
    (tmp_path / "perfci-build.json").write_text("{not json")
    with pytest.raises(InfraFailure, match=r"perfci-build.json: not a build record of scripts/build-server"):
        build_record(tmp_path)
    (tmp_path / "perfci-build.json").write_text(json.dumps({"schema": "perfci.build/9"}))
    with pytest.raises(InfraFailure, match=r"schema 'perfci.build/9'.*remove the install"):
        build_record(tmp_path)
    assert build_provenance({"provider": "local", "binary": "/usr/sbin/mariadbd"}) == (None, None)


def test_a_build_spec_outside_a_project_uses_the_running_perfcis_build_script(tmp_path, monkeypatch):
    """A server repository's PR check runs perfci from beside the checkout, outside any
    perfci project: build: specs take the perfci checkout's scripts/build-server; a
    project's own (a team may keep one) wins."""
    from perfci.providers.basedirs import _build_server_script
    from perfci.providers.spec import parse_spec
    repo_root = Path(__file__).resolve().parents[2]
    monkeypatch.delenv("PERFCI_ROOT", raising=False)
    monkeypatch.chdir(tmp_path)
    spec = parse_spec(f"build:mariadb@{SHA}")
    assert _build_server_script(spec) == repo_root / "scripts" / "build-server"
    project = tmp_path / "project"
    (project / "scripts").mkdir(parents=True)
    (project / "servers.yaml").write_text("servers: []\n")
    (project / "scripts" / "build-server").write_text("#!/bin/sh\n")
    monkeypatch.chdir(project)
    assert _build_server_script(spec) == project / "scripts" / "build-server"


def test_build_server_clones_each_flavors_upstream_as_perfci_names_it():
    """One list of upstreams (model/flavor.UPSTREAMS): scripts/build-server's `case`
    clones the same repositories the dashboard links commits to."""
    import re

    from perfci.model.flavor import FLAVORS, UPSTREAMS

    from conftest import REPO
    script = (REPO / "scripts" / "build-server").read_text()
    cloned = dict(re.findall(r"^\s*(\w+)\)\s+repo=(https://\S+?)\.git ;;", script, re.MULTILINE))
    assert cloned == UPSTREAMS and set(UPSTREAMS) == set(FLAVORS)
