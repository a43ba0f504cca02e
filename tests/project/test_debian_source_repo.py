"""scripts/debian-source-repo, started as a workflow or a person starts it (bash), on a
small source package built here the way Debian lays one out (a .dsc with sha256 sums,
the upstream tarball, the debian tarball with a quilt series): the upstream tree as the
first commit, each patch of the series a commit of its own with its header's subject
and author, tags a `build:` spec can name; bad input is one line, exit 2."""

from __future__ import annotations

import hashlib
import io
import os
import subprocess
import tarfile
from pathlib import Path

import pytest

from conftest import REPO

pytestmark = pytest.mark.slow
SCRIPT = REPO / "scripts" / "debian-source-repo"
DEP3 = """Description: Faster row lookup in the hot path
 Longer text.
Author: Dev One <one@example.org>
Forwarded: no
---
--- a/src/row.c
+++ b/src/row.c
@@ -1 +1 @@
-int lookup(void) { return 1; }
+int lookup(void) { return 2; }
"""
FORMAT_PATCH = """From 0123 Mon Sep 17 00:00:00 2001
From: =?utf-8?b?RGV2IFR3w7Y=?= <two@example.org>
Date: Tue, 1 Oct 2024 10:00:00 +0200
Subject: [PATCH] Build: no plugins nobody benchmarks

---
 CMakeLists.txt | 1 +
--- a/CMakeLists.txt
+++ b/CMakeLists.txt
@@ -1 +1,2 @@
 project(tiny C)
+set(PLUGINS OFF)
"""


def tarball(path: Path, files: dict[str, str]) -> Path:
    with tarfile.open(path, "w:xz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def source_package(where: Path, series: str = "row-lookup.patch\n# a comment\n\nno-plugins.patch -p1\n",
                   version: str = "1:1.2.3-4+deb12u1") -> Path:
    """tiny_1.2.3.orig.tar.xz, tiny_1.2.3-4+deb12u1.debian.tar.xz and their .dsc."""
    where.mkdir(parents=True, exist_ok=True)
    upstream = version.split(":")[-1].rsplit("-", 1)[0]
    orig = tarball(where / f"tiny_{upstream}.orig.tar.xz", {
        "tiny-1.2.3/CMakeLists.txt": "project(tiny C)\n", "tiny-1.2.3/src/row.c": "int lookup(void) { return 1; }\n",
        "tiny-1.2.3/.gitignore": "src/\n",  # upstream's own ignore rules must not drop upstream files
        "tiny-1.2.3/.gitattributes": "* text=auto\n", "tiny-1.2.3/win.rc": "a\r\nb\r\n"})  # nor change its bytes
    debian = tarball(where / f"tiny_{version.split(':')[-1]}.debian.tar.xz", {
        "debian/patches/series": series, "debian/patches/row-lookup.patch": DEP3,
        "debian/patches/no-plugins.patch": FORMAT_PATCH, "debian/control": "Source: tiny\n"})
    sums = "".join(f" {hashlib.sha256(p.read_bytes()).hexdigest()} {p.stat().st_size} {p.name}\n" for p in (orig, debian))
    dsc = where / f"tiny_{version.split(':')[-1]}.dsc"
    dsc.write_text(f"Format: 3.0 (quilt)\nSource: tiny\nVersion: {version}\nChecksums-Sha256:\n{sums}")
    return dsc


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, timeout=120)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout.strip()


def test_the_upstream_tarball_then_one_commit_per_debian_patch(tmp_path):
    dsc = source_package(tmp_path / "pkg")
    repo = tmp_path / "repo"
    done = run(str(dsc), str(repo))
    assert done.returncode == 0, done.stderr
    assert "then 2 Debian patch commit(s)" in done.stdout
    log = git(repo, "log", "--reverse", "--format=%s|%an <%ae>").splitlines()
    assert log == ["tiny 1.2.3 (upstream tarball tiny_1.2.3.orig.tar.xz)|perfci <perfci@localhost>",
                   "Faster row lookup in the hot path|Dev One <one@example.org>",
                   "Build: no plugins nobody benchmarks|Dev Twö <two@example.org>"]
    assert git(repo, "show", "upstream/1.2.3:src/row.c") == "int lookup(void) { return 1; }"
    assert git(repo, "show", "debian/1%1.2.3-4+deb12u1:src/row.c") == "int lookup(void) { return 2; }"
    assert git(repo, "show", "HEAD:CMakeLists.txt").endswith("set(PLUGINS OFF)")
    assert git(repo, "status", "--porcelain") == ""
    crlf = subprocess.run(["git", "-C", str(repo), "show", "upstream/1.2.3:win.rc"], capture_output=True, check=True).stdout
    assert crlf == b"a\r\nb\r\n"  # the tarball's bytes, whatever upstream's .gitattributes say
    assert "debian/patches/row-lookup.patch (tiny 1:1.2.3-4+deb12u1)" in git(repo, "log", "-1", "--format=%b", "HEAD~1")
    # what `build-server --commits` walks: the patches' line after the upstream tree
    # (the host lock is perfci's, held by the bisect that asks; this process stands in for it)
    walked = subprocess.run(["bash", str(REPO / "scripts" / "build-server"), "--commits", "mariadb", "upstream/1.2.3",
                             "main"], capture_output=True, text=True, timeout=120,
                            env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PERFCI_BUILD_REPO": str(repo),
                                 "PERFCI_CACHE": str(tmp_path / "cache"), "PERFCI_HOST_LOCK_HELD": str(os.getpid())})
    assert walked.returncode == 0, walked.stderr
    assert [line.split(" ", 1)[1] for line in walked.stdout.splitlines()] == [
        "tiny 1.2.3 (upstream tarball tiny_1.2.3.orig.tar.xz)", "Faster row lookup in the hot path",
        "Build: no plugins nobody benchmarks"]


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    dsc = source_package(tmp_path / "pkg")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    for args, needle in (([str(tmp_path / "nope.dsc"), str(tmp_path / "r1")], "no such .dsc file"),
                         ([str(dsc), str(tmp_path / "full")], "exists and is not empty")):
        done = run(*args)
        assert done.returncode == 2 and needle in done.stderr and done.stderr.count("\n") == 1, done.stderr
    tampered = source_package(tmp_path / "tampered")
    orig = next((tmp_path / "tampered").glob("*.orig.tar.xz"))
    orig.write_bytes(orig.read_bytes() + b"\0")
    done = run(str(tampered), str(tmp_path / "r2"))
    assert done.returncode == 2 and "sha256 differs from the .dsc's" in done.stderr
    missing = source_package(tmp_path / "missing", series="row-lookup.patch\nnot-there.patch\n")
    done = run(str(missing), str(tmp_path / "r3"))
    assert done.returncode == 2 and "names not-there.patch" in done.stderr


def test_a_patch_that_does_not_apply_stops_with_exit_3(tmp_path):
    dsc = source_package(tmp_path / "pkg", series="row-lookup.patch\nrow-lookup.patch\n")  # the second: already applied
    done = run(str(dsc), str(tmp_path / "repo"))
    assert done.returncode == 3 and "row-lookup.patch does not apply on" in done.stderr, done.stderr
