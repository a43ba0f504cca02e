"""`perfci harness-check`: did a change of perfci itself change what it measures."""

from __future__ import annotations

from pathlib import Path

import click

from perfci.commands import options
from perfci.sessions.harness import judge_harness
from perfci.util.errors import EXIT_REGRESSION
from perfci.util.files import write_atomic


@click.command()
@click.argument("a_results", type=click.Path(path_type=Path, exists=True))
@click.argument("b_results", type=click.Path(path_type=Path, exists=True))
@options.report
@options.json_output("check-verdict")
def harness_check(a_results: Path, b_results: Path, report_file: Path | None, json_out: Path | None) -> int:
    """A_RESULTS: runs by the base version of perfci, B_RESULTS: the same scenario on the
    same server by the head version, in alternating rounds (what `perfci pr-check
    scenarios` runs for a change of perfci itself). The harness is unchanged when every
    round's pair did the same work (each Com_/Handler_ counter per transaction and phase
    within 0.1 %) and no judged metric moved beyond its tolerance as a paired-rounds A/B.

    \b
    Example:
      perfci harness-check base-runs/ head-runs/ --report ab-harness.md --json ab-harness.json
    Exit codes: 0 unchanged, 1 the harness changed what it measures, 2 bad input, 3 internal error."""
    text, changed, verdict = judge_harness(a_results, b_results)
    if report_file is not None:
        write_atomic(report_file, text)
    options.emit_json(verdict.dump(), json_out)
    options.text_out(json_out)(text)
    return EXIT_REGRESSION if changed else 0
