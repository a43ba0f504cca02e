"""The `perfci` command line: the command group, and the exit-code contract.

Exit codes: 0 ok, 1 regression found, 2 bad input, 3 infrastructure failure or
internal error, 130 interrupted. An unexpected exception is an internal error: one
line (the traceback with PERFCI_DEBUG=1) and exit 3, never 1, which the workflows
read as "regression found".
"""

from __future__ import annotations

import importlib
import os
import sys
import traceback

import click

from perfci import __version__
from perfci.util.errors import EXIT_BAD_INPUT, EXIT_INFRA, EXIT_INTERRUPTED, InfraFailure, PerfciError
from perfci.util.files import NO_SPACE

DEBUG_ENV = "PERFCI_DEBUG"
# command -> (module under perfci.commands, function): imported only when used, so
# `perfci baseline update` does not pay for scipy and a workflow step stays quick
COMMANDS = {
    "ab": ("ab_cmd", "ab"),
    "act": ("act_cmd", "act"),
    "baseline": ("baseline_cmd", "baseline"),
    "bisect": ("bisect_cmd", "bisect_command"),
    "calibrate": ("calibrate_cmd", "calibrate"),
    "compare": ("compare_cmd", "compare"),
    "dashboard": ("dashboard_cmd", "dashboard"),
    "diff": ("diff_cmd", "diff"),
    "doctor": ("doctor_cmd", "doctor"),
    "explain": ("explain_cmd", "explain"),
    "harness-check": ("harness_cmd", "harness_check"),
    "confirm": ("confirm_cmd", "confirm"),
    "history": ("history_cmd", "history"),
    "init": ("init_cmd", "init"),
    "issues": ("issues_cmd", "issues"),
    "list": ("scenarios_cmd", "list_scenarios"),
    "lock": ("lock_cmd", "lock"),
    "nightly": ("nightly_cmd", "nightly"),
    "plan": ("plan_cmd", "plan"),
    "pr-check": ("pr_check_cmd", "pr_check_group"),
    "pr-fetch": ("pr_fetch_cmd", "pr_fetch"),
    "run": ("run_cmd", "run"),
    "sandbox": ("sandbox_cmd", "sandbox"),
    "schema": ("schema_cmd", "schema"),
    "servers": ("servers_cmd", "servers"),
    "sweep": ("sweep_cmd", "sweep"),
    "validate": ("scenarios_cmd", "validate"),
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module, attr = COMMANDS[cmd_name]
        command = getattr(importlib.import_module(f"perfci.commands.{module}"), attr)
        assert isinstance(command, click.Command)
        return command


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="perfci")
def cli() -> None:
    """Performance-regression CI for MySQL-family servers: run pinned scenarios on
    real servers and record trustworthy results."""


def fail(err: PerfciError) -> None:
    click.echo(f"error: {err}", err=True)
    if err.detail:
        click.echo("\n".join("  | " + line for line in err.detail.splitlines()), err=True)
    sys.exit(err.exit_code)


def internal_error(exc: BaseException) -> None:
    if os.environ.get(DEBUG_ENV):
        traceback.print_exception(exc)
    message = str(exc).splitlines()[0] if str(exc) else ""
    click.echo(f"perfci: internal error: {type(exc).__name__}{': ' + message if message else ''}; "
               f"rerun with {DEBUG_ENV}=1 for the traceback", err=True)
    sys.exit(EXIT_INFRA)


def usage(exc: click.ClickException) -> None:
    """A usage error in one line, with where to look: `error: ... (see perfci CMD --help)`."""
    ctx = getattr(exc, "ctx", None)
    where = f" (see {ctx.command_path} --help)" if ctx is not None else ""
    click.echo(f"error: {exc.format_message()}{where}", err=True)


def main(argv: list[str] | None = None) -> None:
    try:
        rv = cli.main(args=argv, prog_name="perfci", standalone_mode=False)
    except click.ClickException as exc:  # usage errors: one line, exit 2
        usage(exc)
        sys.exit(EXIT_BAD_INPUT)
    except click.Abort:  # Ctrl-C outside run/ab (they handle it and say what was kept)
        click.echo("interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except PerfciError as err:
        fail(err)
    except OSError as exc:
        if exc.errno not in NO_SPACE:
            internal_error(exc)
        fail(InfraFailure(f"{exc.strerror}{f': {exc.filename}' if exc.filename else ''} (free space, then rerun)"))
    except Exception as exc:  # noqa: BLE001 - the contract: never a traceback, never exit 1
        internal_error(exc)
    sys.exit(rv if isinstance(rv, int) else 0)


if __name__ == "__main__":
    main()
