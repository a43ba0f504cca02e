"""--server spec grammar and the providers' bad-input paths: one clear line each."""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from perfci.providers import parse_spec
from perfci.providers.docker import cli_error, container_user, harness_options, image_family, run_args, stale_containers
from perfci.providers.local import LocalServer
from perfci.util.errors import BadInput

from conftest import REPO, result_files, run_perfci


def test_grammar_parses_every_scheme():
    assert parse_spec("local").scheme == "local"
    assert parse_spec("local:/opt/mysql").path == "/opt/mysql"
    d = parse_spec("docker:percona/percona-server:8.0.36@sha256:" + "a" * 64)
    assert (d.scheme, d.image, d.digest) == ("docker", "percona/percona-server:8.0.36@sha256:" + "a" * 64,
                                             "sha256:" + "a" * 64)
    assert parse_spec("docker:registry.example.com:5000/team/mysql:8.4").image.endswith("mysql:8.4")
    t = parse_spec("tarball:/srv/mysql-8.0.42-linux-glibc2.28-x86_64.tar.xz#sha256=" + "ab" * 32)
    assert t.path.endswith(".tar.xz") and t.digest == "ab" * 32
    b = parse_spec("build:mariadb@mariadb-10.11.9")
    assert (b.flavor, b.ref) == ("mariadb", "mariadb-10.11.9")
    ps = parse_spec("build:percona@Percona-Server-8.0.36-28")  # no Percona source reachable here: the spec only
    assert (ps.scheme, ps.flavor, ps.ref) == ("build", "percona", "Percona-Server-8.0.36-28")
    dsn = parse_spec("dsn:mysql://bench@db1.example.com:3307")
    assert (dsn.user, dsn.host, dsn.port) == ("bench", "db1.example.com", 3307)


@pytest.mark.parametrize("spec, message", [
    ("podman:mysql:8.0", "unknown scheme 'podman'; allowed: local, local:/path/to/basedir, docker:IMAGE:TAG"),
    ("docker:mysql", "docker: the image needs a tag (e.g. mysql:8.0.42)"),
    ("docker:mysql:8.0@sha256:abc", "docker: not an image reference"),
    ("docker:", "docker: needs a target"),
    ("docker:mysql:8.0.42#network=bridge", "docker: unknown option 'network=bridge'; allowed: #network=host, "
                                           "#network=published"),
    ("tarball:/tmp/server.zip#sha256=" + "0" * 64, "tarball: must name a .tar.gz, .tgz, .tar.xz or .tar file"),
    ("tarball:http://example.com/s.tar.gz#sha256=" + "0" * 64, "tarball: only https:// URLs"),
    ("tarball:https://example.com/s.tar.gz", "tarball: needs the archive's sha256, e.g. tarball:/srv/mysql.tar.gz#sha256="),
    ("tarball:/srv/s.tar.gz#sha256=abc", "tarball: needs the archive's sha256"),
    ("build:oracle@8.0", "build: expected build:FLAVOR@GIT_REF with FLAVOR one of mysql, percona, mariadb"),
    ("build:mysql@../../etc", "build: '../../etc' is not a git ref"),
    ("dsn:mysql://bench:secret@db:3306", "dsn: do not put a password in the spec"),
    ("dsn:mysql://db:3306", "dsn: needs a user and a host"),
    ("dsn:postgres://u@db:5432", "dsn: expected dsn:mysql://USER@HOST:PORT"),
])
def test_bad_specs_are_one_clear_line(spec, message):
    with pytest.raises(BadInput) as exc:
        parse_spec(spec)
    text = str(exc.value)
    assert message in text and text.startswith(f"--server {spec!r}: ") and "\n" not in text


def test_docker_run_shares_the_host_network_mounts_cnf_and_datadir_and_labels_the_owner():
    args = run_args("mysql:8.0.42", "perfci-x", 41000, Path("/nvme/w/data"), Path("/nvme/w/my.cnf"),
                    (1000, 1000), "host", owner_pid=4242, run_dir=Path("/tmp/perfci-run-x"))
    assert args[:2] == ["run", "--detach"]
    assert args[args.index("--network") + 1] == "host" and "--publish" not in args
    volumes = [args[i + 1] for i, a in enumerate(args) if a == "--volume"]
    assert volumes == ["/nvme/w/data:/var/lib/mysql", "/tmp/perfci-run-x:/run/perfci",
                       "/nvme/w/my.cnf:/etc/mysql/conf.d/zz-perfci.cnf:ro"]
    labels = [args[i + 1] for i, a in enumerate(args) if a == "--label"]
    assert labels == ["perfci=1", "perfci.owner-pid=4242"]
    assert args[args.index("--user") + 1] == "1000:1000"
    assert args[-1] == "mysql:8.0.42"
    # host network: the server itself binds loopback on the free port perfci picked
    assert harness_options("host", 41000) == {"bind_address": "127.0.0.1", "port": 41000, "skip_name_resolve": None,
                                              # root only on the socket, in the private run dir; files only there
                                              "socket": "/run/perfci/mysqld.sock",
                                              "secure_file_priv": "/run/perfci/files"}
    envs = [args[i + 1] for i, a in enumerate(args) if a == "--env"]
    assert envs == ["MYSQL_ALLOW_EMPTY_PASSWORD=1", "MYSQL_ROOT_HOST=localhost"]  # no root@'%'


def test_docker_published_mode_publishes_on_loopback_only():
    args = run_args("mariadb:11.4", "n", 41001, Path("/d"), Path("/c"), (999, 999), "published")
    assert args[args.index("--publish") + 1] == "127.0.0.1:41001:3306" and "--network" not in args
    assert "MARIADB_ALLOW_EMPTY_ROOT_PASSWORD=1" in args and "/c:/etc/mysql/conf.d/zz-perfci.cnf:ro" in args
    assert "MARIADB_ROOT_HOST=localhost" in args
    assert harness_options("published", 41001)["port"] == 3306
    assert [image_family(i) for i in ("mysql:8.4", "mariadb:10.11", "percona/percona-server:8.0",
                                      "perfci-local/mariadb:11.4.5")] == ["mysql", "mariadb", "percona", "mariadb"]


def test_percona_image_layout_include_dir_account_and_no_telemetry():
    """percona/percona-server:8.0 (percona-docker's Dockerfile and ps-entry.sh): USER mysql
    (uid 1001), /etc/my.cnf ends in `!includedir /etc/my.cnf.d`, the entrypoint does not
    step down from root (so mysqld would refuse), MYSQL_ALLOW_EMPTY_PASSWORD initialises
    a password-less root, MYSQL_ROOT_HOST=localhost keeps it off TCP (no root@'%'), and
    PERCONA_TELEMETRY_DISABLE keeps it from calling home."""
    args = run_args("percona/percona-server:8.0.36", "perfci-x", 41000, Path("/w/data"), Path("/w/my.cnf"),
                    container_user((0, 0), (1001, 1001)))
    assert "/w/my.cnf:/etc/my.cnf.d/zz-perfci.cnf:ro" in args
    assert args[args.index("--user") + 1] == "1001:1001"
    envs = [args[i + 1] for i, a in enumerate(args) if a == "--env"]
    assert envs == ["MYSQL_ALLOW_EMPTY_PASSWORD=1", "MYSQL_ROOT_HOST=localhost", "PERCONA_TELEMETRY_DISABLE=1"]


def test_the_server_never_runs_as_root_in_a_container():
    assert container_user((1000, 100), (999, 999)) == (1000, 100)   # the runner's files stay its own
    assert container_user((0, 0), (999, 999)) == (999, 999)         # root runner: the image's mysql
    for image_ids in (None, (0, 0)):
        with pytest.raises(BadInput, match="no non-root 'mysql' account"):
            container_user((0, 0), image_ids)


def test_a_failed_docker_command_reports_the_daemons_reason_not_the_usage_hint():
    stderr = ("docker: Error response from daemon: failed to create shim task: error setting rlimits\n\n"
              "Run 'docker run --help' for more information\n")
    assert cli_error(stderr) == "Error response from daemon: failed to create shim task: error setting rlimits"
    assert cli_error("") == "(no output)"


def test_containers_of_dead_runs_are_stale_live_ones_are_not():
    listing = "aaa 100 \nbbb 200 \nccc  \nddd notapid \n"
    assert stale_containers(listing, lambda pid: pid == 100) == ["bbb", "ccc", "ddd"]
    assert stale_containers("", lambda pid: True) == []


def test_only_this_runners_containers_are_ever_stale():
    """Another runner's container (its owner maybe in a PID namespace this process cannot
    see) is never removed; outside a runner, only containers of no runner are."""
    listing = "mine 200 1a2b3c4d\ntheirs 300 9f9f9f9f\nlocal 400 \n"
    assert stale_containers(listing, lambda pid: False, "1a2b3c4d") == ["mine"]
    assert stale_containers(listing, lambda pid: False, None) == ["local"]


@pytest.mark.parametrize("spec, network", [
    ("docker:mysql:8.0.42", "host"),
    ("docker:mysql:8.0.42#network=published", "published"),
    ("docker:perfci-local/mysql:8.0.31#network=host", "host"),
])
def test_docker_spec_network_mode(spec, network):
    parsed = parse_spec(spec)
    assert (parsed.network, parsed.image) == (network, spec.removeprefix("docker:").split("#")[0])


@pytest.mark.skipif(not shutil.which("docker"), reason="needs the docker CLI (this machine has only the client)")
def test_docker_without_engine_is_one_line_and_no_result(tmp_path):
    out = tmp_path / "out"
    proc = run_perfci("run", "rebuild-after-delete", "--server", "docker:mysql:8.0.42@sha256:" + "a" * 64,
                      "--out", str(out), env={"DOCKER_HOST": f"unix://{tmp_path}/no-engine.sock"})
    assert proc.returncode == 3, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: docker: no Docker engine answers"), proc.stderr
    assert result_files(out) == []


def test_a_registry_image_without_a_digest_is_refused_before_docker_is_asked(tmp_path):
    """A tag can move to other bytes between two nights: an image from a registry runs only
    pinned by its digest (images perfci builds here are pinned to their id at start)."""
    out = tmp_path / "out"
    proc = run_perfci("run", "rebuild-after-delete", "--server", "docker:mysql:8.0.42", "--out", str(out),
                      env={"DOCKER_HOST": f"unix://{tmp_path}/no-engine.sock"})
    assert proc.returncode == 2, proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith("error: --server 'docker:mysql:8.0.42': an image from a registry needs its digest")
    assert result_files(out) == []


def _tarball(path: Path, members: dict[str, bytes | Path]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, content in members.items():
            if isinstance(content, Path):
                tar.add(content, arcname=name)
            else:
                info = tarfile.TarInfo(name)
                info.size = len(content)
                info.mode = 0o755
                tar.addfile(info, io.BytesIO(content))
    return path


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_tarball_without_server_binary_is_one_line(tmp_path):
    archive = _tarball(tmp_path / "client-only.tar.gz", {"mysql-8.0/bin/mysql": b"#!/bin/sh\n"})
    spec = f"tarball:{archive}#sha256={sha256_of(archive)}"
    proc = run_perfci("run", "rebuild-after-delete", "--server", spec, "--out", str(tmp_path / "o"),
                      env={"PERFCI_CACHE": str(tmp_path / "cache")})
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"error: --server '{spec}': the tarball has no bin/mariadbd or bin/mysqld "
        f"(unpacked in {tmp_path / 'cache'}/tarballs/"
        f"{next(p for p in (tmp_path / 'cache' / 'tarballs').iterdir() if p.is_dir()).name})"]


def test_tarball_is_unpacked_once_and_its_server_identified(tmp_path, real_server_tools):
    binary = Path(shutil.which("mariadbd", path=os.environ["PATH"] + ":/usr/sbin"))
    archive = _tarball(tmp_path / "mariadb.tar.gz", {"mariadb-10.11/bin/mariadbd": binary})
    env = {"PERFCI_CACHE": str(tmp_path / "cache")}
    from perfci.providers import open_provider
    os.environ.update(env)
    try:
        spec = f"tarball:{archive}#sha256={sha256_of(archive)}"
        server = open_provider(spec, tmp_path / "w")
        again = open_provider(spec, tmp_path / "w2")
    finally:
        del os.environ["PERFCI_CACHE"]
    assert server.identity.flavor == "mariadb" and server.kind == "tarball"
    assert server.binary == again.binary and server.binary.is_relative_to(tmp_path / "cache" / "tarballs")
    assert [p.name.endswith(".manifest.json") for p in sorted((tmp_path / "cache" / "tarballs").iterdir())] == \
        [False, True]  # one tree, and its manifest


def test_build_spec_uses_the_build_script_and_reports_its_failure(tmp_path):
    proc = run_perfci("run", "rebuild-after-delete", "--server", "build:mysql@no-such-ref-xyz", "--out", str(tmp_path),
                      env={"PERFCI_SRC_CACHE": str(tmp_path / "src"), "PERFCI_BUILD_CACHE": str(tmp_path / "b"),
                           "GIT_TERMINAL_PROMPT": "0"})
    assert proc.returncode == 3
    line, = proc.stderr.strip().splitlines()
    assert line.startswith("error: --server 'build:mysql@no-such-ref-xyz': scripts/build-server failed: ")
    assert (REPO / "scripts" / "build-server").exists()


class FileServer:
    """A local HTTPS server (trusted through SSL_CERT_FILE) serving files, with one
    path that redirects to plain http."""

    def __init__(self, directory: Path):
        import ssl
        import threading
        from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

        import trustme
        ca = trustme.CA()
        self.cafile = directory / "ca.pem"
        ca.cert_pem.write_to_path(str(self.cafile))
        served = directory / "served"
        served.mkdir()
        self.root = served

        class Handler(SimpleHTTPRequestHandler):
            def __init__(self, *a, **kw):
                super().__init__(*a, directory=str(served), **kw)

            def log_message(self, *args):
                pass

            def do_GET(self):
                if self.path.startswith("/to-http/"):
                    self.send_response(302)
                    self.send_header("Location", "http://127.0.0.1:9/" + self.path.rsplit("/", 1)[-1])
                    self.end_headers()
                    return
                super().do_GET()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ca.issue_cert("127.0.0.1").configure_cert(context)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)  # a quick shutdown
        self.thread.start()
        self.url = f"https://127.0.0.1:{self.server.server_address[1]}"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def file_server(tmp_path):
    server = FileServer(tmp_path)
    yield server
    server.close()


@pytest.mark.slow
def test_a_tarball_whose_sha256_does_not_match_is_never_unpacked(tmp_path, file_server):
    archive = _tarball(file_server.root / "server.tar.gz", {"mysql/bin/mysqld": b"#!/bin/sh\n"})
    wrong = "0" * 64
    env = {"PERFCI_CACHE": str(tmp_path / "cache"), "SSL_CERT_FILE": str(file_server.cafile)}
    for target, message in ((str(archive), f"sha256 mismatch: the file is {sha256_of(archive)}; nothing unpacked"),
                            (f"{file_server.url}/server.tar.gz",
                             f"sha256 mismatch: the download is {sha256_of(archive)}; removed, nothing unpacked")):
        spec = f"tarball:{target}#sha256={wrong}"
        proc = run_perfci("run", "rebuild-after-delete", "--server", spec, "--out", str(tmp_path / "o"), env=env)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr == f"error: --server '{spec}': {message}\n"
        assert not (tmp_path / "cache" / "tarballs").exists()
        assert [p for p in (tmp_path / "cache").rglob("*") if p.is_file()] == []  # the bad download is gone
    assert archive.exists()  # a local file is the user's: never removed
    proc = run_perfci("run", "rebuild-after-delete", "--server", f"tarball:{archive}", "--out", str(tmp_path / "o"),
                      env=env)
    assert proc.returncode == 2 and "tarball: needs the archive's sha256" in proc.stderr


def test_a_download_redirected_to_plain_http_is_refused(tmp_path, file_server):
    archive = _tarball(file_server.root / "server.tar.gz", {"mysql/bin/mysqld": b"#!/bin/sh\n"})
    spec = f"tarball:{file_server.url}/to-http/server.tar.gz#sha256={sha256_of(archive)}"
    proc = run_perfci("run", "rebuild-after-delete", "--server", spec, "--out", str(tmp_path / "o"),
                      env={"PERFCI_CACHE": str(tmp_path / "cache"), "SSL_CERT_FILE": str(file_server.cafile)})
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr == (f"error: --server '{spec}': download failed: refused a redirect to "
                           "http://127.0.0.1:9/server.tar.gz (https only)\n")
    assert [p for p in (tmp_path / "cache").rglob("*") if p.is_file()] == []


def test_build_server_takes_the_host_lock_before_touching_the_shared_source_tree(tmp_path):
    """Another holder of the host lock: build-server waits (here 0 s) and fetches nothing;
    started by the perfci command that holds the lock itself, it does not wait for it."""
    import fcntl
    import os
    import subprocess

    lock = tmp_path / "host.lock"
    env = {**os.environ, "PERFCI_LOCK_FILE": str(lock), "PERFCI_HOST_WAIT": "0", "PERFCI_CACHE": str(tmp_path / "c"),
           "GIT_TERMINAL_PROMPT": "0"}
    env.pop("PERFCI_HOST_LOCK_HELD", None)
    with open(lock, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        proc = subprocess.run(["bash", str(REPO / "scripts" / "build-server"), "mysql", "no-such-ref"], env=env,
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 3 and "host lock" in proc.stderr, proc.stderr
        assert not (tmp_path / "c" / "src").exists()  # nothing fetched or checked out beside the holder
        proc = subprocess.run(["bash", str(REPO / "scripts" / "build-server"), "mysql", "no-such-ref"],
                              env={**env, "PERFCI_HOST_LOCK_HELD": str(os.getpid())},  # we are its parent
                              capture_output=True, text=True, timeout=120)
        assert "the host lock" not in proc.stderr and proc.returncode != 0  # it went on (and the fetch failed)


def test_build_server_builds_for_benchmarking(tmp_path):
    """The plan (PERFCI_BUILD_DRY_RUN=1): the release's optimisation with symbols and frame
    pointers kept (a profile names functions and walks stacks), no unit tests, MariaDB's
    engines no benchmark loads left out; the build flags key the cache."""
    import os
    import subprocess

    def plan(flavor: str) -> str:
        proc = subprocess.run(["bash", str(REPO / "scripts" / "build-server"), flavor, "main"], capture_output=True,
                              text=True, timeout=60, env={**os.environ, "PERFCI_BUILD_DRY_RUN": "1",
                                                          "PERFCI_CACHE": str(tmp_path / "c")})
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    mariadb, mysql = plan("mariadb"), plan("mysql")
    for text in (mariadb, mysql):
        assert "-DCMAKE_BUILD_TYPE=RelWithDebInfo" in text and "-DWITH_UNIT_TESTS=OFF" in text
        assert "-DCMAKE_C_FLAGS=-fno-omit-frame-pointer" in text and "-DCMAKE_CXX_FLAGS=-fno-omit-frame-pointer" in text
    assert "-DPLUGIN_ROCKSDB=NO" in mariadb and "-DPLUGIN_COLUMNSTORE=NO" in mariadb and "-DPLUGIN_ROCKSDB" not in mysql
    assert "-DWITH_WSREP" not in mariadb  # Galera's hooks stay compiled in, as a release has them
    assert mariadb.split("flags_hash=")[1].split()[0] != mysql.split("flags_hash=")[1].split()[0]


def test_the_extraction_rules_for_interpreters_without_tarfile_filters(tmp_path):
    """data_filter_rules: what Debian 12's python3 (3.11.2, no tarfile.data_filter) unpacks
    with. The same refusals as the data filter: absolute and escaping names, links out
    (left out by safe_members, as on newer interpreters), devices; no setuid or
    group/other write bit, no owner from the archive."""
    import stat

    from perfci.providers import basedirs
    from perfci.providers.basedirs import LinkOut, UnsafeMember, data_filter_rules, extract_tar

    def info(name, kind=tarfile.REGTYPE, mode=0o644, link=""):
        member = tarfile.TarInfo(name)
        member.type, member.mode, member.linkname, member.uid, member.uname = kind, mode, link, 0, "root"
        return member
    dest = str(tmp_path)
    for bad in (info("../x"), info("a/../../x"), info("dev", tarfile.CHRTYPE), info("fifo", tarfile.FIFOTYPE)):
        with pytest.raises(UnsafeMember):
            data_filter_rules(bad, dest)
    for link in (info("l", tarfile.SYMTYPE, link="/etc/passwd"), info("a/l", tarfile.SYMTYPE, link="../../x"),
                 info("h", tarfile.LNKTYPE, link="../x")):
        with pytest.raises(LinkOut):
            data_filter_rules(link, dest)
    kept = data_filter_rules(info("/bin/mysqld", mode=0o4777), dest)
    assert kept.name == "bin/mysqld" and kept.mode == 0o755 and kept.uid == os.getuid() and kept.uname == ""
    assert data_filter_rules(info("bin/x", tarfile.SYMTYPE, link="mysqld"), dest).linkname == "mysqld"
    # a whole archive, through the fallback path whatever this interpreter has
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:gz") as tar:
        for member, body in ((info("bin/mysqld", mode=0o4755), b"#!/bin/sh\n"), (info("bin/stray", tarfile.SYMTYPE,
                             link="/tmp/elsewhere"), b""), (info("lib/x.so", mode=0o666), b"x")):
            member.size = len(body)
            tar.addfile(member, io.BytesIO(body))
    data.seek(0)
    out = tmp_path / "out"
    out.mkdir()
    with tarfile.open(fileobj=data, mode="r|*") as tar:
        saved = basedirs.HAS_DATA_FILTER
        basedirs.HAS_DATA_FILTER = False
        try:
            extract_tar(tar, out)
        finally:
            basedirs.HAS_DATA_FILTER = saved
    assert stat.S_IMODE((out / "bin" / "mysqld").stat().st_mode) == 0o755
    assert stat.S_IMODE((out / "lib" / "x.so").stat().st_mode) == 0o644
    assert not (out / "bin" / "stray").exists() and not (out / "bin" / "stray").is_symlink()


@pytest.mark.slow  # over a second (CLI starts): --slow, as scripts/check runs it
def test_a_server_still_dying_when_its_client_fails_is_reported_dead(tmp_path):
    """A SIGKILLed server closes its sockets before it is reaped, so the client's lost
    connection can reach us while the server still looks alive: the failure waits for it."""
    server = object.__new__(LocalServer)
    server.error_log = tmp_path / "error.log"
    server.error_log.write_text("[Note] InnoDB: Buffer pool(s) load completed\n")
    server.proc = subprocess.Popen(["sh", "-c", "sleep 0.3; kill -KILL $$"])
    assert server.death() == ("killed by signal 9 (SIGKILL)", "[Note] InnoDB: Buffer pool(s) load completed")
    server.proc = subprocess.Popen(["sleep", "30"])
    try:
        assert server.death() is None  # alive past the grace: the client's failure is the news
    finally:
        server.proc.kill()
        server.proc.wait()
