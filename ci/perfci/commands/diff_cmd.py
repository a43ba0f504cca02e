"""`perfci diff A B`: two result files (or directories of them) judged against each other."""

from __future__ import annotations

from pathlib import Path

import click

from perfci.commands import options
from perfci.judge.compare import CaseComparison, Rules
from perfci.judge.diff import DiffPair, ab_instead, blind_spot, blind_spot_lines, case_key, diff_cases, pair_results
from perfci.model.identity import Follow
from perfci.report.markdown import Framing, comparison_markdown
from perfci.store.results import expand, load_result
from perfci.util.errors import EXIT_INFRA, EXIT_REGRESSION


@click.command()
@click.argument("a", type=click.Path(path_type=Path, exists=True))
@click.argument("b", type=click.Path(path_type=Path, exists=True))
@options.verdict_rules
@options.report
@options.csv_out
@options.json_output("comparison")
def diff(a: Path, b: Path, confidence: float, cv_floor: float, prior_cv: float, follow: Follow,
         report_file: Path | None, csv_out: Path | None, json_out: Path | None) -> int:
    """B against A: result files (or directories of them) of the same cases, A's runs
    standing as B's baseline, judged and reported as `perfci compare` does (one case per
    scenario, profile and case on both sides), with what the diff cannot see.

    \b
    A diff is not an A/B: the runs were not interleaved, so a change of the host or its
    load between them is in the difference, and one run a side measures no spread (no
    change can be called). The report gives the `perfci ab` that decides.
    Exit codes: 0 B not worse, 1 B worse (a regression), 2 bad input, 3 nothing could be
    judged (only invalid runs)."""
    rules = Rules(confidence=confidence, cv_floor=cv_floor, prior_cv=prior_cv, follow=follow)
    pairing = pair_results([load_result(p) for p in expand([a])], [load_result(p) for p in expand([b])])
    comparisons = diff_cases(pairing, rules, str(a))
    pairs = {pair.key: pair for pair in pairing.pairs}
    framing = Framing(title=f"## perfci diff: B `{b}` against A `{a}`",
                      against=lambda comp: f"A ({_runs(comp)})",
                      reproduce=lambda comp: _reproduce(pairs[case_key(comp.results[0])]),
                      notes=lambda comp: blind_spot_lines(blind_spot(comp)))
    text = comparison_markdown(comparisons, confidence, framing=framing)
    unpaired = [f"- only in {side}: {'/'.join(k)} (not diffed)"
                for side, keys in (("A", pairing.only_a), ("B", pairing.only_b)) for k in keys]
    if unpaired:
        text += "\n" + "\n".join(unpaired) + "\n"
    options.emit_comparison(comparisons, rules, text, report_file, csv_out, json_out)
    if any(c.regressions for c in comparisons):
        return EXIT_REGRESSION
    if all(c.invalid or c.baseline is None for c in comparisons):
        click.echo("nothing could be judged: no valid run of A, or only invalid runs of B", err=True)
        return EXIT_INFRA
    return 0


def _runs(comp: CaseComparison) -> str:
    n = len(comp.baseline.samples) if comp.baseline else 0
    return f"{n} run{'s' if n != 1 else ''}"


def _reproduce(pair: DiffPair) -> str:
    """The A/B that decides; else B's own run."""
    return ab_instead(pair) or pair.b[0].reproduce
