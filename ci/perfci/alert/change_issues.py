"""Issues for persisting changes (judge/changes.py): a comment on the case's open
issue, or an issue of the case's own fingerprint (one per case, see issues.py)."""

from __future__ import annotations

from pathlib import Path

from perfci.alert.github import GitHub, Issue, body_of, login
from perfci.alert.regression_issues import (
    FINGERPRINT_RE,
    REGRESSION_MARK,
    TRIAGE_HELP,
    Record,
    fingerprint,
    headline_title,
    ignore_night,
    labels_for,
    markers,
    metric_fingerprint,
)
from perfci.judge.budget import IssueBudget
from perfci.judge.changes import Change, persisting_changes
from perfci.judge.compare import CaseComparison, MetricRow, moved_counters
from perfci.model.history import HistoryRecord
from perfci.model.identity import CaseIdentity, slug
from perfci.model.outputs import CaseNight
from perfci.report.table import signed_percent, table
from perfci.store.history_files import Histories, case_history
from perfci.util.files import write_atomic
from perfci.util.text import code_fence, code_span, markdown

CHANGE_MARK = "<!-- perfci-change: {} -->"
SPARKS = "▁▂▃▄▅▆▇█"


def sparkline(values: list[float], mark: int) -> str:
    low, high = min(values), max(values)
    span = (high - low) or 1.0
    cells = [SPARKS[min(int((v - low) / span * len(SPARKS)), len(SPARKS) - 1)] for v in values]
    return "".join(cells[:mark]) + "|" + "".join(cells[mark:])


def _versions(records: list[HistoryRecord]) -> str:
    seen = list(dict.fromkeys(r.server_version or "?" for r in records))
    return ", ".join(code_span(v) for v in seen)


def _commits(records: list[HistoryRecord]) -> str:
    seen = list(dict.fromkeys((r.harness_sha or "?")[:12] for r in records))
    return ", ".join(code_span(v) for v in seen)


def change_text(case: CaseIdentity, change: Change, reproduce: str, site_url: str = "", level: str = "") -> list[str]:
    """The Markdown lines of a change point, for an issue body or a comment; `level`: what
    it was judged at (IssueBudget.said)."""
    fmt = lambda records: f"{change.mean(records):.4g}"  # noqa: E731
    loc = change.location
    lines = [
        CHANGE_MARK.format(loc.result_id),
        f"**{change.key}** changed by {signed_percent(change.change_pct)} at {code_span(loc.result_id)} "
        f"({markdown(loc.date[:10])}; change point of the nightly history, E-Divisive means): "
        f"{fmt(change.before)} over {len(change.before)} nights before -> {fmt(change.after)} over "
        f"{len(change.after)} nights after; the newest {len(change.now)} nights: {fmt(change.now)} "
        f"(tolerance ±{change.spec.tolerance:.0%}, {change.spec.direction} is better).",
        "",
        f"- case: {markdown(case.label)}",
        f"- server before: {_versions(change.before)} · from the change on: {_versions(change.after)}",
        f"- perfci commit before: {_commits(change.before)} · after: {_commits(change.after)}",
        f"- nights: {code_span(sparkline(change.series, change.index))} (`|` marks the change)",
        f"- the step against every split of those nights in random orders: p = {change.p:.2g}"
        + (f", {level}" if level else ""),
    ]
    if site_url:
        lines.append(f"- plot: {markdown(site_url.rstrip('/') + '/' + case.slug_path + '.html')}")
    phase = change.key.split(".", 1)[0]
    movers = moved_counters(phase, [r.counters for r in change.after], [r.counters for r in change.before])
    if movers and phase != "headline":
        lines += ["", "Counters per transaction that moved most (mean before -> after):", "",
                  *table(["counter", "before", "after"], ([code_span(n), f"{b:.4g}", f"{c:.4g}"] for n, b, c in movers))]
    lines += ["", "Reproduce tonight's run:", "", code_fence(reproduce, "sh")]
    return lines


def title_for(case: CaseIdentity, change: Change) -> str:
    return headline_title(case, [(change.key, change.change_pct)], f" since {change.location.date[:10]} (change point)")


def _told(gh: GitHub, issue: Issue, mark: str) -> bool:
    """Has this issue (body or perfci's comments) already reported the change?"""
    if mark in body_of(issue):
        return True
    return any(mark in body_of(c) for c in gh.comments(issue["number"]) if login(c) == login(issue))


def sync_changes(comparisons: list[CaseComparison], history_root: Path | Histories, gh: GitHub | None = None,
                 dry_run_dir: Path | None = None, site_url: str = "", budget: IssueBudget = IssueBudget(),
                 record: Record = ignore_night) -> list[str]:
    """A change point is a comment on its case's open issue (one conversation per case),
    else an issue of its own (which is then the case's issue); a change any issue of the
    case (open or closed) has reported is not reported again. Change points are called at
    the budget's level for them per case and night."""
    actions: list[str] = []
    known = gh.issues("all") if gh else []
    for comp in comparisons:
        if comp.skipped or not comp.rows:
            continue
        case = comp.identity
        tonight = comp.results[0]
        records = case_history(history_root, case).usable(tonight.scenario.hash)
        for row in comp.rows:
            for change in persisting_changes(records, row.key, row.spec, len(comp.rows), alpha=budget.level("change")):
                actions += _report(case, row, change, tonight.reproduce, known, gh, dry_run_dir, site_url,
                                   budget.said("change", len(comp.rows)), record)
    return actions


def _report(case: CaseIdentity, row: MetricRow, change: Change, reproduce: str, known: list[Issue],
            gh: GitHub | None, dry_run_dir: Path | None, site_url: str, level: str = "",
            record: Record = ignore_night) -> list[str]:
    fp = fingerprint(case)
    mark = CHANGE_MARK.format(change.location.result_id)
    text = change_text(case, change, reproduce, site_url, level)
    body = "\n".join([*markers(fp, case, change.location.result_id), REGRESSION_MARK, *text, "", TRIAGE_HELP, ""])
    if gh is None:
        path = Path(dry_run_dir or ".") / f"{fp}-change-{slug(row.key)}-{change.index}.md"
        write_atomic(path, f"# {title_for(case, change)}\n\nlabels: {', '.join(labels_for(case))}\n\n{body}")
        record(CaseNight(case=case.slug_path, status="written", keys=[row.key], why=f"a change point: {path}"))
        return [f"wrote {path}"]
    # the case's issue, or one an older perfci opened for this metric alone
    ours = {fp, metric_fingerprint(case, row.key)}
    same = [i for i in known if (m := FINGERPRINT_RE.search(body_of(i))) and m.group(1) in ours]
    if any(_told(gh, i, mark) for i in same):
        return []
    open_ones = [i for i in same if i.get("state") == "open"]
    open_one = next((i for i in open_ones if f"perfci-fingerprint: {fp}" in body_of(i)), next(iter(open_ones), None))
    if open_one is not None:
        gh.comment(open_one["number"], "\n".join(["Change point found in the nightly history:", "", *text]))
        record(CaseNight(case=case.slug_path, status="commented", issue=open_one["number"], keys=[row.key],
                         why="a change point"))
        return [f"change point of {row.key} at {change.location.result_id}: commented on #{open_one['number']}"]
    created = gh.create(title_for(case, change), body, labels_for(case))
    known.append(created)
    record(CaseNight(case=case.slug_path, status="opened", issue=created.get("number"), keys=[row.key],
                     why="a change point"))
    return [f"opened #{created.get('number')} (change point of {row.key} at {change.location.result_id})"]
