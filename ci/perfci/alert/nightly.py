"""One night's bookkeeping, after the bench jobs (the GitHub-hosted report job runs
it; the self-hosted runner never holds a write token):

1. tonight's results join the history, with what they regressed on — before any
   GitHub call, so that a failing API loses no night;
2. triage: an open issue a person accepted (label `perf-expected`, or a `/perfci
   accept` comment by the owner, a member or a collaborator) resets its case's
   baseline at the regression's first night, says so and is closed; a case reset
   tonight is compared again under its new baseline;
3. threshold issues for tonight's results against the history (issues.sync): opened
   after --min-nights consecutive regressed nights, commented while they last,
   closed after K clean nights — on every nightly outcome, not only on exit 1;
4. change points over each judged metric's history open or comment (judge/changes.py, alert/change_issues.py).

A GitHub call that fails after its retries ends the night with exit 3 (GitHubFailure)
after step 1: the history holds tonight, and running the same command again replays
steps 2-4 (a result already in the history is not appended twice).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from perfci.alert.change_issues import sync_changes
from perfci.alert.github import ACCEPT_LABEL, Comment, GitHub, GitHubFailure, Issue, body_of, login
from perfci.alert.regression_issues import CASE_RE, SINCE_RE, sync
from perfci.judge.budget import DEFAULT_MIN_NIGHTS, IssueBudget, at_least_tonights, cases_tonight
from perfci.judge.changes import CHANGE_ALPHA, persisting_changes
from perfci.judge.compare import CaseComparison, Rules, compare_cases
from perfci.model.confirmation import Confirmation
from perfci.model.history import DEFAULT_HISTORY_WINDOW, NightVerdict, summary_line
from perfci.model.identity import CaseIdentity
from perfci.model.outputs import CaseNight
from perfci.model.result import Result
from perfci.store import culprit_files, flame_files
from perfci.store.case_inputs import load_cases
from perfci.store.history_files import Histories, reset
from perfci.util.errors import BadInput

TRUSTED = frozenset({"OWNER", "MEMBER", "COLLABORATOR"})  # author_association that may accept a regression
ACCEPT_RE = re.compile(r"^\s*/perfci\s+accept\b", re.MULTILINE)
RESET_MARK = "<!-- perfci-reset -->"


def acceptance(issue: Issue, comments: list[Comment], can_write: Callable[[str], bool],
               labelled_by: Callable[[], str | None]) -> str | None:
    """How a person accepted the regression (None: nobody did). It resets a baseline, so
    it counts only from someone with write access (`can_write`): the label from whoever
    added it last (`labelled_by`: triage access may add labels), a `/perfci accept` from
    someone the repository trusts (owner, member, collaborator: anyone can comment on a
    public issue, and collaborators include read-only ones)."""
    if ACCEPT_LABEL in [label.get("name") for label in issue.get("labels") or []]:
        who = labelled_by()
        if who and can_write(who):
            return f"label {ACCEPT_LABEL} by @{who}"
    for c in comments:
        who = login(c)
        if ACCEPT_RE.search(body_of(c)) and c.get("author_association") in TRUSTED and who and can_write(who):
            return f"/perfci accept by @{who}"
    return None


def triage(gh: GitHub, history_root: Path, run_url: str = "", reset_cases: set[str] | None = None) -> list[str]:
    """Reset and close the accepted issues; one line per action. The cases reset are
    added to `reset_cases`."""
    actions = []
    for issue in gh.issues("open"):
        body = body_of(issue)
        case, since = CASE_RE.search(body), SINCE_RE.search(body)
        if not (case and since):
            continue  # opened before issues named their case: triage it by hand
        number = issue["number"]
        how = acceptance(issue, gh.comments(number), gh.can_write, functools.partial(gh.labelled_by, number, ACCEPT_LABEL))
        if how is None:
            continue
        try:
            reset(history_root, history_root / f"{case.group(1)}.jsonl", since.group(1),
                          f"accepted on #{number} ({how})", by=how)
        except BadInput as exc:
            actions.append(f"#{number}: accepted ({how}) but not reset: {exc}")
            continue
        if reset_cases is not None:
            reset_cases.add(case.group(1))
        gh.comment(number, f"{RESET_MARK}\nAccepted ({how}): the baseline of `{case.group(1)}` now starts at "
                           f"`{since.group(1)}` (the first regressed night); nights before it no longer count. "
                           f"Closing. {run_url}".rstrip())
        gh.close(number)
        actions.append(f"reset {case.group(1)} at {since.group(1)} and closed #{number} ({how})")
    return actions


@dataclass(frozen=True)
class NightOptions:
    history_root: Path
    baseline_root: Path | None = None
    rules: Rules = Rules()
    window: int = DEFAULT_HISTORY_WINDOW
    min_nights: int = DEFAULT_MIN_NIGHTS
    close_after: int = 3
    run_url: str = ""
    site_url: str = ""
    budget: IssueBudget = IssueBudget()  # the false-issue budget: each road's level per case and night
    confirmations_dir: Path | None = None  # where the confirmations and their A/Bs' flame graphs are


def at_the_nights_scale(confirmations: dict[str, Confirmation], results: list[Result]) -> dict[str, Confirmation]:
    """A reference A/B that did not confirm a regression clears it only when it ran at the
    night's scale (its profile): one at a smaller scale (confirm's smoke: 200k rows in
    memory, against a nightly's 1M) cannot see what shows only at the night's, so the
    night's regression stays pending on its own road (more nights, its change point),
    and the issue says at which scale the A/B could not confirm it. A confirmed one
    stands at any scale: it found the regression there too."""
    profiles = {r.id: r.scenario.profile for r in results}
    out = dict(confirmations)
    for rid, c in confirmations.items():
        night = profiles.get(rid)
        if c.status == "not-confirmed" and c.profile and night and c.profile != night:
            out[rid] = c.model_copy(update={
                "status": "not-run",
                "reason": f"the A/B ran at profile {c.profile}, the night at {night}: not confirmed at {c.profile} "
                          f"({c.reason}), which does not clear a regression seen at {night}; it stays pending "
                          "until more nights or its change point call it"})
    return out


def night_verdicts(comparisons: list[CaseComparison],
                   confirmations: dict[str, Confirmation]) -> dict[str, NightVerdict]:
    """What each result was worse on (MetricRow.worse) and judged a regression on; a
    regression its A/B did not confirm is neither; one its reference A/B found (where
    the threshold saw none) is both."""
    out: dict[str, NightVerdict] = {}
    for comp in comparisons:
        for r in comp.results:
            c = confirmations.get(r.id)
            if c is not None and c.status == "not-confirmed":
                out[r.id] = NightVerdict(ab="not-confirmed")
                continue
            worse = tuple(row.key for row in comp.rows if row.worse)
            regressions = tuple(row.key for row in comp.regressions)
            if c is not None and c.status == "confirmed" and r is comp.results[0]:
                found = tuple(k for k in c.ab_regressions if k not in regressions)
                worse += tuple(k for k in found if k not in worse)
                regressions += found
            out[r.id] = NightVerdict(worse=worse, regressions=regressions,
                                     ab="confirmed" if c is not None and c.status == "confirmed" else None)
    return out


def with_change_points(verdicts: dict[str, NightVerdict], comparisons: list[CaseComparison],
                       histories: Histories, alpha: float = CHANGE_ALPHA) -> dict[str, NightVerdict]:
    """A night on a key where the history, tonight included, shows a persisting change
    point (a worse level, beyond tolerance and the nights' noise) stands on it, worse
    against tonight's baseline or not: a step that no single night could call stays out
    of the baseline once the series has called it, instead of becoming its own baseline
    (the nights of the step before the series could call it joined the baseline, and
    tonight may no longer look worse against it). `alpha`: the change points' level per
    case and night (the false-issue budget's share)."""
    out = dict(verdicts)
    for comp in comparisons:
        for tonight in comp.results[:1]:
            verdict = out.get(tonight.id)
            if verdict is None:
                continue
            uncalled = [row for row in comp.rows if row.key not in verdict.regressions]
            if not uncalled:
                continue
            earlier = [r for r in histories.case(comp.identity).usable(tonight.scenario.hash)
                       if r.result_id != tonight.id]  # a replayed night holds tonight already
            records = [*earlier, summary_line(tonight)]
            called = [row.key for row in uncalled
                      if persisting_changes(records, row.key, row.spec, len(comp.rows), alpha=alpha)]
            if called:
                out[tonight.id] = NightVerdict((*verdict.worse, *(k for k in called if k not in verdict.worse)),
                                               (*verdict.regressions, *called), verdict.ab)
    return out


@dataclass(frozen=True)
class Night:
    actions: list[str]            # one line per action taken
    standing: dict[str, list[str]]  # result id -> the keys whose regression stands tonight
    cases: list[CaseNight]        # what tonight did about each case (one row each at least)

    @property
    def regression_stands(self) -> bool:
        return any(self.standing.values())

    @property
    def told(self) -> bool:
        """An issue was opened, commented or written tonight: the night's exit 1. A
        regression still pending (too few nights, its budget) tells nobody: exit 0."""
        return any(c.told for c in self.cases)


def run_night(results: list[Result], opts: NightOptions, gh: GitHub | None = None, dry_run_dir: Path | None = None,
              confirmations: dict[str, Confirmation] | None = None) -> Night:
    """Steps 1-4 above."""
    confirmations = at_the_nights_scale(confirmations or {}, results)
    by_host: dict[str, set[str]] = {}
    for r in results:
        by_host.setdefault(r.host.hostname, set()).add(CaseIdentity.of(r, opts.rules.follow).key())
    budget, widened = at_least_tonights(opts.budget, cases_tonight(by_host))
    opts = replace(opts, budget=budget)
    histories = Histories(opts.history_root)
    comparisons = compare_cases(load_cases(results, baseline_root=opts.baseline_root, follow=opts.rules.follow,
                                     noise_dir=opts.rules.noise_dir, history_root=histories, window=opts.window),
                          opts.rules)
    verdicts = with_change_points(night_verdicts(comparisons, confirmations), comparisons, histories,
                                  opts.budget.level("change"))
    actions = [f"history {path}: +{added}"
               for path, added in histories.append(results, opts.rules.follow, verdicts, opts.run_url)]
    actions += [widened] if widened else []
    for comp in comparisons:  # a commit search out of time resumes next night (store/culprit_files.py)
        c = confirmations.get(comp.results[0].id) if comp.results else None
        if c is not None and c.culprit is not None and (kept := culprit_files.keep(opts.history_root, comp.identity,
                                                                                    c.culprit)):
            actions.append(kept)
        if c is not None and c.status == "confirmed" and c.flamegraphs and opts.confirmations_dir is not None:
            # kept with the history, published by the dashboard, linked from the issue
            flames = flame_files.keep(opts.history_root, comp.identity, c.result_id, opts.confirmations_dir,
                                      c.flamegraphs)
            actions += [f"flame graphs {comp.identity.slug_path}: {len(flames)} kept"] if flames else []
    standing = {r.id: record.standing for r in results if r.ran
                for record in histories.case(CaseIdentity.of(r, opts.rules.follow)).records if record.result_id == r.id}
    cases: list[CaseNight] = []
    try:
        reset_cases: set[str] = set()
        actions += triage(gh, opts.history_root, opts.run_url, reset_cases) if gh else []
        if reset_cases:  # compared again under their new baselines: an accepted regression opens nothing
            histories = Histories(opts.history_root)
            comparisons = compare_cases(load_cases(results, baseline_root=opts.baseline_root, follow=opts.rules.follow,
                                             noise_dir=opts.rules.noise_dir, history_root=histories,
                                             window=opts.window), opts.rules)
            again = night_verdicts(comparisons, confirmations)
            standing.update({r.id: histories.case(comp.identity).standing(again[r.id])
                             for comp in comparisons for r in comp.results if r.id in again
                             and histories.case(comp.identity).key in reset_cases})
        actions += sync(comparisons, opts.run_url, dry_run_dir=dry_run_dir, close_after=opts.close_after,
                        confirmations=confirmations, history_root=histories, min_nights=opts.min_nights, gh=gh,
                        standing=standing, budget=opts.budget, record=cases.append, site_url=opts.site_url)
        actions += sync_changes(comparisons, histories, gh, dry_run_dir, opts.site_url, opts.budget, cases.append)
    except GitHubFailure as exc:
        raise GitHubFailure(f"{exc}. Tonight's history is written ({'; '.join(actions) or 'nothing new'}); "
                            "run the same `perfci nightly` command again to replay the issues (results already "
                            "in the history are not appended twice)") from None
    return Night(actions, standing, cases + _untold(comparisons, cases, standing))


def _untold(comparisons: list[CaseComparison], cases: list[CaseNight], standing: dict[str, list[str]]) -> list[CaseNight]:
    """A row for each case tonight did nothing about: a regression that stands in the
    history (an issue told before, or none yet), or quiet."""
    done = {c.case for c in cases}
    rows = []
    for comp in comparisons:
        if comp.identity.slug_path in done or not comp.results:
            continue
        keys = standing.get(comp.results[0].id, [])
        rows.append(CaseNight(case=comp.identity.slug_path, status="standing", keys=keys,
                              why="worse in the history (kept out of its baseline); nothing told tonight") if keys
                    else CaseNight(case=comp.identity.slug_path, status="quiet"))
    return rows
