"""Regression issues on GitHub through the GitHub CLI (`gh api`, REST).

One issue per case (runner class, server line, scenario, profile, case): its
fingerprint is kept in a hidden marker in the body, and every metric of the case
that regressed that night is in it (one slowdown moves tps, latency and the
counters together: one conversation, not one per metric). A repeated regression
comments on the open issue; after K consecutive clean nights of the case the issue
gets a comment and is closed. Issues opened per metric by an older perfci are
closed with a pointer the night their case's issue is written, or by their own
clean nights. `dry_run_dir` writes the issue Markdown to files instead (used under act).
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

from perfci.alert.github import ACCEPT_LABEL, LABEL, Comment, GitHub, Issue, body_of, capped_label, login
from perfci.judge.budget import IssueBudget
from perfci.judge.compare import CaseComparison, MetricRow, Rules
from perfci.judge.stats import RatioEstimate, estimate_p, ratio_interval
from perfci.model.ab_verdict import SideArgs, ab_command
from perfci.model.abratio import AbRatio
from perfci.model.confirmation import Confirmation
from perfci.model.history import CaseHistory
from perfci.model.identity import CaseIdentity
from perfci.model.metrics import WORK_METRIC, default_spec, is_work_counter
from perfci.model.outputs import CaseNight
from perfci.model.verdicts import Outcome
from perfci.providers.servers import id_of_spec, load_servers, resolve_server
from perfci.providers.spec import parse_spec
from perfci.report.markdown import metric_change
from perfci.report.opening import by_phase
from perfci.report.plots import mermaid_intervals
from perfci.report.reference_ab import markdown_section
from perfci.report.table import change_cell, signed_percent, table
from perfci.store import flame_files
from perfci.store.history_files import Histories, case_history
from perfci.util.errors import BadInput
from perfci.util.files import write_atomic
from perfci.util.text import code_fence, code_span, inert_markdown, issue_title, markdown, web_link

FINGERPRINT_RE = re.compile(r"<!-- perfci-fingerprint: ([0-9a-f]{16}) -->")
CASE_RE = re.compile(r"<!-- perfci-case: ([\w./-]+) -->")
SINCE_RE = re.compile(r"<!-- perfci-since: ([\w.:=+-]+) -->")
REGRESSION_MARK = "<!-- perfci-regression -->"
CLEAN_MARK = "<!-- perfci-clean -->"
DEFAULT_CLOSE_AFTER = 3
TRIAGE_HELP = (f"Expected? Add the label `{ACCEPT_LABEL}` or comment `/perfci accept` (a collaborator): the next nightly "
               "resets this case's baseline at the first regressed night and closes the issue.")


Record = Callable[[CaseNight], None]  # where a case's night is told (the nightly's summary)


def ignore_night(_: CaseNight) -> None:
    return None


def fingerprint(case: CaseIdentity) -> str:
    """The case's issue; stable across patch upgrades (the case identity follows the server line)."""
    return hashlib.sha256(case.key().encode()).hexdigest()[:16]


def metric_fingerprint(case: CaseIdentity, metric_key: str) -> str:
    """The issue of one metric of a case, as perfci opened them before one issue per case."""
    return hashlib.sha256(case.key(metric_key).encode()).hexdigest()[:16]


def labels_for(case: CaseIdentity) -> list[str]:
    return [LABEL, capped_label(f"scenario:{case.scenario}"), capped_label(f"server:{case.server}")]


def lead_first(rows: list[MetricRow]) -> list[MetricRow]:
    """Regressed rows in the scenario's order (its headline metrics first), the counters
    of the work-changed gate after them: the first leads the title and the body."""
    return sorted(rows, key=lambda r: r.gate == "work")


def headline_title(case: CaseIdentity, changes: list[tuple[str, float]], since: str = "", kind: str = "") -> str:
    """An issue's title, the decision first: "microbench full-scan: throughput −9.9 % since
    6fcb623 (mariadb-10.11, nightly, local)" of (key, change %), the lead first; `kind`
    prefixes what is not a server regression ("Runner or harness drift: …"). Case ids
    carry axis values from scenario files: no mentions, one line."""
    where = ", ".join([case.server, case.series_profile, *([case.case] if case.case != "default" else []),
                       case.runner_class])
    said = by_phase(changes, phases_shown=1, per_phase=2, escape=str)
    lead_phase = changes[0][0].split(".", 1)[0] if changes else ""
    name = "" if lead_phase == case.scenario else f"{case.scenario} "  # a one-phase scenario named for its phase
    return issue_title(f"{kind + ': ' if kind else ''}{name}{said}{since} ({where})")


def title_for(case: CaseIdentity, rows: list[MetricRow], confirmation: Confirmation | None = None) -> str:
    kind = ("Runner or harness drift" if confirmation is not None and confirmation.unchanged_server else
            "Work changed" if all(r.gate == "work" for r in rows) else "")
    return headline_title(case, [(r.key, r.verdict.change_pct or 0) for r in rows], since_commit(confirmation), kind)


def markers(fp: str, case: CaseIdentity, since: str) -> list[str]:
    """Hidden lines that identify an issue: its fingerprint, the case (as history names
    it) and the first night of the regression (where an accepted one resets the baseline)."""
    return [f"<!-- perfci-fingerprint: {fp} -->", f"<!-- perfci-case: {case.slug_path} -->",
            f"<!-- perfci-since: {since} -->"]


def regressed_table(rows: list[MetricRow]) -> list[str]:
    return table(["metric", "change [interval]", "tolerance", "judged as"],
                 ([code_span(r.key), metric_change(r), f"±{r.spec.tolerance:.0%}",
                   "work per transaction" if r.gate == "work" else "metric"] for r in rows))


def issue_opening(comp: CaseComparison, rows: list[MetricRow], confirmation: Confirmation | None,
                  site_url: str = "") -> list[str]:
    """The four lines the issue opens with (report/opening.py's, for a night): what moved,
    how sure (the night alone, or the reference A/B that confirmed it), why, reproduce."""
    what = (f"{by_phase([(r.key, r.verdict.change_pct or 0) for r in rows])}, tonight against its baseline "
            f"({len(rows[0].baseline)} samples).")
    level = f"{comp.rules.confidence:.1%}"
    c = confirmation
    if c is not None and c.status == "confirmed":
        sure = ("sure: an interleaved A/B against the reference night's server on this runner confirmed it"
                + (f" (its level {c.alpha:.2%})" if c.alpha is not None else "") + ".")
    elif c is not None and c.status == "not-confirmed":
        sure = f"not sure: the A/B against the reference did not confirm it ({markdown(c.reason)})."
    else:
        why_not = f" ({markdown(c.reason)})" if c is not None and c.reason else ""
        sure = (f"the night alone: its {level} interval excludes no change; no A/B confirmed it yet{why_not}.")
    moved = next((r for r in rows if r.movers), None)
    if c is not None and c.why_line:
        why = inert_markdown(c.why_line)
    elif moved is not None:
        name, before, after = moved.movers[0]
        why = f"not profiled; the counter that moved most: {code_span(name)} {before:.4g} → {after:.4g} per transaction."
    else:
        why = "not explained yet (no A/B ran, or it profiled nothing)."
    if c is not None and c.status == "confirmed":
        why += flame_links(comp, c, site_url)
    return [f"**What**: {what}", f"**How sure**: {sure}", f"**Why**: {why}",
            f"**Reproduce**: {code_span(comp.results[0].reproduce)}"]


def body_for(comp: CaseComparison, rows: list[MetricRow], fp: str, run_url: str,
             confirmation: Confirmation | None = None, since: str = "", level: str = "", site_url: str = "") -> str:
    """The issue of a case whose `rows` (lead first) regressed tonight."""
    first = comp.results[0]
    lead = rows[0]
    lines = [
        *markers(fp, comp.identity, since or first.id),
        REGRESSION_MARK,
        *(f"- {line}" for line in issue_opening(comp, rows, confirmation, site_url)),
        "",
        f"**{lead.key}** regressed: {metric_change(lead)} against its baseline ({comp.rules.confidence:.1%} "
        f"interval, tolerance ±{lead.spec.tolerance:.0%}, {'higher' if lead.spec.direction == 'higher' else 'lower'} "
        "is better)"
        + (f", with {len(rows) - 1} more metric{'s' if len(rows) > 2 else ''} of this case (table below)."
           if len(rows) > 1 else "."),
        *([f"Counters the noise model found deterministic under this fixed work moved "
           f"({', '.join(code_span(r.key) for r in rows if r.gate == 'work')}): the run did more work per "
           f"transaction than its baseline (the work-changed gate, family-wise {1 - comp.rules.confidence:.1%} "
           "over its counters)."] if any(r.gate == "work" for r in rows) else []),
        *([f"The server, its build and its config are the reference night's ({code_span(confirmation.a)}, "
           f"{markdown(confirmation.reference_version)}): what moved is this runner, perfci or the data, not the "
           "server. Look at the runner first (`perfci doctor`, the host check in the run's artifacts) and at the "
           "same case on another runner of the class."]
          if confirmation is not None and confirmation.unchanged_server else []),
        "",
        # every text from a scenario or a result file is escaped or in a code span
        f"- case: {markdown(comp.label)}",
        "- current: " + ", ".join(code_span(r.id) for r in comp.results),
        f"- baseline: {code_span(str(comp.baseline_file))} ({len(lead.baseline)} samples)",
        f"- server: {markdown(first.server.full_version or first.server.version)}"
        + (f" built from commit {code_span(first.server.commit)}" if first.server.commit else "") + " · scenario hash "
        f"{code_span(first.scenario.hash[:19] + '…')}",
        f"- host: {code_span(first.host.hostname)} ({markdown(first.host.cpu_model)}, {first.host.cpus} CPUs)",
    ]
    if level:
        lines.append(level)
    if run_url:
        lines.append(f"- run and artifacts: {markdown(run_url)}")
    lines += ["", "Regressed tonight:", "", *regressed_table(rows)]
    moved = next((r for r in rows if r.movers), None)
    if moved is not None:
        lines += ["", f"Counters per transaction that moved most (phase {code_span(moved.key.split('.', 1)[0])}):", "",
                  *table(["counter", "baseline", "current"],
                         ([code_span(n), f"{b:.4g}", f"{c:.4g}"] for n, b, c in moved.movers))]
    if chart := mermaid_intervals(comp, only=lead.key.split(".", 1)[0]):
        lines += ["", "<details><summary>tps per interval, tonight against the baseline</summary>", "", *chart,
                  "</details>"]
    if confirmation is not None:
        lines += markdown_section(confirmation) + which_release(first.scenario.name, confirmation, first.case, lead.key)
    lines += ["", "Reproduce:", "", code_fence(first.reproduce, "sh"), "", TRIAGE_HELP, ""]
    return "\n".join(lines)


def streak_values(comp: CaseComparison, rows: list[MetricRow], hist: CaseHistory | None) -> dict[str, list[float]]:
    """Per regressed metric, its values on every night the regression has lasted (the
    history's streak, then tonight's): the evidence an unconfirmed issue is judged on."""
    out = {}
    for row in rows:
        nights = set(regressed_since(comp, row, hist)[:-1])
        earlier = [r.metrics[row.key] for r in (hist.records if hist else []) if r.result_id in nights
                   and row.key in r.metrics]
        out[row.key] = [*earlier, *row.current]
    return out


def below_budget(rows: list[MetricRow], judged: int, budget: IssueBudget,
                 streaks: dict[str, list[float]] | None = None, rules: Rules = Rules()) -> str | None:
    """Why threshold regressions no A/B confirmed open no issue yet (None: they do): none
    of them is significant at the thresholds' share of the false-issue budget, shared
    over the case's judged metrics (Bonferroni), its nights so far (`streaks`: the values
    of every night it has lasted, else tonight's) together against the baseline — one
    test per metric and night, so the union bound holds. A regression that lasts is still
    seen: by more nights, its change point, or a reference A/B."""
    level = budget.level("threshold") / max(judged, 1)
    tested = [r for r in rows if t_tested(r.key)]
    ps = [p for r in tested if (est := _evidence(r, (streaks or {}).get(r.key), rules)) is not None
          and (p := estimate_p(est)) is not None]
    if any(p <= level for p in ps):
        return None
    keys = ", ".join(r.key for r in rows)
    if not tested:
        return (f"pending: {keys} regressed: work counters alone open no issue no A/B confirmed (their nights are "
                f"not normal enough for a t test at {level:.2g} per metric); a lasting step opens one by its change "
                f"point: {budget.said('threshold', judged)}")
    best = f" (smallest p {min(ps):.2g})" if ps else ""
    return (f"pending: {keys} regressed{best}, above the {level:.2g} per metric an issue "
            f"no A/B confirmed needs: {budget.said('threshold', judged)}")


def t_tested(key: str) -> bool:
    """Whether a threshold regression of `key` can open an issue on its own t test at the
    thresholds' share. Not a work counter: between real runs of one case their spread is
    wide and far from normal (compression failures and uncompress operations per
    transaction 18-26 % between the kept A/As' instances, Shapiro p down to 10^-7), and a
    t test at 10^-5 reads that tail as a step: in the month simulation counters made 25 of
    its 37 threshold alarms (benchmarks/results/month-simulation-20261127-nights7.md). A
    counter's lasting step still opens an issue by its change point (a permutation test:
    no normality assumed), or with an A/B."""
    return not is_work_counter(key)


def _evidence(row: MetricRow, values: list[float] | None, rules: Rules) -> RatioEstimate | None:
    """The ratio estimate of a regression over the nights it has lasted (one night: tonight's
    verdict's), with the spread floor and prior the comparison's verdicts use."""
    est = row.verdict.estimate
    if not values or len(values) <= len(row.current) or est is None or not row.baseline or min(values) <= 0:
        return est
    rules = row.rules or rules
    return ratio_interval(values, row.baseline, est.confidence, rules.cv_floor, rules.prior_cv, rules.prior_df)


def level_line(budget: IssueBudget, comp: CaseComparison, confirmation: Confirmation | None) -> str:
    """The issue's line on the level it was judged at: the reference A/B's when one
    confirmed it (its recorded level), else the thresholds'."""
    if confirmation is None:
        return f"- level: {budget.said('threshold', len(comp.rows))}"
    ran = (f" (this A/B ran at {confirmation.alpha:.3%} family-wise)" if confirmation.alpha is not None
           and abs(confirmation.alpha - budget.level("ab")) > 1e-12 else "")
    return f"- level: the reference A/B {budget.said('ab')}{ran}"


def open_by_fingerprint(gh: GitHub) -> dict[str, Issue]:
    """Open perf-regression issues by the fingerprint in their body."""
    found: dict[str, Issue] = {}
    for issue in gh.issues("open"):
        m = FINGERPRINT_RE.search(body_of(issue))
        if m:
            found[m.group(1)] = issue
    return found


def clean_streak(comments: list[Comment], author: str | None) -> int:
    """The clean nights perfci's clean-run comments count since its last regression comment
    (one comment edited each night names them all; older ones, one each). Only comments by
    the issue's author (the account perfci opened it with) count: anyone can paste a
    marker into a comment to close an issue."""
    streak = 0
    for c in comments:
        if author is None or login(c) != author:
            continue
        body = body_of(c)
        if REGRESSION_MARK in body:
            streak = 0
        elif CLEAN_MARK in body:  # the nights it names (a comment of an older perfci: one)
            streak += len(NIGHT_RE.findall(body)) or 1
    return streak


def _unconfirmed(comp: CaseComparison, confirmation: Confirmation | None, actions: list[str],
                 record: Record = ignore_night) -> bool:
    """A regression the confirmation A/B did not see opens no issue (and counts as no clean run)."""
    if confirmation is None or confirmation.status != "not-confirmed":
        return False
    actions += [f"not opened: {row.key} was not confirmed by the A/B ({confirmation.a} vs {confirmation.b})"
                for row in comp.regressions]
    if comp.regressions:
        record(CaseNight(case=comp.identity.slug_path, status="not-confirmed", keys=[r.key for r in comp.regressions],
                         why=f"the A/B ({confirmation.a} vs {confirmation.b}) did not confirm it"))
    return True


def regressed_since(comp: CaseComparison, row: MetricRow, hist: CaseHistory | None) -> list[str]:
    """The nights (result ids, oldest first) this regression has lasted: tonight and the
    history's consecutive nights before it that regressed on the same metric."""
    tonight = comp.results[0]
    if hist is None:
        return [tonight.id]
    return [*hist.regressed_streak(row.key, tonight.scenario.hash, skip=tonight.id), tonight.id]


def sync(comparisons: list[CaseComparison], run_url: str = "", repo: str | None = None,
         dry_run_dir: Path | None = None, close_after: int = DEFAULT_CLOSE_AFTER,
         confirmations: dict[str, Confirmation] | None = None, history_root: Path | Histories | None = None,
         min_nights: int = 1, gh: GitHub | None = None, standing: dict[str, list[str]] | None = None,
         budget: IssueBudget | None = None, record: Record = ignore_night, site_url: str = "") -> list[str]:
    """Open, update or close the issue of each case; returns one line per action taken.
    `confirmations` (by result id, from `perfci confirm`): a regression whose A/B did not
    confirm it opens nothing; the others carry their A/B in the issue. With
    `history_root`, a new issue needs a metric regressed on `min_nights` consecutive
    nights (a one-night spike opens none), unless an A/B confirmed it tonight (a second,
    independent measurement). `standing` (by result id): keys whose regression stands
    tonight in the history (a persisting change point), worse against tonight's baseline
    or not: an open issue on them is still worse, not a clean night. `budget` (the
    nightly's, `perfci issues sync`'s): a threshold regression no A/B confirmed opens an
    issue only at the thresholds' share of it (below_budget), and every issue says the
    level it was judged at; None: neither. `record` is told each case's night (CaseNight).
    `site_url`: the dashboard, where a confirmed regression's flame graphs are linked."""
    actions: list[str] = []
    confirmations = confirmations or {}
    standing = standing or {}
    if dry_run_dir is None:
        gh = gh or GitHub(repo or os.environ.get("GITHUB_REPOSITORY", ""), run_url)
    open_issues = open_by_fingerprint(gh) if gh else {}
    for comp in comparisons:
        confirmation = confirmations.get(comp.results[0].id) if comp.results else None
        if _unconfirmed(comp, confirmation, actions, record):
            continue
        stands = set(standing.get(comp.results[0].id, [])) if comp.results else set()
        posted, said = _sync_case(comp, confirmation, gh, dry_run_dir, open_issues, close_after, run_url,
                                  history_root, min_nights, stands, budget, record, site_url)
        actions += said
        if gh:
            actions += _per_metric_issues(comp, gh, open_issues, posted, close_after, run_url, record)
    return actions


def _sync_case(comp: CaseComparison, confirmation: Confirmation | None, gh: GitHub | None,
               dry_run_dir: Path | None, open_issues: dict[str, Issue], close_after: int, run_url: str,
               history_root: Path | Histories | None, min_nights: int,
               stands: set[str] | None = None, budget: IssueBudget | None = None,
               record: Record = ignore_night, site_url: str = "") -> tuple[int | None, list[str]]:
    """One case's night on its issue: (the issue written tonight, if any; what was done)."""
    case = comp.identity
    fp = fingerprint(case)
    issue = open_issues.get(fp)
    regressed = lead_first(comp.regressions)
    if regressed:
        # read once per case, and only when something regressed
        hist = case_history(history_root, case) if history_root is not None else None
        nights = max((regressed_since(comp, row, hist) for row in regressed), key=len)
        confirmed = confirmation is not None and confirmation.status == "confirmed"
        keys = ", ".join(r.key for r in regressed)
        if issue is None and len(nights) < min_nights and not confirmed:
            why = f"regressed on {len(nights)} of the {min_nights} consecutive nights an issue needs"
            record(CaseNight(case=case.slug_path, status="pending", keys=[r.key for r in regressed], why=why))
            return None, [f"pending: {keys} {why}"]
        if budget and issue is None and not confirmed and (
                short := below_budget(regressed, len(comp.rows), budget, streak_values(comp, regressed, hist),
                                      comp.rules)):
            record(CaseNight(case=case.slug_path, status="pending", keys=[r.key for r in regressed],
                             why=short.removeprefix("pending: ")))
            return None, [short]
        body = body_for(comp, regressed, fp, run_url, confirmation, since=nights[0],
                        level=level_line(budget, comp, confirmation if confirmed else None) if budget else "",
                        site_url=site_url)
        return _post(gh, dry_run_dir, open_issues, fp, title_for(case, regressed, confirmation), body, case,
                     [r.key for r in regressed], record, tonight_line(comp, regressed, run_url))
    ab_keys = _ab_only_keys(comp, confirmation)
    if ab_keys and confirmation is not None:
        body = ab_body_for(comp, ab_keys, confirmation, fp, run_url,
                           level_line(budget, comp, confirmation) if budget else "", site_url)
        return _post(gh, dry_run_dir, open_issues, fp, ab_title_for(case, ab_keys, confirmation), body, case,
                     ab_keys, record, f"{REGRESSION_MARK}\nStill regressed in {code_span(comp.results[0].id)}: the "
                     f"reference A/B again found {', '.join(code_span(k) for k in ab_keys)} worse. {run_url}".rstrip())
    if gh is None or issue is None:
        return None, []
    # beyond tolerance, inconclusive alone, or on a change point that persists: not clean, still there
    worse = [r for r in comp.rows if r.worse or r.key in (stands or set())]
    if worse:
        tonight = comp.results[0]
        said = ", ".join(f"{r.key} {signed_percent(r.verdict.change_pct or 0)} "
                         f"({r.verdict.reason if r.worse else 'its change point over the nights persists'})"
                         for r in worse)
        gh.comment(issue["number"], f"{REGRESSION_MARK}\nStill worse against the baseline in {code_span(tonight.id)} "
                                    f"(server {markdown(tonight.server.full_version or tonight.server.version)}): "
                                    f"{markdown(said)}. {run_url}".rstrip())
        record(CaseNight(case=case.slug_path, status="commented", issue=issue["number"], keys=[r.key for r in worse],
                         why="still worse"))
        return None, [f"still worse: commented on #{issue['number']} ({', '.join(r.key for r in worse)})"]
    if any(r.verdict.verdict in (Outcome.UNCHANGED, Outcome.IMPROVEMENT) for r in comp.rows):
        return None, [clean_night(gh, issue, "no metric of the case regressed or stayed worse", close_after, run_url,
                                  comp.results[0].id, record, case.slug_path)]
    return None, []


def _per_metric_issues(comp: CaseComparison, gh: GitHub, open_issues: dict[str, Issue], posted: int | None,
                       close_after: int, run_url: str, record: Record = ignore_night) -> list[str]:
    """Issues an older perfci opened per metric of this case: closed with a pointer once
    the case's own issue carries the regression; else they count their clean nights."""
    actions = []
    for row in comp.rows:
        issue = open_issues.get(metric_fingerprint(comp.identity, row.key))
        if issue is None or issue.get("state") == "closed":
            continue
        if posted is not None and posted != issue["number"]:
            gh.comment(issue["number"], f"perfci keeps one issue per case now, with every metric that regressed: "
                                        f"this case continues in #{posted}.")
            gh.close(issue["number"])
            issue["state"] = "closed"
            actions.append(f"closed #{issue['number']} ({row.key}): continues in #{posted}")
        elif posted is None and row.verdict.verdict in (Outcome.UNCHANGED, Outcome.IMPROVEMENT):
            actions.append(clean_night(gh, issue, f"{row.key} {row.verdict.verdict}", close_after, run_url,
                                       comp.results[0].id, record, comp.identity.slug_path))
    return actions


def _ab_only_keys(comp: CaseComparison, confirmation: Confirmation | None) -> list[str]:
    """Regressions the reference A/B found where the threshold saw none (a few percent,
    inside the nights' noise), in the A/B's order (the scenario's): the A/B is the measurement."""
    if confirmation is None or confirmation.status != "confirmed" or not comp.results:
        return []
    return [k for k in confirmation.ab_regressions if k in confirmation.ratios]


def tonight_line(comp: CaseComparison, rows: list[MetricRow], run_url: str) -> str:
    """A still-regressed night's comment: one line with tonight's numbers (the issue's
    body, edited, holds the whole report)."""
    said = ", ".join(f"{code_span(r.key)} {signed_percent(r.verdict.change_pct or 0)}" for r in rows)
    return f"{REGRESSION_MARK}\nStill regressed in {code_span(comp.results[0].id)}: {said}. {run_url}".rstrip()


def _post(gh: GitHub | None, dry_run_dir: Path | None, open_issues: dict[str, Issue], fp: str, title: str, body: str,
          case: CaseIdentity, keys: list[str], record: Record = ignore_night,
          still: str = "") -> tuple[int | None, list[str]]:
    """Open the issue of `fp`; on the open one, its body becomes tonight's report and a
    one-line comment says tonight's numbers (`still`). A dry run writes a file."""
    issue = open_issues.get(fp)
    if gh is None:
        path = Path(dry_run_dir or ".") / f"{fp}.md"
        write_atomic(path, f"# {title}\n\nlabels: {', '.join(labels_for(case))}\n\n{body}")
        record(CaseNight(case=case.slug_path, status="written", keys=keys, why=str(path)))
        return None, [f"wrote {path}"]
    if issue:
        gh.edit_issue(issue["number"], body)
        gh.comment(issue["number"], still)
        record(CaseNight(case=case.slug_path, status="commented", issue=issue["number"], keys=keys))
        return issue["number"], [f"commented on #{issue['number']} ({', '.join(keys)})"]
    created = gh.create(title, body, labels_for(case))
    open_issues[fp] = created
    record(CaseNight(case=case.slug_path, status="opened", issue=created.get("number"), keys=keys))
    return created.get("number"), [f"opened #{created.get('number')} ({', '.join(keys)})"]


def since_commit(c: Confirmation | None) -> str:
    """A title's " since COMMIT" when the night's search named the first slower commit."""
    return f" since {_short(c.culprit.first_bad)[:7]}" if c is not None and c.culprit and c.culprit.first_bad else ""


def ab_title_for(case: CaseIdentity, keys: list[str], c: Confirmation) -> str:
    """A regression only the reference A/B saw: its B/A changes, then "(A/B vs reference)"."""
    return headline_title(case, [(k, (c.ratios[k].ratio - 1) * 100) for k in keys],
                          f"{since_commit(c)} (A/B vs reference)".rstrip())


def reproduce_ab(scenario: str, c: Confirmation, case: str) -> str:
    """The `perfci ab` that reruns the reference A/B (specs as recorded: ids of servers.yaml or pinned specs)."""
    a, b = confirmed_sides(c)
    return ab_command(scenario, c.profile, a, b, case)


def confirmed_sides(c: Confirmation) -> tuple[SideArgs, SideArgs]:
    """The reference A/B's sides, typed (a confirmation of /7 and later has them; the
    upgrade types older ones from their text)."""
    return (c.a_run or SideArgs.legacy(c.a) or SideArgs(server=c.a),
            c.b_run or SideArgs.legacy(c.b) or SideArgs(server=c.b))


def bisect_command(scenario: str, c: Confirmation, case: str, key: str) -> tuple[str, list[str]] | None:
    """The `perfci bisect` from the reference's server to tonight's and the releases
    between them, when servers.yaml orders both (one flavor, each with its `version`)
    and at least one release lies between; or, when both are build: specs of one
    flavor at different refs, the bisect over the commits between them (listed when it
    runs: this job has no source tree). None when neither, or when a side carries config
    overrides (a bisect walks servers, not configs)."""
    a, b = confirmed_sides(c)
    if a.config or b.config:
        return None
    try:
        servers = load_servers()
        builds = [parse_spec(resolve_server(x.server, servers).spec) for x in (a, b)]
        if all(s.scheme == "build" for s in builds):
            if builds[0].flavor != builds[1].flavor or builds[0].ref == builds[1].ref:
                return None
            good, bad = a.server, b.server
            releases: list[str] = []
        else:
            ids = [x.server if servers.get(x.server) else id_of_spec(x.server) for x in (a, b)]
            if ids[0] is None or ids[1] is None or ids[0] == ids[1]:
                return None
            good, bad = ids[0], ids[1]
            releases = servers.releases_from(good, bad)
            if len(releases) < 3:
                return None
    except BadInput:  # not ordered, or of two flavors: nothing to walk
        return None
    metric = key.split(".", 1)[1]
    args = ["perfci", "bisect", scenario, "--good", good, "--bad", bad, "--metric", metric,
            *(["--measure", "work"] if metric == WORK_METRIC else []), "--profile", c.profile or "smoke"]
    return shlex.join(args + (["--case", case] if case != "default" else [])), releases[1:-1]


def _short(spec: str | None) -> str:
    return (spec or "").rpartition("@")[2][:12]


def which_commit(scenario: str, c: Confirmation, case: str) -> list[str]:
    """The part of an issue that names the first slower commit: the search the confirm
    job ran over the commits between the reference and tonight (sessions/culprit_search.py)."""
    found = c.culprit
    assert found is not None
    where = f"{code_span(found.metric)} in {', '.join(code_span(p) for p in found.phases)}"
    lines = ["", "### Which commit", ""]
    if found.first_bad:
        step = next(s for s in reversed(found.steps) if (s.reference, s.candidate) == (found.last_good, found.first_bad))
        could = f"; that A/B could see {step.mde:.1%}" if step.mde is not None else ""
        lines += [f"**First slower commit: {code_span(_short(found.first_bad))} {markdown(found.subject_of(found.first_bad))}** "
                  f"— {where} B/A {step.ratio:.3f} [{step.low:.3f}, {step.high:.3f}] against its parent "
                  f"{code_span(_short(found.last_good))} {markdown(found.subject_of(found.last_good))}{could}.", ""]
    else:
        lines += [f"{markdown(found.summary)}", ""]
    lines.append(f"Searched on this runner tonight over the {len(found.commits)} commits from the reference to tonight's "
                 f"(first parent), {where}, within {found.budget_minutes:g} minutes; each step an A/B sized like the "
                 "reference A/B, every commit built by scripts/build-server:")
    if found.steps:
        lines += ["", *table(["step", "candidate", "against", "verdict", "B/A [interval]", "MDE"],
                             ([str(i), code_span(_short(s.candidate)), code_span(_short(s.reference)), s.verdict,
                               f"{s.ratio:.3f} [{s.low:.3f}, {s.high:.3f}]", f"{s.mde:.1%}" if s.mde is not None else "–"]
                              for i, s in enumerate(found.steps, 1)))]
        lines.append("(step 1 is the reference A/B above)")
    good, bad = found.remaining or [found.last_good or found.good, found.first_bad or found.bad]
    if not found.first_bad:
        args = ["perfci", "bisect", scenario, "--good", good, "--bad", bad, "--metric", found.metric,
                "--profile", c.profile or "smoke", *[x for p in found.phases for x in ("--phase", p)]]
        lines += ["", "To finish the search (here, or the `bisect` workflow with these inputs):", "",
                  code_fence(shlex.join(args + (["--case", case] if case != "default" else [])), "sh")]
    return lines


def which_release(scenario: str, c: Confirmation, case: str, key: str) -> list[str]:
    """An issue's "since which release" part: the commit the night's search named, or
    the bisect to run (or dispatch: bisect.yml)."""
    if c.culprit is not None:
        return which_commit(scenario, c, case)
    found = bisect_command(scenario, c, case, key)
    if found is None:
        return []
    command, between = found
    if between:
        apart = (f"The reference and tonight's server are {len(between) + 1} releases apart "
                 f"({', '.join(code_span(x) for x in between)} between them): `perfci bisect` A/Bs the midpoints "
                 "and names the first slower one.")
    else:
        apart = ("The reference and tonight's server are two builds of one source line: `perfci bisect` builds "
                 "the commits between them (first parent) at the midpoints, A/Bs each and names the first slower "
                 "commit.")
    return ["", "### Which release", "",
            f"{apart} Run it here, or dispatch the `bisect` workflow with these inputs:", "",
            code_fence(command, "sh")]


def ab_issue_opening(comp: CaseComparison, keys: list[str], c: Confirmation, site_url: str = "") -> list[str]:
    """The four lines of an issue only the reference A/B found: B/A by phase, how sure
    (the A/B's level), why (its top mover), the `perfci ab` that reruns it."""
    what = (f"{by_phase([(k, (c.ratios[k].ratio - 1) * 100) for k in keys])}: tonight's server against the "
            f"reference's, side by side on this runner (the nights alone could not tell).")
    level = f" at {c.alpha:.2%} family-wise over its metrics and looks" if c.alpha is not None else ""
    sure = f"sure: the interleaved A/B flags it{level}; each flagged interval excludes no change."
    why = inert_markdown(c.why_line) if c.why_line else "not explained (the A/B's explain pass profiled nothing)."
    why += flame_links(comp, c, site_url)
    return [f"**What**: {what}", f"**How sure**: {sure}", f"**Why**: {why}",
            f"**Reproduce**: {code_span(reproduce_ab(comp.results[0].scenario.name, c, comp.results[0].case))}"]


def ab_body_for(comp: CaseComparison, keys: list[str], c: Confirmation, fp: str, run_url: str,
                level: str = "", site_url: str = "") -> str:
    """The issue of a case whose reference A/B flags `keys` (the first leads) that the
    nightly threshold did not see."""
    tonight = comp.results[0]
    key, r = keys[0], c.ratios[keys[0]]
    could = f"achieved: it could see {r.mde:.1%} at 90 % power" if r.mde is not None else "its achieved MDE is unknown"
    lines = [
        *markers(fp, comp.identity, tonight.id),
        REGRESSION_MARK,
        *(f"- {line}" for line in ab_issue_opening(comp, keys, c, site_url)),
        "",
        f"**{key}** is worse on tonight's server than on the reference, side by side on this runner: "
        f"{ab_change(key, r)} (B against A; its interval at the level of its Holm step); {could}"
        + (f"; with {len(keys) - 1} more metric{'s' if len(keys) > 2 else ''} (table below)." if len(keys) > 1 else "."),
        "",
        f"- reference (A): {code_span(c.a)} ({markdown(c.reference_version or 'version not recorded')}) · "
        f"tonight (B): {code_span(c.b)} ({markdown(tonight.server.full_version or tonight.server.version)})",
        f"- the A/B as planned, before it ran: {markdown(c.sizing)}" if c.sizing else "- the A/B: size not recorded",
        "- the nightly threshold against the baseline saw no regression of these (inside the nights' noise)",
        *([level] if level else []),
        f"- case: {markdown(comp.label)} · host {code_span(tonight.host.hostname)} ({markdown(tonight.host.cpu_model)}, "
        f"{tonight.host.cpus} CPUs) · scenario hash {code_span(tonight.scenario.hash[:19] + '…')}",
    ]
    if run_url:
        lines.append(f"- run and artifacts: {markdown(run_url)}")
    rows = ([code_span(k), f"{c.ratios[k].a:.4g}", f"{c.ratios[k].b:.4g}", ab_change(k, c.ratios[k]),
             f"{c.ratios[k].mde:.1%}" if c.ratios[k].mde is not None else "–"] for k in keys)
    lines += ["", f"Worse in the A/B (means over its measured bursts, profile {code_span(c.profile)}):", "",
              *table(["metric", "A", "B", "B vs A [interval]", "achieved MDE"], rows)]
    lines += markdown_section(c) + which_release(tonight.scenario.name, c, tonight.case, key)
    lines += ["", "Reproduce (the same A/B):", "", code_fence(reproduce_ab(tonight.scenario.name, c, tonight.case), "sh"),
              "", TRIAGE_HELP, ""]
    return "\n".join(lines)


def ab_change(key: str, r: AbRatio) -> str:
    """An A/B's metric, B against A, as every table writes a change."""
    return change_cell(r.ratio, r.low, r.high, default_spec(key.rsplit(".", 1)[-1]).direction)


def flame_links(comp: CaseComparison, c: Confirmation, site_url: str) -> str:
    """The Why's flame graphs (B against A, per phase): on the dashboard, where the nightly
    keeps them with the history (store/flame_files.py; only `perfci nightly` passes a
    site URL, and it keeps them); else where the bench job's artifact holds them, beside
    the confirmation. Empty when the A/B drew none."""
    diffs = [name for name in c.flamegraphs if name.endswith("-diff.svg")]
    if not diffs:
        return ""
    paths = [(Path(name).name.removesuffix("-diff.svg"),
              flame_files.relative(comp.identity.slug_path, c.result_id, Path(name).name)) for name in diffs]
    links = [(phase, web_link(site_url.rstrip("/") + "/" + quote(path))) for phase, path in paths]
    if site_url and all(url for _, url in links):  # the site URL is an input: only an http(s) one is linked
        return " Flame graphs, B against A (red grew): " + " · ".join(f"[{markdown(phase)}]({url})"
                                                                     for phase, url in links) + "."
    return (" Flame graphs, B against A (red grew), in the run's artifacts beside the confirmation: "
            + ", ".join(code_span(f"confirm/{name}") for name in diffs) + ".")


NIGHT_MARK = "<!-- perfci-night: {night} -->"
NIGHT_RE = re.compile(r"<!-- perfci-night: ([^ ]+) -->")


def clean_night(gh: GitHub, issue: Issue, what: str, close_after: int, run_url: str, night: str,
                record: Record = ignore_night, case: str = "") -> str:
    """A clean night on an open issue, counted in one comment that each clean night edits
    (one notification, not one a night): the comment names every night it counts, so a
    replay or a retry does not count one twice; the K-th closes the issue."""
    comments = gh.comments(issue["number"])
    counting = counting_comment(comments, login(issue))
    counted = NIGHT_RE.findall(body_of(counting)) if counting else []
    if night in counted:
        return f"clean run of {night} already counted on #{issue['number']}"
    streak = clean_streak(comments, login(issue)) + 1
    nights = [*counted, night]
    closing = streak >= close_after
    record(CaseNight(case=case, status="closed" if closing else "clean", issue=issue["number"],
                     why=f"clean run {min(streak, close_after)} of {close_after}: {what}"))
    said = (f"{close_after} consecutive clean runs ({what}); closing." if closing else
            f"Clean runs: {streak} of {close_after} ({what}); {close_after - streak} more close this issue.")
    text = "\n".join([CLEAN_MARK, *(NIGHT_MARK.format(night=n) for n in nights),
                      f"{said} Nights: {', '.join(code_span(n) for n in nights)}. {run_url}".rstrip()])
    if counting is not None and "id" in counting:
        gh.edit_comment(counting["id"], text)
    else:
        gh.comment(issue["number"], text)
    if closing:
        gh.close(issue["number"])
        return f"closed #{issue['number']} ({what})"
    return f"clean run {streak}/{close_after} on #{issue['number']} ({what})"


def counting_comment(comments: list[Comment], author: str | None) -> Comment | None:
    """perfci's clean-run comment since its last regression comment (the one a clean
    night edits), if any."""
    found = None
    for c in comments:
        if author is None or login(c) != author:
            continue
        body = body_of(c)
        if REGRESSION_MARK in body:
            found = None
        elif CLEAN_MARK in body:
            found = c
    return found
