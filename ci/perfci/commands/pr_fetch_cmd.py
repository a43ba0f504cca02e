"""`perfci pr-fetch`: a pull request's base and head commits into the runner's mirror of
the server repository, the one step of the server-code check that holds a read token,
with trusted git (providers/trusted_git.py)."""

from __future__ import annotations

import re
from pathlib import Path

import click

from perfci.providers.trusted_git import fetch_commits
from perfci.util.errors import BadInput

FULL_SHA = re.compile(r"[0-9a-f]{40}")


@click.command()
@click.option("--mirror", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="The bare mirror (made when missing; made anew when anything planted is found in it).")
@click.option("--url", required=True, help="Where the commits are (the checkout's origin).")
@click.option("--server-url", envvar="GITHUB_SERVER_URL", default="", show_envvar=True,
              help="The server the token is for: sent only to URLs under it.")
@click.option("--token", envvar="PERFCI_READ_TOKEN", default="", show_envvar=True, show_default=False,
              help="A read token (from the environment: never pass it on a command line).")
@click.argument("shas", nargs=-1, required=True)
def pr_fetch(mirror: Path, url: str, server_url: str, token: str, shas: tuple[str, ...]) -> None:
    """Fetch SHAS (full commit ids) into MIRROR, a ref each (refs/perfci/SHA).

    \b
    Example:
      PERFCI_READ_TOKEN=... perfci pr-fetch --mirror /var/lib/perfci-pr/src/server-pr-mirror.git \\
        --url https://github.com/team/server BASE_SHA HEAD_SHA"""
    for sha in shas:
        if not FULL_SHA.fullmatch(sha):
            raise BadInput(f"commit {sha!r}: a full 40-character SHA is needed")
    found = fetch_commits(mirror.absolute(), url, shas, server_url=server_url.rstrip("/"), token=token)
    if found:
        click.echo(f"perfci pr-fetch: {mirror} held what git init does not make ({'; '.join(found)}): made anew",
                   err=True)
