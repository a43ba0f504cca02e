"""Bisection over releases (judge/bisect.py): what it measures next and what it
concludes, against A/Bs stood in by a model of each release's true speed: an A/B sees a
change beyond its MDE (a regression or improvement), calls it unchanged below half of
it, and inconclusive in between; a flaky step answers inconclusive first."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from perfci.host.hostlock import bench_processes
from perfci.judge.bisect import Step, bisect

from conftest import REPO, run_perfci

RELEASES = ["8.0.12", "8.0.15", "8.0.20", "8.0.22", "8.0.25", "8.0.28", "8.0.31"]


def ab_model(speed: dict[str, float], mde: float = 0.05, flaky: set[tuple[str, str]] | None = None):
    """A Compare over true speeds (higher is faster); records every pair it was asked."""
    asked: list[tuple[str, str]] = []
    flaky = set(flaky or ())

    def compare(reference: str, candidate: str) -> Step:
        asked.append((reference, candidate))
        ratio = speed[candidate] / speed[reference]
        if (reference, candidate) in flaky:
            flaky.discard((reference, candidate))
            verdict = "inconclusive"
        elif ratio < 1 - mde:
            verdict = "regression"
        elif ratio > 1 + mde:
            verdict = "improvement"
        elif abs(ratio - 1) < mde / 2:
            verdict = "unchanged"
        else:
            verdict = "inconclusive"
        return Step(reference, candidate, verdict, ratio, ratio * 0.98, ratio * 1.02)

    return compare, asked


def test_one_release_that_did_it_is_found_in_log2_steps_and_checked_against_its_predecessor():
    speed = {r: (1.0 if i < 4 else 0.9) for i, r in enumerate(RELEASES)}  # 8.0.25 is 10 % slower
    compare, asked = ab_model(speed)
    found = bisect(RELEASES, compare)
    assert (found.first_bad, found.last_good) == ("8.0.25", "8.0.22")
    assert found.summary() == "first slower in 8.0.25 (B/A 0.900 [0.882, 0.918]); 8.0.22 was not"
    assert asked[0] == ("8.0.12", "8.0.31")  # the ends first
    assert len(asked) <= 1 + 3 + 1  # ends, log2(7) midpoints, the final adjacent check at most
    assert asked[-1] == ("8.0.22", "8.0.25") or ("8.0.22", "8.0.25") in asked


def test_a_slowdown_spread_over_releases_is_said_to_be_spread():
    # 2 % per release: the ends are 11 % apart, no single release step is beyond the 5 % MDE
    speed = {r: 0.98 ** i for i, r in enumerate(RELEASES)}
    compare, asked = ab_model(speed)
    found = bisect(RELEASES, compare)
    assert found.first_bad is None and found.spread_between == ("8.0.12", "8.0.31")
    assert found.summary().startswith("spread over several releases: slower from 8.0.12 to 8.0.31")
    last = asked[-1]
    assert RELEASES.index(last[1]) - RELEASES.index(last[0]) == 1  # it ended on adjacent releases


def test_a_flaky_middle_step_is_measured_again_and_the_search_goes_on():
    speed = {r: (1.0 if i < 2 else 0.85) for i, r in enumerate(RELEASES)}  # 8.0.20 did it
    compare, asked = ab_model(speed, flaky={("8.0.12", "8.0.22")})
    found = bisect(RELEASES, compare)
    assert (found.first_bad, found.last_good) == ("8.0.20", "8.0.15")
    assert asked.count(("8.0.12", "8.0.22")) == 2  # inconclusive, then again
    assert [s.verdict for s in found.steps[:3]] == ["regression", "inconclusive", "regression"]


def test_a_step_that_stays_inconclusive_looks_after_it_and_says_what_stayed_below_the_mde():
    speed = {r: (1.0 if i < 3 else 0.96) for i, r in enumerate(RELEASES)}  # 4 %: between MDE/2 and MDE
    speed["8.0.31"] = 0.8
    compare, asked = ab_model(speed)
    found = bisect(RELEASES, compare, retries=1)
    assert asked[1:4] == [("8.0.12", "8.0.22"), ("8.0.12", "8.0.22"), ("8.0.22", "8.0.31")]  # again, then the rest
    assert (found.first_bad, found.last_good) == ("8.0.31", "8.0.28") and found.ends_apart
    assert found.summary() == ("first slower in 8.0.31 (B/A 0.833 [0.817, 0.850]); 8.0.28 was not; 8.0.12 -> 8.0.22 "
                               "stayed inconclusive (B/A 0.960 [0.941, 0.979]): a smaller change there is possible")


def test_two_inconclusive_halves_of_ends_apart_are_a_spread_slowdown():
    # 4 % up to 8.0.22 and 4 % after it: each half below the 5 % MDE, the ends 7.8 % apart
    speed = {r: (1.0 if i < 3 else 0.96 if i < 6 else 0.96 * 0.96) for i, r in enumerate(RELEASES)}
    compare, asked = ab_model(speed)
    found = bisect(RELEASES, compare, retries=0)
    assert asked == [("8.0.12", "8.0.31"), ("8.0.12", "8.0.22"), ("8.0.22", "8.0.31")]
    assert found.spread_between == ("8.0.12", "8.0.31") and found.first_bad is None and found.ends_apart
    assert found.summary().startswith("spread over several releases: slower from 8.0.12 to 8.0.31")


def test_an_inconclusive_half_and_an_unchanged_rest_leave_it_undecided_saying_where():
    # 4.5 % up to 8.0.22 (inconclusive), 1 % after (unchanged), the ends 5.5 % apart (a regression)
    speed = {r: (1.0 if i < 3 else 0.955 if i == 3 else 0.955 * 0.99) for i, r in enumerate(RELEASES)}
    compare, asked = ab_model(speed)
    found = bisect(RELEASES, compare, retries=1)
    assert asked[-1] == ("8.0.22", "8.0.31") and found.ends_apart and found.first_bad is None
    assert found.undecided_between == ("8.0.12", "8.0.22")
    assert found.summary() == "undecided between 8.0.12 and 8.0.22: an A/B stayed inconclusive"


def test_known_ends_are_not_measured_again():
    """The nightly's reference A/B already judged the ends: the search starts at the midpoint."""
    speed = dict.fromkeys(RELEASES, 100.0) | {"8.0.25": 90.0, "8.0.28": 90.0, "8.0.31": 90.0}
    compare, asked = ab_model(speed)
    ends = Step("8.0.12", "8.0.31", "regression", 0.9, 0.88, 0.92)
    found = bisect(RELEASES, compare, ends=ends)
    assert ("8.0.12", "8.0.31") not in asked and asked[0] == ("8.0.12", "8.0.22")
    assert found.first_bad == "8.0.25" and found.steps[0] is ends
    with pytest.raises(ValueError, match="not of this line's ends"):
        bisect(RELEASES, compare, ends=Step("8.0.15", "8.0.31", "regression", 0.9, 0.88, 0.92))


def test_a_search_out_of_time_says_the_stretch_left_and_resumes_there():
    """A Compare with no time left raises OutOfTime: the search stops with the stretch
    it had narrowed to; a search over that stretch with its ends known finds the same
    release as one that had time."""
    from perfci.judge.bisect import OutOfTime
    speed = dict.fromkeys(RELEASES, 100.0) | {"8.0.25": 90.0, "8.0.28": 90.0, "8.0.31": 90.0}
    compare, asked = ab_model(speed)

    def two_steps(reference: str, candidate: str) -> Step:
        if len(asked) == 2:
            raise OutOfTime()
        return compare(reference, candidate)

    found = bisect(RELEASES, two_steps)
    assert found.ends_apart and found.first_bad is None and found.remaining == ("8.0.22", "8.0.31")
    assert found.summary().startswith("out of time: the change lies after 8.0.22, up to 8.0.31")
    line = RELEASES[RELEASES.index("8.0.22"):]
    ends = Step("8.0.22", "8.0.31", "regression", 0.9, 0.88, 0.92)  # stood for by last night's steps
    resumed = bisect(line, ab_model(speed)[0], ends=ends)
    assert (resumed.first_bad, resumed.last_good) == ("8.0.25", "8.0.22")
    # out of time before the ends were judged: nothing is known, nothing to resume
    never = bisect(RELEASES, lambda a, b: (_ for _ in ()).throw(OutOfTime()))
    assert never.remaining is None and never.undecided_between == ("8.0.12", "8.0.31")


def test_ends_that_are_not_apart_end_it_at_once():
    compare, asked = ab_model(dict.fromkeys(RELEASES, 1.0))
    found = bisect(RELEASES, compare)
    assert found.no_regression and not found.ends_apart and asked == [("8.0.12", "8.0.31")]
    assert found.summary().startswith("no regression between the ends: 8.0.31 vs 8.0.12: unchanged")
    with pytest.raises(ValueError):
        bisect(["8.0.31"], compare)


# ---------------------------------------------------------------- over commits (build: specs)


def _git_line(root: Path, subjects: list[str], side_branch: bool = False) -> tuple[Path, list[str]]:
    """A repository whose main line has one commit per subject (tag `v1` on the first);
    with `side_branch`, a commit merged in after them that main does not descend from."""
    repo = root / "src"
    repo.mkdir()

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(repo), "-c", "user.name=dev", "-c", "user.email=dev@example.invalid",
                               *args], check=True, capture_output=True, text=True).stdout.strip()

    git("init", "-q", "-b", "main")
    for i, subject in enumerate(subjects):
        (repo / "f").write_text(f"{i}\n")
        git("add", "f")
        git("commit", "-q", "-m", subject)
    git("tag", "v1", "HEAD~" + str(len(subjects) - 1))
    if side_branch:
        git("checkout", "-q", "-b", "side", "v1")
        (repo / "g").write_text("side\n")
        git("add", "g")
        git("commit", "-q", "-m", "side: a feature")
        git("checkout", "-q", "main")
        git("merge", "-q", "--no-ff", "-m", "merge side", "side")
    return repo, git("rev-list", "--first-parent", "--reverse", "main").split()


def _build_server(*args: str, repo: Path, cache: Path) -> subprocess.CompletedProcess:
    """scripts/build-server as a workflow step starts it: bash, a clean env of its own."""
    env = {**os.environ, "PERFCI_CACHE": str(cache), "PERFCI_BUILD_REPO": str(repo),
           "PERFCI_LOCK_FILE": str(cache.parent / "host.lock"), "GIT_TERMINAL_PROMPT": "0"}
    env.pop("PERFCI_HOST_LOCK_HELD", None)
    return subprocess.run(["bash", str(REPO / "scripts" / "build-server"), *args], env=env, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.slow
def test_build_server_lists_the_first_parent_line_from_the_good_ref_to_the_bad_one(tmp_path):
    repo, main_line = _git_line(tmp_path, ["as released", "a fix", "a slowdown"], side_branch=True)
    done = _build_server("--commits", "mariadb", "v1", "main", repo=repo, cache=tmp_path / "cache")
    assert done.returncode == 0, done.stderr
    listed = [line.split(" ", 1) for line in done.stdout.splitlines()]
    assert [sha for sha, _ in listed] == main_line  # the side branch's own commit is not a step: its merge is
    assert [subject for _, subject in listed] == ["as released", "a fix", "a slowdown", "merge side"]
    # the fork's clone is its own, never upstream's source tree
    assert [p.name for p in (tmp_path / "cache" / "src").iterdir()] == [f"mariadb-{_repo_hash(repo)}"]
    backwards = _build_server("--commits", "mariadb", "main", "v1", repo=repo, cache=tmp_path / "cache")
    assert backwards.returncode == 2 and "is not an ancestor of v1" in backwards.stderr.splitlines()[-1]
    bad = _build_server("--commits", "mariadb", "v1", "main;rm", repo=repo, cache=tmp_path / "cache")
    assert bad.returncode == 2 and bad.stderr.strip() == "bad git ref 'main;rm'"


def _repo_hash(repo: Path) -> str:
    import hashlib
    return hashlib.sha256(str(repo).encode()).hexdigest()[:12]


@pytest.mark.slow
def test_mixed_ends_are_bad_input_before_the_host_is_claimed(tmp_path):
    """Exit 2 at once, even on a busy host (a sysbench running): nothing waits for the host."""
    fake = subprocess.Popen(["bash", "-c", "exec -a sysbench sleep 60"])
    try:
        deadline = time.monotonic() + 5
        while f"sysbench (pid {fake.pid})" not in bench_processes() and time.monotonic() < deadline:
            time.sleep(0.05)
        mixed = run_perfci("bisect", "rebuild-after-delete", "--good", "mysql-8.0.15", "--bad", "build:mysql@main",
                           "--out", str(tmp_path / "o"), env={"PERFCI_LOCK_FILE": str(tmp_path / "host.lock")})
    finally:
        fake.kill()
        fake.wait()
    assert mixed.returncode == 2 and mixed.stderr == (
        "error: --good 'mysql-8.0.15' --bad 'build:mysql@main': both ends are build: specs (a bisect over commits) "
        "or both servers.yaml releases\n")
    assert not (tmp_path / "o").exists()
    typo = run_perfci("bisect", "rebuild-after-delete", "--good", "mysql-8.0.15", "--bad", "mysql-8.0.3",
                      "--out", str(tmp_path / "o"), env={"PERFCI_LOCK_FILE": str(tmp_path / "host.lock")})
    assert typo.returncode == 2 and typo.stderr.startswith("error: --bad 'mysql-8.0.3': not a server id (known: ")


@pytest.mark.slow
@pytest.mark.alone  # bisect has no --allow-busy: a sysbench beside it (the smoke series') is refused first
def test_bisect_over_commits_refuses_refs_out_of_order_in_one_line(tmp_path):
    repo, _ = _git_line(tmp_path, ["as released", "a slowdown"])
    env = {"PERFCI_CACHE": str(tmp_path / "cache"), "PERFCI_BUILD_REPO": str(repo),
           "PERFCI_LOCK_FILE": str(tmp_path / "host.lock")}
    backwards = run_perfci("bisect", "rebuild-after-delete", "--good", "build:mariadb@main", "--bad",
                           "build:mariadb@v1", "--out", str(tmp_path / "o"), env=env)
    assert backwards.returncode == 2 and len(backwards.stderr.splitlines()) == 1, backwards.stderr
    assert "build-server: main (" in backwards.stderr and "is not an ancestor of v1" in backwards.stderr
    same = run_perfci("bisect", "rebuild-after-delete", "--good", "build:mariadb@main", "--bad", "build:mariadb@main",
                      "--out", str(tmp_path / "o"), env=env)
    assert same.returncode == 2 and "the same commit" in same.stderr
    assert not list((tmp_path / "o").glob("*.md"))  # nothing measured, no report


def test_what_a_bisect_may_cost_is_counted_before_it_runs():
    """At least the ends and one midpoint per halving; at most also a second A/B at each
    midpoint and the last pair's check, each undecided and retried."""
    from perfci.judge.bisect import bisect_steps
    from perfci.sessions.sized_ab import AbPlan, cost_line

    assert bisect_steps(2) == (1, 2)  # the ends only
    assert bisect_steps(13, retries=0) == (1 + 4, 1 + 8 + 1)  # twelve commits apart: four halvings
    least, most = bisect_steps(13)
    line = cost_line("the bisect", least, most, AbPlan(budget_minutes=10))
    assert line == (f"the bisect: {least}-{most} A/Bs, each sized within 10 min: up to about {least * 10}-{most * 10} "
                    "min (an A/B clear at its interim look stops sooner)")
