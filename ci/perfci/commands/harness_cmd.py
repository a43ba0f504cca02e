"""`perfci harness-check`: did a change of perfci itself change what it measures."""

from __future__ import annotations

from pathlib import Path

import click

from perfci.commands import options
from perfci.model.outputs import CheckVerdict
from perfci.model.verdicts import Outcome
from perfci.sessions.harness import check, harness_markdown, pair_rounds
from perfci.store.results import expand, load_result
from perfci.util.errors import EXIT_REGRESSION
from perfci.util.files import write_atomic


@click.command()
@click.argument("a_results", type=click.Path(path_type=Path, exists=True))
@click.argument("b_results", type=click.Path(path_type=Path, exists=True))
@options.report
@options.json_output("check-verdict")
def harness_check(a_results: Path, b_results: Path, report_file: Path | None, json_out: Path | None) -> int:
    """A_RESULTS: runs by the base version of perfci, B_RESULTS: the same scenario on the
    same server by the head version, in alternating rounds (what scripts/pr-harness-ab
    runs). The harness is unchanged when every round's pair did the same work (each
    Com_/Handler_ counter per transaction and phase within 0.1 %) and no judged metric
    moved beyond its tolerance as a paired-rounds A/B.

    \b
    Example:
      scripts/pr-harness-ab ../perfci-base rebuild-after-delete local 3 ab-harness.md
    Exit codes: 0 unchanged, 1 the harness changed what it measures, 2 bad input, 3 internal error."""
    a = [load_result(p) for p in expand([a_results])]
    b = [load_result(p) for p in expand([b_results])]
    checks = [check(case, ra, rb) for case, (ra, rb) in sorted(pair_rounds(a, b).items())]
    text = harness_markdown(checks, a, b)
    if report_file is not None:
        write_atomic(report_file, text)
    changed = any(c.changed for c in checks)
    verdict = next(line for line in text.splitlines() if line.startswith("**"))
    options.emit_json(CheckVerdict(check="harness", outcome=Outcome.REGRESSION if changed else Outcome.UNCHANGED,
                                   verdict_line=verdict).dump(), json_out)
    options.text_out(json_out)(text)
    return EXIT_REGRESSION if changed else 0
