"""`perfci explain DIR`: the Why section of a kept explain pass, judged again."""

from __future__ import annotations

from pathlib import Path

import click

from perfci.judge.profile_diff import SHARE_FLOOR, explain_findings
from perfci.report.explanation import why_section
from perfci.store.explain_files import read_explain
from perfci.util.text import code_span


@click.command()
@click.argument("directory", type=click.Path(path_type=Path, file_okay=False, exists=True))
@click.option("--share-floor", type=click.FloatRange(0, 1), default=SHARE_FLOOR, show_default=True,
              help="The smallest change of a function shown, as a share of A's CPU per transaction.")
def explain(directory: Path, share_floor: float) -> None:
    """The Why section of the explain pass kept in DIRECTORY (RUN.explain/, written by
    an A/B with --explain: its record and each burst's folded profile), compared again
    by this perfci: after a change of the comparison, or with another --share-floor.

    \b
    Examples:
      perfci explain out/rebuild-after-delete-smoke-ab-20261126T121338Z-a68729.explain
      perfci explain docs/findings/data/2026-11-26-explain/trigger --share-floor 0.005
    Exit codes: 0 shown, 2 not an explain directory."""
    run, folded = read_explain(directory)
    click.echo(why_section(run, explain_findings(run, folded, share_floor), link=code_span(str(directory)),
                           share_floor=share_floor), nl=False)
