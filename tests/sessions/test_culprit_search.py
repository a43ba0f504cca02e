"""The culprit the same night, without servers: which confirmations search the commits,
what they judge, and how the issue names the first slower commit (or the stretch left
when the search ran out of time)."""

from __future__ import annotations

import json

import pytest
from test_confirm import _ab_confirmation, issue_with, regressed

from perfci.model.confirmation import CONFIRMATION_FILE, Confirmation
from perfci.model.culprit import BisectStep, CulpritSearch, LineCommit
from perfci.sessions.culprit_search import commit_line_of, lead_regression

from conftest import run_perfci

GOOD, MID, CULPRIT, LAST = ("a" * 40, "b" * 40, "c" * 40, "d" * 40)
SUBJECTS = {GOOD: "as released", MID: "docs: a README", CULPRIT: "InnoDB: start from a clean row", LAST: "typo"}


def spec(sha: str) -> str:
    return f"build:mariadb@{sha}"


def step(ref: str, cand: str, verdict: str, ratio: float, mde: float | None = 0.021) -> BisectStep:
    return BisectStep(reference=spec(ref), candidate=spec(cand), verdict=verdict, ratio=ratio, low=ratio - 0.02,
                      high=ratio + 0.02, mde=mde)  # type: ignore[arg-type]


def search(**update) -> CulpritSearch:
    found = CulpritSearch(
        metric="tps", phases=["full-scan"], good=spec(GOOD), bad=spec(LAST),
        commits=[LineCommit(sha=s, subject=t) for s, t in SUBJECTS.items()],
        summary="first slower in …", first_bad=spec(CULPRIT), last_good=spec(MID),
        steps=[step(GOOD, LAST, "regression", 0.91), step(GOOD, MID, "unchanged", 1.0),
               step(MID, CULPRIT, "regression", 0.912, 0.018)], budget_minutes=120)
    return found.model_copy(update=update)


def test_only_two_builds_of_one_flavor_with_one_config_are_searched():
    assert commit_line_of((spec(GOOD), ()), (spec(LAST), ())) is not None
    for a, b in (((spec(GOOD), ()), (spec(GOOD), ())),                      # one commit
                 ((spec(GOOD), ()), ("build:mysql@" + LAST, ())),          # two flavors
                 ((spec(GOOD), ()), (spec(LAST), ("x=1",))),               # two configs
                 (("mariadb-10.11", ()), (spec(LAST), ())),                # a release and a build
                 (("local", ()), ("local", ()))):
        assert commit_line_of(a, b) is None
    # the lead metric, in every phase the A/B flagged it (not the others')
    assert lead_regression(["full-scan.tps", "full-scan.latency_ms_avg", "point-query.tps"]) == (
        "tps", ("full-scan", "point-query"))


@pytest.mark.slow  # over a second (CLI starts): --slow, as scripts/check runs it
def test_the_issue_names_the_first_slower_commit_with_its_ratio_interval_and_mde(tmp_path):
    comp, root = regressed(tmp_path, f"perfci run tiny --profile smoke --server {spec(LAST)}", tps=1010)
    text = issue_with(tmp_path, root, _ab_confirmation(comp.results[0].id, comp.label).model_copy(
        update={"a": spec(GOOD), "b": spec(LAST), "culprit": search()}))
    assert text.splitlines()[0].startswith(f"# tiny before: throughput −4.9 % since {CULPRIT[:7]} (A/B vs reference) (")
    assert ("**First slower commit: `cccccccccccc` InnoDB: start from a clean row** — `tps` in `full-scan` B/A 0.912 "
            "[0.892, 0.932] against its parent `bbbbbbbbbbbb` docs: a README; that A/B could see 1.8%.") in text
    assert "over the 4 commits from the reference to tonight's" in text
    assert "| 3 | `cccccccccccc` | `bbbbbbbbbbbb` | regression | 0.912 [0.892, 0.932] | 1.8% |" in text
    assert "### Which release" not in text and "To finish the search" not in text


def test_a_search_out_of_time_gives_the_bisect_that_finishes_it():
    from perfci.alert.regression_issues import which_release
    c = _ab_confirmation("r1", "tiny").model_copy(update={"a": spec(GOOD), "b": spec(LAST), "culprit": search(
        first_bad=None, last_good=None, remaining=[spec(MID), spec(LAST)],
        summary=f"out of time: the change lies after {spec(MID)}, up to {spec(LAST)}; still to search",
        steps=[step(GOOD, LAST, "regression", 0.91), step(GOOD, MID, "unchanged", 1.0)])})
    text = "\n".join(which_release("microbench", c, "default", "full-scan.tps"))
    assert "### Which commit" in text and "out of time: the change lies after" in text
    assert (f"perfci bisect microbench --good {spec(MID)} --bad {spec(LAST)} --metric tps --profile smoke "
            "--phase full-scan") in text


def test_a_confirmation_of_an_older_perfci_reads_without_a_search(tmp_path):
    data = _ab_confirmation("r1", "tiny").dump()
    data.pop("culprit")
    data["schema"] = "perfci.confirmation/4"
    path = tmp_path / "r1.confirmation.json"
    path.write_text(json.dumps(data))
    loaded = CONFIRMATION_FILE.load(path)
    assert isinstance(loaded, Confirmation) and loaded.culprit is None


def test_last_nights_search_out_of_time_resumes_in_the_stretch_it_left():
    from perfci.sessions.culprit_search import resumed_stretch
    line = [spec(s) for s in (GOOD, MID, CULPRIT, LAST, "e" * 40)]  # tonight's line: one commit more
    out_of_time = search(first_bad=None, last_good=None, remaining=[spec(MID), spec(LAST)],
                         steps=[step(GOOD, LAST, "regression", 0.91), step(GOOD, MID, "unchanged", 1.0)])
    stretch, apart = resumed_stretch(out_of_time, line, "tps")
    assert stretch == [spec(MID), spec(CULPRIT), spec(LAST)]
    assert (apart.reference, apart.candidate, apart.verdict, apart.ratio) == (spec(MID), spec(LAST), "regression", 0.91)
    # another reference, another metric, a stretch not on tonight's line, a finished search: from the start
    assert resumed_stretch(out_of_time, ["build:mariadb@" + "f" * 40, *line[1:]], "tps") is None
    assert resumed_stretch(out_of_time, line, "qps") is None
    assert resumed_stretch(out_of_time, line[:3], "tps") is None
    assert resumed_stretch(search(), line, "tps") is None
    assert resumed_stretch(None, line, "tps") is None


@pytest.mark.slow
def test_the_nightly_keeps_a_search_out_of_time_beside_the_history_and_drops_it_when_one_ends(tmp_path):
    from perfci.model.identity import CaseIdentity
    from perfci.store import culprit_files
    from perfci.store.results import load_result
    comp, root = regressed(tmp_path, f"perfci run tiny --profile smoke --server {spec(LAST)}", tps=1010)
    result = load_result(tmp_path / "candidate.json")
    left = search(first_bad=None, last_good=None, remaining=[spec(MID), spec(LAST)], summary="out of time: …")
    history = tmp_path / "history"
    history.mkdir()

    def night(found: CulpritSearch) -> str:
        c = _ab_confirmation(result.id, comp.label).model_copy(update={"a": spec(GOOD), "b": spec(LAST),
                                                                       "culprit": found})
        (tmp_path / "confirm").mkdir(exist_ok=True)
        (tmp_path / "confirm" / f"{result.id}.confirmation.json").write_text(json.dumps(c.dump()))
        proc = run_perfci("nightly", str(tmp_path / "candidate.json"), "--history", str(history), "--baseline-dir",
                          str(root), "--dry-run", "--out", str(tmp_path / "issues"), "--confirmations",
                          str(tmp_path / "confirm"))
        assert proc.returncode == 1, proc.stdout + proc.stderr
        return proc.stdout

    assert "resumes next night between" in night(left)
    case = CaseIdentity.of(result)
    kept = culprit_files.pending(history, case)
    assert kept is not None and kept.remaining == [spec(MID), spec(LAST)]
    assert culprit_files.pending_path(history, case).name.endswith(".culprit.json")
    assert "ended (first slower in" in night(search(summary="first slower in …"))
    assert culprit_files.pending(history, case) is None


def test_the_search_judges_the_metric_the_ab_saw_most_clearly():
    from perfci.judge.paired import PairedEstimate, PairedVerdict
    from perfci.model.verdicts import Outcome
    from perfci.sessions.culprit_search import clearest

    def row(key: str, ratio: float, mde: float) -> PairedVerdict:
        est = PairedEstimate(n_pairs=20, block=2, n_blocks=10, scale="log", ratio=ratio, low=ratio * 0.98,
                             high=ratio * 1.02, p=0.001, spread=0.05, lag1=0.0)
        r = PairedVerdict(key, None, 1.0, ratio, est, 0.001, Outcome.REGRESSION)
        r.mde = mde
        return r

    rows = [row("p.tps", 0.95, 0.02), row("p.fsyncs_per_txn", 40.0, 0.05), row("q.tps", 0.99, 0.001)]
    assert clearest(rows, ["p.tps", "p.fsyncs_per_txn"]) == "p.fsyncs_per_txn"  # 0 -> 1 fsync beats 5 %
    assert clearest(rows, ["p.tps", "q.tps"]) == "q.tps"  # 1 % at an MDE of 0.1 % is 10 MDEs: 5 % at 2 % is 2.6
    assert clearest([], ["p.tps"]) == "p.tps"
