"""The sticky PR comment: one comment per pull request, edited on every push, written
from the PR check's A/B reports by a GitHub-hosted job (the write token never on the
self-hosted runner that ran the PR's code).

It starts with one verdict line over every A/B of the PR, then each A/B's own verdict
line (from its typed verdict, the JSON beside its report), whether a regression was
accepted by the `perf-expected` label, and every full report folded away. The
reports are the PR job's output — input here: nothing in them runs, and the PR number
they came with must have the head commit the workflow run measured."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from perfci.alert.github import ACCEPT_LABEL, GITHUB_BODY_LIMIT, GitHub, Pull
from perfci.model.ab_verdict import AB_VERDICT_FILE, AbVerdict
from perfci.model.outputs import CHECK_VERDICT, CheckVerdict
from perfci.model.verdicts import Outcome
from perfci.report.opening import opening
from perfci.util.errors import BadInput
from perfci.util.text import code_span, inert_markdown, markdown

MARK = "<!-- perfci-pr-comment -->"
SHA_RE = re.compile(r"[0-9a-f]{40}")
BODY_LIMIT = GITHUB_BODY_LIMIT - 1_000  # room for the verdict lines and the mark
CAPPED = " (too long for a comment)."


@dataclass(frozen=True)
class ABReport:
    """One report of the PR check: its Markdown (shown folded) and its typed verdict
    (the JSON beside it: `perfci ab --json`, `harness-check --json`, `baseline diff
    --json`), which alone decides what the comment says."""
    name: str
    text: str
    data: AbVerdict | CheckVerdict

    @property
    def verdict(self) -> str:
        return self.data.verdict_line

    @property
    def outcome(self) -> Outcome:
        return self.data.outcome

    @property
    def blind_below(self) -> float | None:
        """The largest change, in %, this A/B could have missed (its worst judged metric's MDE)."""
        if isinstance(self.data, AbVerdict) and self.data.blind_below is not None:
            return round(self.data.blind_below * 100, 1)
        return None

    @property
    def regressed(self) -> bool:
        return self.outcome == Outcome.REGRESSION


def load_reports(paths: list[Path]) -> list[ABReport]:
    """Each report with its verdict, NAME.json beside NAME.md (a report without one is
    refused: the comment never guesses a verdict from prose)."""
    out = []
    for path in paths:
        verdict = path.with_suffix(".json")
        if not verdict.is_file():
            raise BadInput(f"{path}: no verdict beside it ({verdict.name}: written by perfci ab, harness-check or "
                           "baseline diff with --json)")
        try:
            raw = verdict.read_text(encoding="utf-8")
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise BadInput(f"{path}: cannot read the report or its verdict ({exc})") from None
        fmt = CHECK_VERDICT if '"perfci.check-verdict/' in raw else AB_VERDICT_FILE
        out.append(ABReport(path.stem.removeprefix("ab-"), text, fmt.parse_text(raw, str(verdict))))
    return out


def body(reports: list[ABReport], head_sha: str, accepted: bool, run_url: str = "") -> str:
    worst = _blind(reports)  # the largest change the PR's A/Bs could have missed
    if not reports:
        head = "✅ **No scenario changed**: nothing to A/B."
    elif any(r.regressed for r in reports):
        head = ("🟡 **Regression, accepted** by the `perf-expected` label" if accepted
                else "🔴 **Regression**: the check fails (add the `perf-expected` label if it is intended)")
    elif any(r.outcome in (Outcome.INCONCLUSIVE, Outcome.UNSTABLE) for r in reports):
        head = "⚪ **No regression found**, not every metric conclusive" + (
            f": could not see changes below {worst}" if worst else " (see each A/B's smallest detectable change)")
    else:
        head = (f"✅ **No change beyond {worst}**: every judged metric within its tolerance" if worst
                else "✅ **No change** beyond the tolerance")
    lines = [MARK, f"### perfci: {head}", ""]
    # each regressed A/B's four lines first (what, how sure, why, reproduce: report/opening.py,
    # from its typed verdict); the reports come from an artifact the PR's own run wrote:
    # rendered inert (no HTML, mention or image), as the issues render stored text
    for r in reports:
        if r.regressed and isinstance(r.data, AbVerdict):
            lines += [f"**{markdown(plain_name(r.name))}**", *(f"- {inert_markdown(line)}" for line in opening(r.data)),
                      ""]
    lines += [f"A/B of the PR's base (A) against its head (B) at `{head_sha[:12]}`"
              + (f" · [run]({run_url})" if run_url else ""), ""]
    lines += [f"- {code_span(plain_name(r.name))}: {inert_markdown(r.verdict)}" for r in reports]
    for r in reports:  # why a regressed A/B got slower, unfolded: the explain pass's top rows
        if r.regressed and isinstance(r.data, AbVerdict) and (explained := r.data.why):
            lines += ["", f"#### Why {markdown(plain_name(r.name))} got slower: " + inert_markdown(explained)]
            if r.data.explain_dir:  # a path on the runner: the comment names the artifact it was uploaded as
                lines += ["", f"Flame graphs: `{plain_name(Path(r.data.explain_dir).name)}/` in the `pr-explain` "
                              "artifact" + (f" of [the run]({run_url})" if run_url else " of the check's run")
                          + " (`PHASE-diff.svg`: B against A, red grew)."]
    folded = [["", f"<details><summary>{plain_name(r.name)}: full report</summary>", "",
               inert_markdown(r.text.strip()), "", "</details>"] for r in reports]
    size = len("\n".join(lines))
    kept: list[list[str]] = []
    for r, block in zip(reports, folded):  # GitHub refuses a body over 65,536 characters
        if size + len("\n".join(block)) + 1 > BODY_LIMIT:
            block = ["", f"{markdown(plain_name(r.name))}: the full report is in the run's artifacts"
                     + (f" ([run]({run_url}))" if run_url else "") + CAPPED]
        kept.append(block)
        size += len("\n".join(block)) + 1
    return "\n".join(lines + [line for block in kept for line in block]) + "\n"


def plain_name(name: str) -> str:
    """A report's name (its artifact file's) as letters, digits and . _ + - only: inert
    as it is inside HTML (<summary>), where a Markdown escape would show."""
    return re.sub(r"[^\w.+-]", "_", name)


def _blind(reports: list[ABReport]) -> str:
    """The largest change any of the PR's A/Bs could have missed ("6 %"), or ""."""
    worst = [b for b in (r.blind_below for r in reports) if b is not None]
    return f"{max(worst):g} %" if worst else ""


@dataclass(frozen=True)
class Acceptance:
    accepted: bool
    why: str  # one sentence: who added the label, and whether that counts


def acceptance(gh: GitHub, number: int, pull: Pull | None = None) -> Acceptance:
    """Does PR `number` carry the perf-expected label as GitHub has it now, added (last)
    by someone with write access? Triage access may add labels, so the label alone
    accepts nothing: the PR check's verdict and its comment both ask this."""
    pull = pull or gh.pull(number)
    if ACCEPT_LABEL not in [label.get("name") for label in pull.get("labels") or []]:
        return Acceptance(False, f"PR #{number} does not carry the {ACCEPT_LABEL} label")
    who = gh.labelled_by(number, ACCEPT_LABEL)
    if not who:
        return Acceptance(False, f"PR #{number} carries {ACCEPT_LABEL}, but GitHub names no one who added it: "
                                 "not accepted")
    if gh.can_write(who):
        return Acceptance(True, f"{ACCEPT_LABEL} added to PR #{number} by @{who}, who has write access: accepted")
    return Acceptance(False, f"{ACCEPT_LABEL} added to PR #{number} by @{who}, who has no write access: "
                             "not accepted (someone with write access must add it)")


def post(gh: GitHub, number: int, head_sha: str, reports: list[ABReport], run_url: str = "") -> str:
    """Edit the PR's perfci comment, or write it. Refuses a PR whose head is not the
    commit that was measured (a report must not land on another PR, or an older one).
    Whether a regression is accepted comes from the PR's labels as GitHub has them now
    (added by someone with write access), never from the reports."""
    if not SHA_RE.fullmatch(head_sha):
        raise BadInput(f"--head-sha {head_sha!r}: expected a full 40-character commit id")
    pull = gh.pull(number)
    current = pull["head"]["sha"]
    if current != head_sha:
        raise BadInput(f"PR #{number}: its head is {current[:12]}, not the measured {head_sha[:12]}: "
                       "not commenting (a newer push has its own check)")
    text = body(reports, head_sha, acceptance(gh, number, pull).accepted, run_url)
    mine = [c for c in gh.comments(number) if MARK in (c.get("body") or "") and "id" in c]
    if mine:
        gh.edit_comment(mine[0]["id"], text)
        return f"edited the perfci comment on #{number}"
    gh.comment(number, text)
    return f"commented on #{number}"
