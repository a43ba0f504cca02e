"""`perfci sandbox -- COMMAND`: run untrusted code (a pull request's build) in the
sandbox providers/sandbox.py describes; scripts/build-server runs configure, build and
install through it when the runner names a sandbox account."""

from __future__ import annotations

from pathlib import Path

import click

from perfci.providers.sandbox import ACCOUNT_ENV, BOOTSTRAP, account_from, run_sandboxed
from perfci.util.errors import InfraFailure

DIR = click.Path(file_okay=False, path_type=Path)


def _env_pair(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> dict[str, str]:
    pairs = {}
    for value in values:
        key, sep, text = value.partition("=")
        if not sep or not key.isidentifier():
            raise click.BadParameter(f"{value!r}: NAME=VALUE", ctx=ctx, param=param)
        pairs[key] = text
    return pairs


def _path_pair(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> dict[Path, Path]:
    pairs = {}
    for value in values:
        path, sep, shown_at = value.partition("=")
        if not sep or not path or not shown_at.startswith("/"):
            raise click.BadParameter(f"{value!r}: DIR=SHOWN_AT, SHOWN_AT an absolute path", ctx=ctx, param=param)
        pairs[Path(path).absolute()] = Path(shown_at)
    return pairs


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--account", envvar=ACCOUNT_ENV, default="", show_envvar=True,
              help="The unprivileged account the command runs as: a user name or UID:GID.")
@click.option("--writable", "writable", multiple=True, type=DIR,
              help="A directory the command may write (made if missing, given to the account). Repeatable.")
@click.option("--readable", "readable", multiple=True, type=DIR,
              help="A directory shown read-only where it would be hidden (under a home or /tmp). Repeatable.")
@click.option("--writable-at", "writable_at", multiple=True, callback=_path_pair, metavar="DIR=SHOWN_AT",
              help="A directory the command may write, shown at SHOWN_AT inside (what is there stays as it is). "
                   "Repeatable.")
@click.option("--workdir", type=DIR, default=None, help="Where the command starts (default: the first --writable).")
@click.option("--env", "env", multiple=True, callback=_env_pair, metavar="NAME=VALUE",
              help="An environment variable the command gets; it gets no other but PATH, HOME=/tmp and LANG.")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def sandbox(account: str, writable: tuple[Path, ...], readable: tuple[Path, ...], writable_at: dict[Path, Path],
            workdir: Path | None, env: dict[str, str], command: tuple[str, ...]) -> int:
    """Run COMMAND as the sandbox account with no network, the file system read-only but
    for the --writable directories, homes, /tmp and /run empty, no environment of the
    caller's, and every process it starts ended with it. Its exit code is COMMAND's.

    \b
    Examples:
      perfci sandbox --account perfci-sandbox --writable build --readable src -- cmake --build build"""
    if not account:
        raise InfraFailure(f"no sandbox account: pass --account or set {ACCOUNT_ENV}; make one with {BOOTSTRAP}")
    return run_sandboxed(list(command), account_from(account), writable=[p.absolute() for p in writable],
                         readable=[p.absolute() for p in readable], workdir=workdir.absolute() if workdir else None,
                         env=env, writable_at=writable_at)
