"""`perfci lock -- COMMAND`: run a command holding the host lock (host/hostlock.py), the
one way scripts take it (scripts/build-server), so that one file, one holder record and
one policy decide who may use the host."""

from __future__ import annotations

import shlex
import signal
import subprocess

import click

from perfci.commands import options
from perfci.host.hostlock import exclusive_host, run_yielding


def _stop_on(signum: int, frame: object) -> None:  # a cancelled job: the command is stopped too (run_yielding)
    raise SystemExit(128 + signum)


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--yield", "yields", is_flag=True,
              help="Give the host to any measurement that waits for it: the command's process group is stopped "
                   "(SIGSTOP) until the measurement is done, then resumed. For builds, which take hours.")
@click.option("--what", default=None, help="How the lock's holder record names the command (default: the command).")
@options.host_wait
@options.allow_busy
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def lock(yields: bool, what: str | None, host_wait: float, allow_busy: bool, command: tuple[str, ...]) -> int:
    """Run COMMAND holding the host lock: no benchmark runs beside it. Its exit code is
    COMMAND's (3 when the host stays busy past --host-wait).

    \b
    Examples:
      perfci lock --yield --what "build-server mariadb 10.11" -- cmake --build build
      perfci lock --host-wait 600 -- ./my-measurement.sh"""
    text = what or shlex.join(command)[:200]
    signal.signal(signal.SIGTERM, _stop_on)
    if yields:
        return run_yielding(list(command), text, host_wait)
    with exclusive_host(text, allow_busy=allow_busy, wait_s=host_wait):
        return subprocess.call(list(command))
