"""The docker provider through a real Docker engine: the offline image
perfci-local/mysql:8.0.31 is built from the fetched MySQL 8.0.31 (no registry), a
smoke run goes through it on the host network, and no container or datadir is
left behind, whether the run ends, is interrupted or is killed."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import assert_locked_down, listening, measuring, result_files, run_perfci, write_tiny

pytestmark = pytest.mark.e2e

IMAGE = "perfci-local/mysql:8.0.31"


def perfci_containers() -> list[str]:
    done = subprocess.run(["docker", "ps", "--all", "--quiet", "--filter", "label=perfci=1"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@pytest.fixture(scope="module")
def local_image(fetched_servers):
    """The image, built for real from the session's fetched MySQL 8.0.31 (forced, so the
    build itself is exercised), then asked again: unchanged recipe, kept."""
    assert shutil.which("docker"), "the docker CLI is needed (scripts/install-deps installs docker.io)"
    engine = subprocess.run(["docker", "version", "--format", "{{.Server.Version}}"], capture_output=True, text=True)
    assert engine.returncode == 0, f"no Docker engine answers (scripts/start-docker-engine): {engine.stderr}"
    env, _ = fetched_servers
    built = run_perfci("servers", "build-images", IMAGE, "--force", env=env, timeout=900)
    assert built.returncode == 0, built.stderr
    assert built.stdout.startswith(f"{IMAGE}: built from mysql-8.0.31 (8.0.31, recipe ")
    again = run_perfci("servers", "build-images", IMAGE, env=env, timeout=300)
    assert again.returncode == 0 and again.stdout.startswith(f"{IMAGE}: up to date"), again.stdout + again.stderr
    return env


def test_smoke_run_through_docker_on_the_host_network_leaves_nothing(local_image, tmp_path):
    """The docker provider end to end on the tiny scenario (the shipped scenarios run on
    8.0.31 in the smoke series, from its tarball: the server is the same, the container is
    what this checks)."""
    work, out = tmp_path / "work", tmp_path / "out"
    work.mkdir()
    before = set(perfci_containers())
    proc = run_perfci("run", str(write_tiny(tmp_path)), "--profile", "smoke", "--server", f"docker:{IMAGE}",
                      "--out", str(out), "--workdir", str(work), env=local_image, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(result_files(out)[0].read_text())
    server = result["server"]
    assert (server["provider"], server["flavor"], server["version"]) == ("docker", "mysql", "8.0.31")
    assert (server["image"], server["network"], server["server_id"]) == (IMAGE, "host", "mysql-8.0.31-image")
    assert server["image_id"].startswith("sha256:") and server["image_digest"] is None  # built here, never pushed
    uid = os.getuid()
    assert server["container_user"] == ("999:999" if uid == 0 else f"{uid}:{os.getgid()}")  # never root
    effective = server["effective_config"]
    assert effective["bind_address"] == "127.0.0.1" and "mysqlx_port" not in effective  # X plugin off
    assert result["phases"]["only"]["metrics"]["tps"] > 0
    assert result["reproduce"].endswith(f"--server docker:{IMAGE}")
    assert set(perfci_containers()) <= before and list(work.iterdir()) == []


def test_interrupted_or_killed_runs_leave_no_container(local_image, tmp_path):
    scenario = write_tiny(tmp_path, time=60)
    # Ctrl-C: the run stops the container and removes it and the datadir itself
    work = tmp_path / "work"
    with measuring(scenario, tmp_path / "out", work, "--server", f"docker:{IMAGE}", env=local_image) as (proc, err):
        time.sleep(2)
        assert perfci_containers(), "the server container runs during the measured phase"
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=300)
    assert proc.returncode == 130, "".join(err)
    assert perfci_containers() == [] and list(work.iterdir()) == []
    # SIGKILL (a cancelled job): the container outlives its owner, the next run removes it
    # before it counts as "another server running"
    with measuring(scenario, tmp_path / "out2", tmp_path / "work2", "--server", f"docker:{IMAGE}",
                   env=local_image) as (proc, err):
        subprocess.run(["pkill", "-KILL", "-P", str(proc.pid)], check=False)  # its sysbench and docker CLI
        proc.kill()
        proc.wait(timeout=60)
    orphans = perfci_containers()
    assert len(orphans) == 1, orphans
    short = write_tiny(tmp_path, name="short", time=2)
    again = run_perfci("run", str(short), "--server", f"docker:{IMAGE}", "--out", str(tmp_path / "out3"),
                       "--quiet", env=local_image, timeout=600)
    assert again.returncode == 0, again.stderr[-2000:]
    assert perfci_containers() == []


def test_nobody_else_gets_in_root_only_on_the_private_socket(local_image, tmp_path):
    """Host network: the container's server listens on 127.0.0.1 like a local one; root
    is root@localhost only, reached through the 0700 run directory mounted into it."""
    scenario = write_tiny(tmp_path, time=60)
    work = tmp_path / "work"
    with measuring(scenario, tmp_path / "out", work, "--server", f"docker:{IMAGE}", env=local_image) as (proc, err):
        port, _ = listening(work)
        [container] = perfci_containers()
        mounts = subprocess.run(["docker", "inspect", "--format", "{{json .Mounts}}", container],
                                capture_output=True, text=True, check=True).stdout
        [run_dir] = [m["Source"] for m in json.loads(mounts) if m["Destination"] == "/run/perfci"]
        socket = Path(run_dir) / "mysqld.sock"
        assert socket.parent.stat().st_mode & 0o777 == 0o700
        assert assert_locked_down(port, str(socket)) == "/run/perfci/files/"
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=300)
    assert proc.returncode == 130, "".join(err)
    assert not socket.parent.exists() and perfci_containers() == []


def test_with_the_engine_stopped_it_is_one_line(local_image, tmp_path):
    proc = run_perfci("run", "rebuild-after-delete", "--server", f"docker:{IMAGE}", "--out", str(tmp_path / "o"),
                      env={**local_image, "DOCKER_HOST": f"unix://{tmp_path}/stopped-engine.sock"})
    assert proc.returncode == 3, proc.stderr
    line, = proc.stderr.strip().splitlines()
    assert line.startswith("error: docker: no Docker engine answers (") and "scripts/install-deps starts one" in line
    assert result_files(tmp_path / "o") == []


@pytest.mark.parametrize("image, server_id, version", [
    ("perfci-local/mariadb:11.4.5", "mariadb-11.4.5-image", "11.4.5"),
    ("perfci-local/mariadb:10.11", "mariadb-10.11-image", "10.11."),
])
def test_the_mariadb_images_initialise_with_install_db_and_run(local_image, tmp_path, image, server_id, version):
    built = run_perfci("servers", "build-images", image, env=local_image, timeout=900)
    assert built.returncode == 0, built.stderr
    scenario = write_tiny(tmp_path)
    proc = run_perfci("run", str(scenario), "--server", f"docker:{image}", "--out", str(tmp_path / "out"),
                      "--quiet", env=local_image, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(result_files(tmp_path / "out")[0].read_text())
    server = result["server"]
    assert (server["flavor"], server["server_id"], result["status"]) == ("mariadb", server_id, "ok")
    assert server["version"].startswith(version) and result["phases"]["only"]["metrics"]["tps"] > 0
    assert perfci_containers() == []


def test_an_image_runs_by_the_id_its_digest_pins_and_a_wrong_digest_is_refused(local_image, tmp_path):
    """A spec's @sha256 must match the local image (its id, for an image built here; a
    registry digest otherwise); every container then runs that id, not the tag."""
    image_id = subprocess.run(["docker", "image", "inspect", "--format", "{{.Id}}", IMAGE],
                              capture_output=True, text=True, check=True).stdout.strip()
    wrong = "sha256:" + "0" * 64
    proc = run_perfci("run", "rebuild-after-delete", "--profile", "smoke", "--server", f"docker:{IMAGE}@{wrong}",
                      "--out", str(tmp_path / "refused"), env=local_image, timeout=300)
    assert proc.returncode == 2 and f"the local image is {image_id}" in proc.stderr and "refused" in proc.stderr
    assert not (tmp_path / "refused").exists() or result_files(tmp_path / "refused") == []
    scenario = write_tiny(tmp_path, time=2)
    proc = run_perfci("run", str(scenario), "--server", f"docker:{IMAGE}@{image_id}", "--out", str(tmp_path / "out"),
                      env=local_image, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(result_files(tmp_path / "out")[0].read_text())
    assert result["server"]["image_id"] == image_id
