"""The four lines an A/B's report, its PR comment and its issue open with (#57), from the
typed verdict alone: what changed (in words and percent, with the sign of the change),
how sure (in words, with the level once), why (the top function, or where the change
shows), and the command that reproduces it. The tables follow them."""

from __future__ import annotations

from perfci.judge.bisect import Bisection
from perfci.judge.compare import CaseComparison
from perfci.model.ab_verdict import AbMetric, AbVerdict
from perfci.model.sweep import Sweep
from perfci.model.verdicts import Outcome
from perfci.report.table import signed_percent
from perfci.util.text import code_span, markdown

# what people call a metric (the key's second part); anything else keeps its key's name
WORDS = {"tps": "throughput", "qps": "queries/s", "qps_write": "writes/s", "qps_read": "reads/s",
         "latency_ms_avg": "latency", "latency_ms_p95": "p95 latency", "latency_ms_p99": "p99 latency",
         "latency_ms_p99_9": "p99.9 latency",
         "cpu_us_per_txn": "CPU per transaction", "server_cpu_us_per_txn": "server CPU per transaction",
         "statement_cpu_us_per_txn": "statement CPU per transaction",
         "instructions_per_txn": "instructions per transaction", "fsyncs_per_txn": "fsyncs per transaction",
         "pages_written_per_txn": "pages written per transaction"}
PHASES_SHOWN = 3
LABELS = ("What", "How sure", "Why", "Reproduce")


def metric_words(key: str) -> str:
    """A key's metric as people call it (`full-scan.tps` -> throughput)."""
    name = key.split(".", 1)[-1]
    if name in WORDS:
        return WORDS[name]
    last = name.rsplit(".", 1)[-1]  # a server counter (global_status.Innodb_pages_written): its own name
    return last if any(c.isupper() for c in last) else last.replace("_", " ")


def change_words(m: AbMetric) -> str:
    """`throughput −9.9 %`: the metric in words, B against A in percent with its sign (a
    change of 2x or more as the two values and the factor: +999900 % says nothing)."""
    ratio = m.ratio if m.ratio is not None else (m.b / m.a if m.a else None)
    if ratio is None:
        return f"{metric_words(m.key)} {m.a:.4g} → {m.b:.4g}"
    if ratio >= 2 or ratio <= 0.5:
        return f"{metric_words(m.key)} {m.a:.3g} → {m.b:.3g} (×{ratio:.3g})"
    return f"{metric_words(m.key)} {signed_percent((ratio - 1) * 100)}"


# series a run derives from its transaction count: queries/s move with throughput, and
# one client's mean latency is its inverse (more clients: near enough to say once)
THROUGHPUT_SERIES = frozenset({"tps", "qps", "qps_write", "qps_read", "latency_ms_avg"})


def same_series(key: str, change: float, shown: list[tuple[str, float]]) -> bool:
    """A change that repeats one already said: both of THROUGHPUT_SERIES, its ratio equal
    to the shown one's or its inverse."""
    if key.split(".", 1)[-1] not in THROUGHPUT_SERIES:
        return False
    r = 1 + change / 100
    return any(k.split(".", 1)[-1] in THROUGHPUT_SERIES and (abs(r / (1 + s / 100) - 1) < 5e-4
                                                             or abs(r * (1 + s / 100) - 1) < 5e-4)
               for k, s in shown)


def by_phase(changes: list[tuple[str, float]], phases_shown: int = PHASES_SHOWN, per_phase: int | None = None,
             escape=markdown) -> str:
    """`full-scan: throughput −9.9 %, CPU per transaction +11.0 %; point: …` of (key, change %);
    a metric that repeats one already said in its phase is left out (the tables have it).
    `per_phase`: at most so many metrics a phase, then "and N more"."""
    phases: dict[str, list[str]] = {}
    said: dict[str, list[tuple[str, float]]] = {}
    for key, change in changes:
        phase = key.split(".", 1)[0]
        if same_series(key, change, said.setdefault(phase, [])):
            continue
        said[phase].append((key, change))
        phases.setdefault(phase, []).append(f"{metric_words(key)} {signed_percent(change)}")

    def metrics(words: list[str]) -> str:
        if per_phase is None or len(words) <= per_phase:
            return ", ".join(words)
        return ", ".join(words[:per_phase]) + f" and {len(words) - per_phase} more"
    shown = [f"{escape(phase)}: {metrics(words)}" for phase, words in list(phases.items())[:phases_shown]]
    more = len(phases) - phases_shown
    return "; ".join(shown) + (f"; and {more} more phase(s)" if more > 0 else "")


def what_changed(v: AbVerdict) -> str:
    judged = [m for m in v.metrics if m.judged]
    worse = [m for m in judged if m.verdict == Outcome.REGRESSION]
    if worse:
        phases: dict[str, list[str]] = {}
        for m in worse:
            phases.setdefault(m.key.split(".", 1)[0], []).append(change_words(m))
        shown = [f"{markdown(phase)}: {', '.join(words)}" for phase, words in list(phases.items())[:PHASES_SHOWN]]
        more = len(phases) - PHASES_SHOWN
        return "B is worse. " + "; ".join(shown) + (f"; and {more} more phase(s)" if more > 0 else "") + "."
    blind = f" (it could have missed up to {v.blind_below:.1%})" if v.blind_below else ""
    undecided = [m for m in judged if m.verdict == Outcome.INCONCLUSIVE]
    if undecided:
        return (f"no regression found in {len(judged)} judged metrics; {len(undecided)} not decided either way"
                f"{blind}.")
    better = [m for m in judged if m.verdict == Outcome.IMPROVEMENT]
    if better:
        return "B is better, nothing worse: " + ", ".join(
            f"{markdown(m.key.split('.', 1)[0])} {change_words(m)}" for m in better[:PHASES_SHOWN]) + f"{blind}."
    return f"nothing changed beyond its tolerance in {len(judged)} judged metrics{blind}."


def probability(p: float) -> str:
    """One notation for small probabilities."""
    return "under 0.0001" if p < 0.0001 else f"= {p:.4f}"


def how_sure(v: AbVerdict) -> str:
    judged = [m for m in v.metrics if m.judged]
    level = f"{v.alpha:.2%}" if v.alpha is not None else "the A/B's level"
    regressed = [m for m in judged if m.verdict == Outcome.REGRESSION]
    worse = [m.p_adjusted for m in regressed if m.p_adjusted is not None]
    if worse:
        p = min(worse)
        words = "very sure" if v.alpha is not None and p < v.alpha / 10 else "sure"
        return (f"{words}: p {probability(p)} after Holm over {len(judged)} judged metrics (flagged below {level}, "
                "the chance of any false regression in this A/B).")
    if regressed:  # paired rounds: an interval per metric, no adjusted p
        m = regressed[0]
        shown = f" [{m.low:.3f}, {m.high:.3f}]" if m.low is not None and m.high is not None else ""
        at = f"{m.confidence:.1%} " if m.confidence is not None else ""
        return (f"flagged by its {at}interval{shown} of B/A, beyond its tolerance; {v.sizing or 'paired rounds'}, "
                "each metric at that level (no correction over metrics).")
    if v.outcome == Outcome.INCONCLUSIVE:
        return f"not sure: the undecided metrics' intervals span their tolerance (decided at {level})."
    return f"sure of no change: every judged metric's interval lies within its tolerance (decided at {level})."


def opening(v: AbVerdict) -> list[str]:
    """The four lines, each labelled; what follows them is the report's own."""
    why = v.why_line or ("the same work ran (counted or not), nothing to explain" if v.outcome != Outcome.REGRESSION
                         else "no explain pass ran (`--explain never`, or it could not profile)")
    return [f"**What**: {what_changed(v)}", f"**How sure**: {how_sure(v)}", f"**Why**: {why}",
            f"**Reproduce**: {code_span(v.reproduce)}"]


def with_opening(report: str, v: AbVerdict) -> str:
    """REPORT with the four lines after its title line."""
    title, _, rest = report.partition("\n")
    return title + "\n\n" + "\n".join(f"- {line}" for line in opening(v)) + "\n\n" + rest.lstrip("\n")


def comparison_opening(comp: CaseComparison, against: str, reproduce: str) -> list[str]:
    """The four lines of one case of `compare` or `diff` (results against `against`: its
    baseline, or side A): what moved, how sure (each metric's interval at the
    comparison's level, no correction over metrics: say so), why (the counter that moved
    most; nothing is profiled here), and the command that runs it again."""
    judged = [r for r in comp.rows if r.verdict.verdict != Outcome.NO_BASELINE]
    level = f"{comp.rules.confidence:.1%}"
    flagged = comp.regressions
    if flagged:
        what = f"{by_phase([(r.key, r.verdict.change_pct or 0) for r in flagged])} (against {against})."
        sure = (f"each flagged metric's {level} interval of the ratio excludes no change and lies beyond its "
                f"tolerance; per metric, no correction over the {len(judged)} judged.")
    elif not judged:
        what, sure = f"nothing judged: no baseline ({against}).", "nothing to be sure of."
    else:
        undecided = [r for r in judged if r.verdict.verdict in (Outcome.INCONCLUSIVE, Outcome.UNSTABLE)]
        what = (f"nothing worse beyond its tolerance in {len(judged)} judged metrics, against {against}"
                + (f"; {len(undecided)} not decided either way." if undecided else "."))
        sure = (f"not sure for {len(undecided)}: their {level} intervals span their tolerance (too few runs, or "
                "noisy)." if undecided else f"each judged metric's change lies within its tolerance ({level} "
                "intervals).")
    moved = next((r for r in flagged if r.movers), None)
    if moved is not None:
        name, before, after = moved.movers[0]
        why = f"not profiled; the counter that moved most: {code_span(name)} {before:.4g} → {after:.4g} per transaction."
    elif flagged:
        why = "not profiled, and no counter moved beyond its noise: the same work may have taken longer."
    else:
        why = "nothing to explain."
    return [f"**What**: {what}", f"**How sure**: {sure}", f"**Why**: {why}",
            f"**Reproduce**: {code_span(reproduce) if reproduce else 'not recorded in the results'}"]


def bisect_opening(found: Bisection, metric: str, level: float, command: str) -> list[str]:
    """The four lines of a bisect's report: where it got slower (or why it could not
    say), how sure (the deciding A/B's interval, each A/B at `level` family-wise), why
    (the first slower step's explain pass, below when it ran), and the command."""
    final = next((s for s in reversed(found.steps) if (s.reference, s.candidate) == (found.last_good, found.first_bad)),
                 None)
    if found.first_bad and final is not None:
        what = (f"first slower in {code_span(found.first_bad)}: {metric_words(metric)} "
                f"{signed_percent((final.ratio - 1) * 100)} against {code_span(found.last_good or '')}.")
        sure = (f"its A/B's interval of B/A, [{final.low:.3f}, {final.high:.3f}], excludes no change (each A/B judged "
                f"at {level:.2%} family-wise); {len(found.steps)} A/Bs in all.")
    else:
        what = f"{markdown(found.summary())}."
        sure = ("sure there is no regression between the ends." if found.no_regression else
                f"not sure where: no single step decided it ({len(found.steps)} A/Bs, each at {level:.2%}).")
    why = ("the first slower step's explain pass, below." if found.first_bad else "no single step to explain.")
    return [f"**What**: {what}", f"**How sure**: {sure}", f"**Why**: {why}", f"**Reproduce**: {code_span(command)}"]


def sweep_opening(sweep: Sweep, level: float, command: str) -> list[str]:
    """The four lines of a sweep's report: which servers are slower than the base and
    where, how sure (each cell an A/B at `level`), why (the regressed cells' reports),
    and the command."""
    measured = [c for c in sweep.cells if c.status == "measured"]
    slower: dict[str, list[tuple[str, float]]] = {}
    for c in measured:
        for key in c.regressions:
            if key in c.ratios:
                slower.setdefault(c.server, []).append((key, (c.ratios[key].ratio - 1) * 100))
    if slower:
        what = "slower than the base " + code_span(sweep.servers[0]) + ": " + "; ".join(
            f"{code_span(server)} ({by_phase(changes, phases_shown=2, per_phase=2)})"
            for server, changes in list(slower.items())[:PHASES_SHOWN]) + "."
    else:
        what = f"no server slower than the base {code_span(sweep.servers[0])} in {len(measured)} A/Bs."
    undecided = sum(1 for c in measured for r in c.ratios.values() if r.verdict == "inconclusive")
    sure = (f"each cell an interleaved A/B judged at {level:.2%} family-wise"
            + (f"; {undecided} metric(s) not decided (n.s.: the MDE row says what each could see)." if undecided
               else "."))
    why = ("each slower cell's explain pass, below." if any(c.why for c in measured if c.regressions) else
           "not profiled." if slower else "nothing to explain.")
    return [f"**What**: {what}", f"**How sure**: {sure}", f"**Why**: {why}", f"**Reproduce**: {code_span(command)}"]
