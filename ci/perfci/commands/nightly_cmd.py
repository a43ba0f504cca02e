"""`perfci nightly`: one night's triage, issues, history and change points (see alert/nightly.py)."""

from __future__ import annotations

import os
from pathlib import Path

import click

from perfci.alert import regression_issues, webhook
from perfci.alert.github import GitHub
from perfci.alert.nightly import NightOptions, run_night
from perfci.commands import options
from perfci.judge.budget import IssueBudget
from perfci.judge.compare import Rules
from perfci.model.identity import CaseIdentity, Follow
from perfci.model.outputs import NightSummary, StandingRegression
from perfci.model.verdicts import Outcome
from perfci.report.night_summary import chat_message, night_summary
from perfci.store.confirmation_files import load_all
from perfci.store.results import expand, load_result
from perfci.util.errors import EXIT_REGRESSION
from perfci.util.files import write_atomic


@click.command()
@click.argument("results", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--history", "history_dir", required=True, type=click.Path(path_type=Path, exists=True, file_okay=False),
              help="The history directory, which must exist (a checkout of the results branch's history/); "
                   "tonight's results are appended.")
@options.baseline_dir
@options.window
@options.min_nights
@click.option("--close-after", type=click.IntRange(1, 100), default=regression_issues.DEFAULT_CLOSE_AFTER, show_default=True,
              help="Close an issue after this many consecutive clean nights.")
@click.option("--repo", default=None, help="OWNER/NAME (default: $GITHUB_REPOSITORY).")
@options.dry_run
@options.issues_out
@click.option("--run-url", default="", help="Link to the workflow run and its artifacts.")
@click.option("--site-url", default="", envvar="PERFCI_SITE_URL", help="Where the dashboard is published (linked from issues).")
@click.option("--confirmations", "confirm_dir", type=click.Path(path_type=Path), default=None,
              help="Results of `perfci confirm`: a regression its A/B did not confirm opens no issue; a confirmed "
                   "one's flame graphs (beside its confirmation) are kept with the history for the dashboard.")
@options.noise_dir
@options.follow
@options.issue_budget
@click.option("--summary", "summary_out", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Append the night's summary (Markdown, one row per case: opened, commented, pending and why, "
                   "clean) to this file, e.g. $GITHUB_STEP_SUMMARY.")
@click.option("--webhook", "webhook_url", default=None, envvar="PERFCI_WEBHOOK_URL", metavar="URL",
              help="Also post the night in one chat message to this incoming webhook (Slack, Mattermost, Google Chat: "
                   "{\"text\"}; Discord: {\"content\"}); with --dry-run it is written to OUT/webhook.txt instead. "
                   "A failed post is said and changes nothing else. Env: PERFCI_WEBHOOK_URL (a secret).")
@options.json_output("nightly")
def nightly(results: tuple[Path, ...], history_dir: Path, baseline_dir: Path | None, window: int, min_nights: int,
            close_after: int, repo: str | None, dry_run: bool, issues_out: Path, run_url: str, site_url: str,
            confirm_dir: Path | None, noise_dir: Path | None, follow: Follow, budget: IssueBudget,
            summary_out: Path | None, webhook_url: str | None, json_out: Path | None) -> int:
    """After a nightly's bench jobs: triage accepted issues (reset their baselines), open,
    comment or close threshold issues against the history, append RESULTS to the
    history, and open one issue per persisting change point. Change points and threshold
    regressions no A/B confirmed open issues only at their share of the false-issue budget
    (--false-issues over --cases; judge/budget.py), and each issue says its level.

    Exit codes: 0 nothing told tonight (a regression still pending says so and why), 1 an
    issue was opened, commented or written (a regression judged and not cleared by its
    A/B, or a persisting change point; the history is written either way), 2 bad input,
    3 infrastructure or internal error."""
    dry_run_dir = options.dry_run_dir(dry_run, issues_out)
    if webhook_url:
        webhook.check_url(webhook_url)  # before the night: a bad URL is exit 2 with nothing done
    loaded = [load_result(p) for p in expand(list(results))]
    gh = None if dry_run_dir else GitHub(repo or os.environ.get("GITHUB_REPOSITORY", ""), run_url)
    opts = NightOptions(history_root=history_dir, baseline_root=baseline_dir, rules=Rules(follow=follow, noise_dir=noise_dir),
                        window=window, min_nights=min_nights, close_after=close_after, run_url=run_url, site_url=site_url,
                        budget=budget, confirmations_dir=confirm_dir)
    night = run_night(loaded, opts, gh, dry_run_dir, load_all(confirm_dir) if confirm_dir else None)
    say = options.text_out(json_out)
    for line in night.actions:
        say(line)
    cases = {r.id: CaseIdentity.of(r, follow).slug_path for r in loaded}
    for result_id, keys in night.standing.items():
        if keys:
            say(f"regression stands: {result_id}: {', '.join(keys)}")
    if not night.told:
        say("nothing opened or commented tonight" + (" (pending: see above)" if night.regression_stands else ""))
    repo_url = run_url.split("/actions/runs/")[0] if run_url else ""
    if summary_out is not None:
        with open(summary_out, "a") as f:
            f.write(night_summary(night.cases, run_url, repo_url))
    if webhook_url:
        message = chat_message(night.cases, run_url, repo_url)
        if dry_run_dir is not None:
            write_atomic(dry_run_dir / "webhook.txt", message + "\n")
            say(f"webhook: the night's message written to {dry_run_dir / 'webhook.txt'} (dry run)")
        else:
            say(webhook.post(webhook_url, message))
    options.emit_json(NightSummary(
        outcome=Outcome.REGRESSION if night.told else Outcome.UNCHANGED, actions=night.actions, cases=night.cases,
        standing=[StandingRegression(result_id=rid, case=cases.get(rid, ""), keys=keys)
                  for rid, keys in night.standing.items() if keys]).dump(), json_out)
    return EXIT_REGRESSION if night.told else 0
