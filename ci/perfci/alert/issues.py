"""Regression issues on GitHub through the GitHub CLI (`gh api`, REST).

One issue per fingerprint (runner class, server, scenario, profile, case,
metric), kept in a hidden marker in the body. A repeated regression comments on
the open issue; after K consecutive clean runs the issue gets a comment and is
closed. `dry_run_dir` writes the issue Markdown to files instead (used under act).
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
from pathlib import Path

from perfci.alert.github import LABEL, Comment, GitHub, Issue, body_of, login
from perfci.judge.compare import CaseComparison, MetricRow
from perfci.model.identity import CaseIdentity
from perfci.model.verdicts import Outcome
from perfci.providers.servers import id_of_spec, load_servers, resolve_server
from perfci.providers.spec import parse_spec
from perfci.report.plots import mermaid_intervals
from perfci.report.table import table
from perfci.sessions.confirm import Confirmation, markdown_section
from perfci.store.history import CaseHistory, Histories, case_history
from perfci.util.errors import BadInput
from perfci.util.files import write_atomic
from perfci.util.text import code_fence, code_span, issue_title, markdown

FINGERPRINT_RE = re.compile(r"<!-- perfci-fingerprint: ([0-9a-f]{16}) -->")
CASE_RE = re.compile(r"<!-- perfci-case: ([\w./-]+) -->")
SINCE_RE = re.compile(r"<!-- perfci-since: ([\w.:=+-]+) -->")
MARKER_RE = re.compile(r"<!-- perfci-[\w-]+(: [^>]*)? -->")
REGRESSION_MARK = "<!-- perfci-regression -->"
CLEAN_MARK = "<!-- perfci-clean -->"
DEFAULT_CLOSE_AFTER = 3
ACCEPT_LABEL = "perf-expected"
TRIAGE_HELP = (f"Expected? Add the label `{ACCEPT_LABEL}` or comment `/perfci accept` (a collaborator): the next nightly "
               "resets this case's baseline at the first regressed night and closes the issue.")


def fingerprint(case: CaseIdentity, metric_key: str) -> str:
    """Stable across patch upgrades: the case identity follows the server line."""
    return hashlib.sha256(case.key(metric_key).encode()).hexdigest()[:16]


def labels_for(case: CaseIdentity) -> list[str]:
    return [LABEL, f"scenario:{case.scenario}", f"server:{case.server}"]


def title_for(case: CaseIdentity, row: MetricRow, confirmation: Confirmation | None = None) -> str:
    # case ids carry axis values from scenario files: no mentions, one line
    kind = ("Work changed" if row.gate == "work" else
            "Runner or harness drift" if confirmation is not None and confirmation.unchanged_server else
            "Perf regression")
    return issue_title(f"{kind}: {row.key} {row.verdict.change_pct or 0:+.1f} % · {case.scenario}/"
                       f"{case.profile}/{case.case} on {case.server} ({case.runner_class})")


def markers(fp: str, case: CaseIdentity, since: str) -> list[str]:
    """Hidden lines that identify an issue: its fingerprint, the case (as history names
    it) and the first night of the regression (where an accepted one resets the baseline)."""
    return [f"<!-- perfci-fingerprint: {fp} -->", f"<!-- perfci-case: {case.slug_path} -->",
            f"<!-- perfci-since: {since} -->"]


def body_for(comp: CaseComparison, row: MetricRow, fp: str, run_url: str,
             confirmation: Confirmation | None = None, since: str = "") -> str:
    first = comp.results[0]
    est = row.verdict.estimate
    ci = f"[{est.low:.3f}, {est.high:.3f}]" if est and est.low is not None else "–"
    lines = [
        *markers(fp, comp.identity, since or first.id),
        REGRESSION_MARK,
        f"**{row.key}** regressed by {row.verdict.change_pct or 0:+.1f} % (ratio CI {ci}, tolerance "
        f"±{row.spec.tolerance:.0%}, {'higher' if row.spec.direction == 'higher' else 'lower'} is better).",
        *([f"It is a counter the noise model found deterministic under this fixed work: the run did more work "
           f"per transaction than its baseline (the work-changed gate, family-wise "
           f"{1 - comp.rules.confidence:.1%} over its counters)."] if row.gate == "work" else []),
        *([f"The server, its build and its config are the reference night's ({code_span(confirmation.a)}, "
           f"{markdown(confirmation.reference_version)}): what moved is this runner, perfci or the data, not the "
           "server. Look at the runner first (`perfci doctor`, the host check in the run's artifacts) and at the "
           "same case on another runner of the class."]
          if confirmation is not None and confirmation.unchanged_server else []),
        "",
        # every text from a scenario or a result file is escaped or in a code span
        f"- case: {markdown(comp.label)}",
        "- current: " + ", ".join(code_span(r.id) for r in comp.results),
        f"- baseline: {code_span(str(comp.baseline_file))} ({len(row.baseline)} samples)",
        f"- server: {markdown(first.server.full_version or first.server.version)}"
        + (f" built from commit {code_span(first.server.commit)}" if first.server.commit else "") + " · scenario hash "
        f"{code_span(first.scenario.hash[:19] + '…')}",
        f"- host: {code_span(first.host.hostname)} ({markdown(first.host.cpu_model)}, {first.host.cpus} CPUs)",
    ]
    if run_url:
        lines.append(f"- run and artifacts: {markdown(run_url)}")
    if row.movers:
        lines += ["", "Counters per transaction that moved most:", "",
                  *table(["counter", "baseline", "current"], ([code_span(n), f"{b:.4g}", f"{c:.4g}"] for n, b, c in row.movers))]
    others = [r for r in comp.rows if r.verdict.verdict == Outcome.REGRESSION and r.key != row.key]
    if others:
        lines += ["", "Also regressed in this case: " + ", ".join(f"{code_span(r.key)} ({r.verdict.change_pct:+.1f} %)"
                                                                  for r in others)]
    if chart := mermaid_intervals(comp, only=row.key.split(".", 1)[0]):
        lines += ["", "<details><summary>tps per interval, tonight against the baseline</summary>", "", *chart,
                  "</details>"]
    if confirmation is not None:
        lines += markdown_section(confirmation) + which_release(first.scenario.name, confirmation, first.case, row.key)
    lines += ["", "Reproduce:", "", code_fence(first.reproduce, "sh"), "", TRIAGE_HELP, ""]
    return "\n".join(lines)


def open_by_fingerprint(gh: GitHub) -> dict[str, Issue]:
    """Open perf-regression issues by the fingerprint in their body."""
    found: dict[str, Issue] = {}
    for issue in gh.issues("open"):
        m = FINGERPRINT_RE.search(body_of(issue))
        if m:
            found[m.group(1)] = issue
    return found


def clean_streak(comments: list[Comment], author: str | None) -> int:
    """perfci's clean-run comments since its last regression comment. Only comments by
    the issue's author (the account perfci opened it with) count: anyone can paste a
    marker into a comment to close an issue."""
    streak = 0
    for c in comments:
        if author is None or login(c) != author:
            continue
        body = body_of(c)
        if REGRESSION_MARK in body:
            streak = 0
        elif CLEAN_MARK in body:
            streak += 1
    return streak


def _unconfirmed(comp: CaseComparison, confirmation: Confirmation | None, actions: list[str]) -> bool:
    """A regression the confirmation A/B did not see opens no issue (and counts as no clean run)."""
    if confirmation is None or confirmation.status != "not-confirmed":
        return False
    actions += [f"not opened: {row.key} was not confirmed by the A/B ({confirmation.a} vs {confirmation.b})"
                for row in comp.regressions]
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
         min_nights: int = 1, gh: GitHub | None = None) -> list[str]:
    """Open, update or close issues; returns one line per action taken. `confirmations`
    (by result id, from `perfci confirm`): a regression whose A/B did not confirm it
    opens nothing; the others carry their A/B in the issue. With `history_root`, a new
    issue needs the regression on `min_nights` consecutive nights (a one-night spike
    opens none), unless an A/B confirmed it tonight (a second, independent measurement)."""
    actions: list[str] = []
    confirmations = confirmations or {}
    if dry_run_dir is None:
        gh = gh or GitHub(repo or os.environ.get("GITHUB_REPOSITORY", ""))
    open_issues = open_by_fingerprint(gh) if gh else {}
    for comp in comparisons:
        case = comp.identity
        confirmation = confirmations.get(comp.results[0].id) if comp.results else None
        if _unconfirmed(comp, confirmation, actions):
            continue
        # read once per case, and only when something regressed
        hist = case_history(history_root, case) if history_root is not None and comp.regressions else None
        for row in comp.rows:
            fp = fingerprint(case, row.key)
            issue = open_issues.get(fp)
            if row.verdict.verdict == Outcome.REGRESSION:
                nights = regressed_since(comp, row, hist)
                confirmed = confirmation is not None and confirmation.status == "confirmed"
                if issue is None and len(nights) < min_nights and not confirmed:
                    actions.append(f"pending: {row.key} regressed on {len(nights)} of the {min_nights} consecutive "
                                   "nights an issue needs")
                    continue
                body = body_for(comp, row, fp, run_url, confirmation, since=nights[0])
                actions.append(_post(gh, dry_run_dir, open_issues, fp, title_for(case, row, confirmation), body, case,
                                     row.key))
            elif gh and issue and row.worse:  # beyond tolerance, inconclusive alone: not clean, still there
                tonight = comp.results[0]
                gh.comment(issue["number"], f"{REGRESSION_MARK}\nStill worse: {row.key} {row.verdict.change_pct:+.1f} % "
                                            f"against the baseline in {code_span(tonight.id)} (server "
                                            f"{markdown(tonight.server.full_version or tonight.server.version)}; "
                                            f"{row.verdict.reason}). {run_url}".rstrip())
                actions.append(f"still worse: commented on #{issue['number']} ({row.key})")
            elif gh and issue and row.verdict.verdict in (Outcome.UNCHANGED, Outcome.IMPROVEMENT):
                actions.append(clean_night(gh, issue, row, close_after, run_url))
        actions += _ab_only(comp, confirmation, gh, dry_run_dir, open_issues, run_url)
    return actions


def _ab_only(comp: CaseComparison, confirmation: Confirmation | None, gh: GitHub | None, dry_run_dir: Path | None,
             open_issues: dict[str, Issue], run_url: str) -> list[str]:
    """Regressions the reference A/B found where the threshold saw none (a few percent,
    inside the nights' noise): opened that night, the A/B being the measurement."""
    if confirmation is None or confirmation.status != "confirmed" or not comp.results:
        return []
    called = {row.key for row in comp.regressions}
    actions = []
    for key in confirmation.ab_regressions:
        if key in called or key not in confirmation.ratios:
            continue
        fp = fingerprint(comp.identity, key)
        body = ab_body_for(comp, key, confirmation, fp, run_url)
        actions.append(_post(gh, dry_run_dir, open_issues, fp, ab_title_for(comp.identity, key, confirmation),
                             body, comp.identity, key))
    return actions


def _post(gh: GitHub | None, dry_run_dir: Path | None, open_issues: dict[str, Issue], fp: str, title: str, body: str,
          case: CaseIdentity, key: str) -> str:
    """Open the issue of `fp`, or comment on the open one (a dry run writes a file)."""
    issue = open_issues.get(fp)
    if gh is None:
        path = Path(dry_run_dir or ".") / f"{fp}.md"
        write_atomic(path, f"# {title}\n\nlabels: {', '.join(labels_for(case))}\n\n{body}")
        return f"wrote {path}"
    if issue:
        gh.comment(issue["number"], still_regressed(body))
        return f"commented on #{issue['number']} ({key})"
    created = gh.create(title, body, labels_for(case))
    open_issues[fp] = created
    return f"opened #{created.get('number')} ({key})"


def ab_title_for(case: CaseIdentity, key: str, c: Confirmation) -> str:
    r = c.ratios[key]
    return issue_title(f"Perf regression (A/B vs reference): {key} {(r.ratio - 1) * 100:+.1f} % · {case.scenario}/"
                       f"{case.profile}/{case.case} on {case.server} ({case.runner_class})")


def reproduce_ab(scenario: str, c: Confirmation, case: str) -> str:
    """The `perfci ab` that reruns the reference A/B (specs as recorded: ids of servers.yaml or pinned specs)."""
    a, b = shlex.split(c.a), shlex.split(c.b)
    args = ["perfci", "ab", scenario, "--profile", c.profile, "--a", a[0], "--b", b[0]]
    args += [x for flag, value in zip(a[1::2], a[2::2]) for x in ("--a-config", value) if flag == "--config"]
    args += [x for flag, value in zip(b[1::2], b[2::2]) for x in ("--b-config", value) if flag == "--config"]
    return shlex.join(args + (["--case", case] if case != "default" else []))


def bisect_command(scenario: str, c: Confirmation, case: str, key: str) -> tuple[str, list[str]] | None:
    """The `perfci bisect` from the reference's server to tonight's and the releases
    between them, when servers.yaml orders both (one flavor, each with its `version`)
    and at least one release lies between; or, when both are build: specs of one
    flavor at different refs, the bisect over the commits between them (listed when it
    runs: this job has no source tree). None when neither, or when a side carries config
    overrides (a bisect walks servers, not configs)."""
    a, b = shlex.split(c.a), shlex.split(c.b)
    if len(a) != 1 or len(b) != 1:
        return None
    try:
        servers = load_servers()
        builds = [parse_spec(resolve_server(x[0], servers).spec) for x in (a, b)]
        if all(s.scheme == "build" for s in builds):
            if builds[0].flavor != builds[1].flavor or builds[0].ref == builds[1].ref:
                return None
            good, bad = a[0], b[0]
            releases: list[str] = []
        else:
            ids = [x[0] if servers.get(x[0]) else id_of_spec(x[0]) for x in (a, b)]
            if ids[0] is None or ids[1] is None or ids[0] == ids[1]:
                return None
            good, bad = ids[0], ids[1]
            releases = servers.releases_from(good, bad)
            if len(releases) < 3:
                return None
    except BadInput:  # not ordered, or of two flavors: nothing to walk
        return None
    args = ["perfci", "bisect", scenario, "--good", good, "--bad", bad, "--metric", key.split(".", 1)[1],
            "--profile", c.profile or "smoke"]
    return shlex.join(args + (["--case", case] if case != "default" else [])), releases[1:-1]


def which_release(scenario: str, c: Confirmation, case: str, key: str) -> list[str]:
    """An issue's "since which release" part: the bisect to run (or dispatch: bisect.yml)."""
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


def ab_body_for(comp: CaseComparison, key: str, c: Confirmation, fp: str, run_url: str) -> str:
    tonight = comp.results[0]
    r = c.ratios[key]
    could = f"this A/B could see {r.mde:.1%} (90 % power)" if r.mde is not None else "its MDE is unknown"
    lines = [
        *markers(fp, comp.identity, tonight.id),
        REGRESSION_MARK,
        f"**{key}** is worse on tonight's server than on the reference, side by side on this runner: B/A "
        f"{r.ratio:.3f} [{r.low:.3f}, {r.high:.3f}] ({r.confidence:.2%} interval); {could}.",
        "",
        f"- reference (A): {code_span(c.a)} ({markdown(c.reference_version or 'version not recorded')}) · "
        f"tonight (B): {code_span(c.b)} ({markdown(tonight.server.full_version or tonight.server.version)})",
        f"- {markdown(key)}: A {r.a:.4g} · B {r.b:.4g} (means over the A/B's measured bursts, profile "
        f"{code_span(c.profile)})",
        f"- the A/B: {markdown(c.sizing)}" if c.sizing else "- the A/B: size not recorded",
        f"- the nightly threshold against the baseline saw no regression of {markdown(key)} (inside the nights' noise)",
        f"- case: {markdown(comp.label)} · host {code_span(tonight.host.hostname)} ({markdown(tonight.host.cpu_model)}, "
        f"{tonight.host.cpus} CPUs) · scenario hash {code_span(tonight.scenario.hash[:19] + '…')}",
    ]
    if run_url:
        lines.append(f"- run and artifacts: {markdown(run_url)}")
    lines += markdown_section(c) + which_release(tonight.scenario.name, c, tonight.case, key)
    lines += ["", "Reproduce (the same A/B):", "", code_fence(reproduce_ab(tonight.scenario.name, c, tonight.case), "sh"),
              "", TRIAGE_HELP, ""]
    return "\n".join(lines)


def still_regressed(body: str) -> str:
    """A comment from an issue body: the markers that identify the issue are left out."""
    lines = [line for line in body.splitlines() if not MARKER_RE.fullmatch(line) or line == REGRESSION_MARK]
    return "\n".join(lines).replace(REGRESSION_MARK, REGRESSION_MARK + "\nStill regressed.", 1)


def clean_night(gh: GitHub, issue: Issue, row: MetricRow, close_after: int, run_url: str) -> str:
    streak = clean_streak(gh.comments(issue["number"]), login(issue)) + 1
    if streak >= close_after:
        gh.comment(issue["number"], f"{CLEAN_MARK}\n{close_after} consecutive clean runs "
                                    f"({row.key} {row.verdict.verdict}); closing. {run_url}".rstrip())
        gh.close(issue["number"])
        return f"closed #{issue['number']} ({row.key})"
    gh.comment(issue["number"], f"{CLEAN_MARK}\nClean run {streak} of {close_after}: "
                                f"{row.key} {row.verdict.verdict}. {run_url}".rstrip())
    return f"clean run {streak}/{close_after} on #{issue['number']} ({row.key})"
