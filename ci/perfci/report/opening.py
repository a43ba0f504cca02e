"""The four lines an A/B's report, its PR comment and its issue open with (#57), from the
typed verdict alone: what changed (in words and percent, with the sign of the change),
how sure (in words, with the level once), why (the top function, or where the change
shows), and the command that reproduces it. The tables follow them."""

from __future__ import annotations

from perfci.model.ab_verdict import AbMetric, AbVerdict
from perfci.model.verdicts import Outcome
from perfci.util.text import code_span, markdown

# what people call a metric (the key's second part); anything else keeps its key's name
WORDS = {"tps": "throughput", "qps": "queries/s", "qps_write": "writes/s", "qps_read": "reads/s",
         "latency_ms_avg": "latency", "latency_ms_p95": "p95 latency", "latency_ms_p99": "p99 latency",
         "cpu_us_per_txn": "CPU per transaction", "server_cpu_us_per_txn": "server CPU per transaction",
         "instructions_per_txn": "instructions per transaction", "fsyncs_per_txn": "fsyncs per transaction",
         "pages_written_per_txn": "pages written per transaction"}
PHASES_SHOWN = 3
LABELS = ("What", "How sure", "Why", "Reproduce")


def metric_words(key: str) -> str:
    """A key's metric as people call it (`full-scan.tps` -> throughput)."""
    name = key.split(".", 1)[-1]
    return WORDS.get(name, name.replace("_", " "))


def percent(change: float) -> str:
    return f"{'+' if change >= 0 else '−'}{abs(change):.1f} %"


def change_words(m: AbMetric) -> str:
    """`throughput −9.9 %`: the metric in words, B against A in percent with its sign (a
    change of 2x or more as the two values and the factor: +999900 % says nothing)."""
    ratio = m.ratio if m.ratio is not None else (m.b / m.a if m.a else None)
    if ratio is None:
        return f"{metric_words(m.key)} {m.a:.4g} → {m.b:.4g}"
    if ratio >= 2 or ratio <= 0.5:
        return f"{metric_words(m.key)} {m.a:.3g} → {m.b:.3g} (×{ratio:.3g})"
    return f"{metric_words(m.key)} {percent((ratio - 1) * 100)}"


def by_phase(changes: list[tuple[str, float]]) -> str:
    """`full-scan: throughput −9.9 %, CPU per transaction +11.0 %; point: …` of (key, change %)."""
    phases: dict[str, list[str]] = {}
    for key, change in changes:
        phases.setdefault(key.split(".", 1)[0], []).append(f"{metric_words(key)} {percent(change)}")
    shown = [f"{markdown(phase)}: {', '.join(words)}" for phase, words in list(phases.items())[:PHASES_SHOWN]]
    more = len(phases) - PHASES_SHOWN
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
