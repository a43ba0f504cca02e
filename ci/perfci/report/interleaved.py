"""The report of an interleaved A/B: its verdicts (judge/burst_verdicts.py) as Markdown."""

from __future__ import annotations

from perfci.host import policy
from perfci.judge.burst_verdicts import (
    INTERIM_SHARE,
    WORK_TOLERANCE,
    WorkDifference,
    busy_pairs,
    interim_look,
    look_alpha,
    run_alpha,
    work_differences,
)
from perfci.judge.paired import FDR, PairedVerdict
from perfci.model.ab_verdict import AbMetric, AbSide, AbVerdict, Sizing, overall
from perfci.model.bursts import InterleavedRun
from perfci.model.metrics import WORK_METRIC, presentation
from perfci.model.verdicts import Outcome
from perfci.report.opening import THROUGHPUT_SERIES
from perfci.report.table import change_cell, p_value, table, verdict_label
from perfci.util.text import code_span, markdown


def _fmt(x: float) -> str:
    return f"{x:.4g}"


def interleaved_markdown(run: InterleavedRun, rows: list[PairedVerdict], min_effect: float,
                         noise_source: str | None = None, instance_source: str | None = None,
                         sizing: str | None = None) -> str:
    a, b = run.sides
    differ = work_differences(run)
    # a bursts file is input (this report also goes into issues): every text from it escaped
    phases = ", ".join(f"{markdown(p)}: {run.bursts_per_phase[p]} pairs x {run.burst_transactions[p]} txn"
                       for p in run.bursts_per_phase)
    host = run.host
    head = [
        f"## perfci A/B (interleaved): {markdown(run.scenario)} · profile {code_span(run.profile)}"
        + (f" · case {code_span(run.case)}" if run.case != "default" else ""),
        "",
        verdict_line(rows, differ),
        "",
        *([measured_line(run, rows), ""] if run.measure == "work" else []),
    ]
    lines = [
        *([f"- planned before it ran: {markdown(sizing)}"] if sizing else []),
        f"- A: {code_span(a.described)} ({markdown(f'{a.flavor} {a.full_version}')}) · "
        f"B: {code_span(b.described)} ({markdown(f'{b.flavor} {b.full_version}')})",
        f"- {len(run.instances)} instance pair{'s' if len(run.instances) > 1 else ''} (fresh servers from the dataset; "
        f"first side: {', '.join(i.first.upper() for i in run.instances)}), in each both servers alive, bursts "
        f"alternating, the idle side frozen ({markdown(a.freezer)}); {phases} per instance pair; first "
        f"{run.warmup_pairs} pairs of each phase dropped as warm-up",
        f"- host {code_span(host.hostname)} ({markdown(host.cpu_model)}, {host.cpus} CPUs) · runner class "
        f"{code_span(run.runner_class)} · scenario hash {code_span(run.scenario_hash[:19] + '…')} · "
        f"{markdown(run.started_at)} – {markdown(run.finished_at)}",
        f"- verdict: judged metrics under Holm (≤ {run_alpha(run):.3%} chance of any false regression per A/B) and at least "
        f"a {min_effect:.1%} change, `unchanged` only with the interval within ± the metric's tolerance; "
        f"other counters under Benjamini-Hochberg (FDR {FDR:.0%}), explanations only"
        + (f"; minimum effects from the noise model {noise_source}" if noise_source else ""),
        "- changes: B against A in percent, worse or better as the metric's direction reads; intervals: each "
        "judged metric at the level of its own Holm step (1 − α·p/p_adj: 1 − α/m for the smallest p), so it "
        "excludes no change exactly when the metric is significant; counters at 95 %; achieved MDE: "
        "the change this run, with the noise it measured, finds with 90 % power at 1 − α/m (the plan's "
        "\"sees\" is the same from the noise assumed before it ran); spread: "
        + (f"bursts within instance pairs, plus the spread between instance pairs from the "
                           f"{markdown(instance_source)}, pooled with this run's own instance means (from 4 "
                           "instance pairs the means alone decide where they say less)"
                           if instance_source else "bursts within instance pairs, and this run's own spread between "
                           "instance pairs (none with one pair)"),
    ]
    planned = run.planned_instances or len(run.instances)
    if interim_look(planned) is not None:
        lines.append(f"- sequential: {len(run.instances)} of {planned} planned instance pairs; "
                     + ({"interim": "stopped at the interim look", "budget": "stopped by the time budget"}
                        .get(run.stopped or "", "the final look") if len(run.instances) < planned else "the final look")
                     + f", judged at family-wise level {look_alpha(run):.3%} (interim {INTERIM_SHARE:.1%} of "
                       f"{run_alpha(run):.3%}, final the rest)")
    dropped = {p: n for p, n in busy_pairs(run).items() if n}
    if dropped:
        lines.append("- pairs dropped, host busy during a burst (others > "
                     f"{policy.BUSY_OTHER_CORES} cores): " + ", ".join(f"{markdown(p)}: {n}" for p, n in dropped.items()))
    for side in run.sides:
        if side.work:
            lines.append(f"- counting on {side.name.upper()}: {markdown(side.work)}")
        if side.setup_sql:
            lines.append(f"- setup SQL on {side.name.upper()}: " + "; ".join(code_span(s) for s in side.setup_sql))
    method, lines = lines, []
    if differ:
        lines += ["", f"### The sides did different work (counters per transaction differing beyond "
                      f"{WORK_TOLERANCE:.1%}; same seeded work gives the same counts)", "",
                  *table(["counter", "instance pair", "A", "B", "difference"],
                         ([code_span(d.key), str(d.instance + 1), _fmt(d.a), _fmt(d.b), f"{d.relative:.2%}"]
                          for d in differ[:15]))]
    judged = [r for r in rows if r.spec is not None]
    quiet = [r for r in judged if r.verdict == Outcome.UNCHANGED or degenerate(r)]
    same = repeats(judged)
    attention = [r for r in judged if r not in quiet and r.key not in same]
    if attention:
        lines += ["", *table([*COLUMNS, "verdict"], (_cells(r) for r in attention))]
        if twice := [k for k in same if any(r.key == k for r in judged if r not in quiet)]:
            lines += ["", "Not shown twice, the same change and interval as its phase's throughput: "
                      + ", ".join(f"{code_span(k)} (= {code_span(same[k])})" for k in twice) + "."]
    if quiet:
        lines += ["", f"<details><summary>{len(quiet)} judged metric{'s' if len(quiet) > 1 else ''} unchanged "
                      "(within the tolerance, or no value to compare)</summary>", "",
                  *table([*COLUMNS, "verdict"], (_cells(r) for r in quiet)), "", "</details>"]
    moved = [r for r in rows if r.spec is None and r.verdict == Outcome.MOVED]
    moved.sort(key=lambda r: -abs(r.estimate.ratio - 1) if r.estimate else 0)
    if moved:
        lines += ["", f"### Counters per transaction that moved (FDR {FDR:.0%}; {len(moved)} of "
                      f"{sum(1 for r in rows if r.spec is None)})", "",
                  *table([*COLUMNS, ""], (_cells(r) for r in moved[:25]))]
    unstable = [r for r in rows if r.verdict == Outcome.UNSTABLE]
    if unstable:
        shown = ", ".join(f"{code_span(r.key)} ({r.estimate.spread:.0%})" if r.estimate else code_span(r.key)
                          for r in unstable[:30])
        lines += ["", f"Unstable (pair spread beyond the limit, not judged): {shown}"
                  + (f" and {len(unstable) - 30} more" if len(unstable) > 30 else "")]
    lines += ["", "<details><summary>How this A/B was run</summary>", "", *method, "", "</details>", ""]
    return "\n".join(head[:-1] + lines)


def repeats(rows: list[PairedVerdict]) -> dict[str, str]:
    """Rows that repeat a row of their phase exactly (queries/s where every transaction is
    the same statements: the same change, interval and verdict as throughput): key -> the
    key it repeats, throughput kept."""
    kept: dict[tuple, str] = {}
    out: dict[str, str] = {}
    for r in sorted(rows, key=lambda r: r.key.split(".", 1)[-1] != "tps"):  # throughput first: the one kept
        e = r.estimate
        if e is None or r.key.split(".", 1)[-1] not in THROUGHPUT_SERIES:
            continue
        shape = (r.key.split(".", 1)[0], round(e.ratio, 6), round(e.low, 6), round(e.high, 6), r.verdict)
        if shape in kept:
            out[r.key] = kept[shape]
        else:
            kept[shape] = r.key
    return out


def degenerate(r: PairedVerdict) -> bool:
    """A row with nothing to read: no estimate, or one pinned at the estimator's bounds
    (a counter that was 0 on one side: 10000 [-0.6, 10000])."""
    e = r.estimate
    return e is None or e.high >= 9999 or e.low <= 0


COLUMNS = ["metric", "A mean", "B mean", "B vs A [interval]", "adj. p", "achieved MDE", "pairs (block) · inst. sd",
           "unit"]


def _change(r: PairedVerdict) -> str:
    e = r.estimate
    assert e is not None
    return f"{code_span(r.key)} {change_cell(e.ratio, e.low, e.high, r.spec.direction if r.spec else None)}"


def measured_line(run: InterleavedRun, rows: list[PairedVerdict]) -> str:
    """What a counting A/B measured, and the family a change shows in: counted
    instructions are the code's work; time, which it did not measure, is everything else."""
    counted = [r for r in rows if r.key.split(".", 1)[1] == WORK_METRIC and r.estimate]
    worse = [r for r in counted if r.verdict == Outcome.REGRESSION]
    better = [r for r in counted if r.verdict == Outcome.IMPROVEMENT]
    if worse:
        family = ("more code ran for the same statements (instructions per transaction up in "
                  + ", ".join(code_span(r.key.split(".", 1)[0]) for r in worse) + ")")
    elif better:
        family = "less code ran for the same statements"
    else:
        family = ("the same code ran for the same statements, as far as this run sees; a slowdown that is not "
                  "more code (waits, locks, cache misses, the host) does not show in a count: `--measure time` "
                  "sees it")
    return (f"Measured: **work**, the instructions the servers' statement paths executed per transaction "
            f"(counted; time was not measured: the servers ran under the counter): {family}.")


def verdict_line(rows: list[PairedVerdict], differ: list[WorkDifference] | None = None) -> str:
    """The one line a reader needs: what was found, and what this run could not see."""
    first = ""
    if differ:
        d = differ[0]
        first = (f"**Did different work**: {code_span(d.key)} {_fmt(d.a)} on A vs {_fmt(d.b)} on B per transaction"
                 + (f" and {len(differ) - 1} more counter(s)" if len(differ) > 1 else "")
                 + ": throughput and latency are not judged (see below). ")
    return first + _findings(rows)


def _findings(rows: list[PairedVerdict]) -> str:
    judged = [r for r in rows if r.spec is not None]
    worse = [r for r in judged if r.verdict == Outcome.REGRESSION and r.estimate]
    better = [r for r in judged if r.verdict == Outcome.IMPROVEMENT and r.estimate]
    unsure = [r for r in judged if r.verdict in (Outcome.INCONCLUSIVE, Outcome.UNSTABLE)]
    mdes = [r.mde for r in judged if r.mde is not None]
    if worse:
        head = f"**Regression** in {len(worse)} of {len(judged)} judged metrics: " + "; ".join(
            _change(r) for r in worse[:3]) + (f"; and {len(worse) - 3} more" if len(worse) > 3 else "")
    elif unsure:
        blind = [f"{code_span(r.key)} {r.mde:.1%}" if r.mde is not None else code_span(r.key) for r in unsure[:4]]
        head = (f"**No regression found, not conclusive**: {len(unsure)} of {len(judged)} judged metrics could "
                f"neither be flagged nor shown within their tolerance (could not see below: {', '.join(blind)}"
                + (", …" if len(unsure) > 4 else "") + ")")
    else:
        head = f"**No change** beyond the tolerance in {len(judged)} judged metrics"
    if better:
        head += "; improved: " + "; ".join(_change(r) for r in better[:3])
    if mdes and not worse:
        head += f" · smallest detectable change of this run: {min(mdes):.1%} (best metric) to {max(mdes):.1%}"
    return head + "."


def _cells(r: PairedVerdict) -> list[str]:
    e = r.estimate
    return [code_span(r.key) + ("" if r.spec is None else " " + r.spec.direction.arrow), _fmt(r.a_mean), _fmt(r.b_mean),
            change_cell(e.ratio, e.low, e.high, r.spec.direction if r.spec else None) if e else "–",
            p_value(r.p_adjusted) if r.p_adjusted is not None else "–",
            f"{r.mde:.1%}" if r.mde is not None else "–",
            f"{e.n_pairs} ({e.block}) · {e.instance_sd:.1%}" if e else "–", presentation(r.key)[1],
            verdict_label(r.verdict, e.ratio - 1 if e else None, r.spec.direction if r.spec else None)]


def verdict_record(run: InterleavedRun, rows: list[PairedVerdict], size: Sizing | None = None,
                   why: str | None = None, explain_dir: str | None = None, report_file: str | None = None,
                   bursts_file: str | None = None, why_line: str | None = None) -> AbVerdict:
    """The interleaved A/B's verdict for machines (`perfci ab --json`): the same rows the
    report renders, typed; `size`: how it was sized (None: its size was not planned here)."""
    metrics = [AbMetric(key=r.key, judged=r.spec is not None, verdict=r.verdict, a=r.a_mean, b=r.b_mean,
                        ratio=r.estimate.ratio if r.estimate else None, low=r.estimate.low if r.estimate else None,
                        high=r.estimate.high if r.estimate else None,
                        confidence=r.estimate.confidence if r.estimate else None, p_adjusted=r.p_adjusted,
                        mde=r.mde, reason=r.reason) for r in rows]
    judged = [m for m in metrics if m.judged]
    outcome = overall(judged)
    differ = work_differences(run)
    if differ and outcome == Outcome.UNCHANGED:
        outcome = Outcome.INCONCLUSIVE  # the sides did different work: throughput and latency were not judged
    mdes = [m.mde for m in judged if m.mde is not None]
    a, b = run.sides
    return AbVerdict(outcome=outcome, verdict_line=verdict_line(rows, differ), mode="interleaved",
                     scenario=run.scenario, profile=run.profile, case=run.case, scenario_hash=run.scenario_hash,
                     runner_class=run.runner_class, host=run.host.hostname,
                     a=AbSide(spec=a.described, version=a.full_version, run=a.run),
                     b=AbSide(spec=b.described, version=b.full_version, run=b.run),
                     sizing=size.said() if size else "", size=size,
                     regressions=[m.key for m in judged if m.verdict == Outcome.REGRESSION],
                     blind_below=max(mdes) if mdes and outcome != Outcome.REGRESSION else None, metrics=metrics,
                     why=why, why_line=why_line, alpha=run_alpha(run), explain_dir=explain_dir,
                     report_file=report_file, bursts_file=bursts_file)
