"""scripts/results-branch against real git repositories (a local bare one stands in for
GitHub): no failure mode of clone or push may cost a night of history."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from conftest import REPO
from simulated_month import git, results_branch

SCRIPT = REPO / "scripts" / "results-branch"
CASE = "history/local/mariadb-10.11/s/smoke/default.jsonl"


def branch(remote: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GH_", "GITHUB_"))}
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, timeout=60,
                          env={**env, "PERFCI_RESULTS_REMOTE": str(remote)})


def night(clone: Path, line: str) -> Path:
    """What the report job does: the clone's history plus tonight's line, as NEW."""
    new = clone.parent / f"{clone.name}-new"
    subprocess.run(["cp", "-R", str(clone / "history"), str(new)], check=True)
    path = new / CASE.removeprefix("history/")
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        f.write(line + "\n")
    return new


def on_branch(remote: Path) -> list[str]:
    return git("--git-dir", str(remote), "show", f"results:{CASE}").splitlines()


def test_a_failed_clone_stops_instead_of_starting_an_empty_history(tmp_path):
    proc = branch(tmp_path / "unreachable.git", "clone", str(tmp_path / "c"))
    assert proc.returncode == 3 and "not starting an empty history in its place" in proc.stderr
    assert not (tmp_path / "c" / "history").exists()
    empty = tmp_path / "empty.git"
    git("init", "-q", "--bare", str(empty))  # reachable, and truly without a results branch
    proc = branch(empty, "clone", str(tmp_path / "d"))
    assert proc.returncode == 0 and "no results branch" in proc.stdout and (tmp_path / "d" / "history").is_dir()


def test_a_stale_clone_and_a_rejected_push_lose_no_night(tmp_path):
    remote = results_branch(tmp_path)
    for name in ("a", "b"):  # two report jobs that cloned the same branch
        assert branch(remote, "clone", str(tmp_path / name)).returncode == 0
    first = branch(remote, "publish", str(tmp_path / "a"), str(night(tmp_path / "a", '{"night": 1}')))
    assert first.returncode == 0, first.stderr
    second = branch(remote, "publish", str(tmp_path / "b"), str(night(tmp_path / "b", '{"night": 2}')))
    assert second.returncode == 0, second.stderr
    assert "push rejected" in second.stdout
    assert on_branch(remote) == ['{"night": 1}', '{"night": 2}']
    # the push job clones afresh and publishes a NEW built from an older clone: night 2 stays
    assert branch(remote, "clone", str(tmp_path / "c")).returncode == 0
    third = branch(remote, "publish", str(tmp_path / "c"), str(night(tmp_path / "a", '{"night": 3}')))
    assert third.returncode == 0, third.stderr
    assert on_branch(remote) == ['{"night": 1}', '{"night": 2}', '{"night": 3}']


def test_a_torn_last_line_on_the_branch_does_not_swallow_the_next_night(tmp_path):
    remote = results_branch(tmp_path)
    seed = tmp_path / "seed"
    (seed / CASE).parent.mkdir(parents=True)
    (seed / CASE).write_text('{"night": 1}\n{"nig')  # an append cut short, pushed as it was
    git("add", "-A", cwd=seed)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "torn", cwd=seed)
    git("push", "-q", str(remote), "results", cwd=seed)
    assert branch(remote, "clone", str(tmp_path / "a")).returncode == 0
    new = tmp_path / "new"  # as perfci's append leaves it: the torn line moved aside, tonight's added
    (new / CASE).parent.mkdir(parents=True)
    (new / CASE).write_text('{"night": 1}\n{"night": 2}\n')
    assert branch(remote, "publish", str(tmp_path / "a"), str(new / "history")).returncode == 0
    assert on_branch(remote) == ['{"night": 1}', '{"nig', '{"night": 2}']  # the next reader moves '{"nig' aside


def test_a_kept_commit_search_is_replaced_whole_and_removed_when_it_ends(tmp_path):
    """CASE.culprit.json is one document, not lines: tonight's copy replaces the branch's
    (a line merge would splice two JSON documents), and a search that ended is removed."""
    remote = results_branch(tmp_path)
    search = CASE.replace(".jsonl", ".culprit.json").removeprefix("history/")

    def publish(name: str, document: str | None) -> None:
        assert branch(remote, "clone", str(tmp_path / name)).returncode == 0
        new = night(tmp_path / name, f'{{"night": "{name}"}}')
        if document is None:
            (new / search).unlink()
        else:
            (new / search).write_text(document)
        proc = branch(remote, "publish", str(tmp_path / name), str(new))
        assert proc.returncode == 0, proc.stderr

    publish("a", '{\n "remaining": ["a", "d"]\n}\n')
    publish("b", '{\n "remaining": ["b", "d"]\n}\n')
    shown = git("--git-dir", str(remote), "show", f"results:history/{search}")
    assert shown.strip() == "{\n \"remaining\": [\"b\", \"d\"]\n}"
    publish("c", None)
    assert search not in git("--git-dir", str(remote), "ls-tree", "-r", "--name-only", "results")
    assert on_branch(remote) == ['{"night": "a"}', '{"night": "b"}', '{"night": "c"}']


def test_only_history_files_are_published_and_never_through_a_link(tmp_path):
    """NEW holds a link named like a history file, a stray file and a dot-directory: only
    the history line reaches the branch. A link committed into the branch's history/ stops
    the publish before anything is written through it. (Removed once: the link's target
    and the stray file were pushed.)"""
    remote = results_branch(tmp_path)
    assert branch(remote, "clone", str(tmp_path / "a")).returncode == 0
    new = night(tmp_path / "a", '{"night": 1}')
    secret = tmp_path / "runner-secret"
    secret.write_text("token\n")
    (new / "local" / "leak.jsonl").symlink_to(secret)
    (new / "notes.txt").write_text("stray\n")
    (new / ".git").mkdir()
    (new / ".git" / "x.jsonl").write_text("{}\n")
    proc = branch(remote, "publish", str(tmp_path / "a"), str(new))
    assert proc.returncode == 0, proc.stderr
    files = git("--git-dir", str(remote), "ls-tree", "-r", "--name-only", "results").split()
    assert [f for f in files if f.startswith("history/") and f != "history/.keep"] == [CASE], files
    assert "not published: ./local/leak.jsonl" in proc.stdout and "not published: ./notes.txt" in proc.stdout
    # a link in the branch itself (someone committed it): nothing is written through it
    clone = tmp_path / "b"
    assert branch(remote, "clone", str(clone)).returncode == 0
    target = tmp_path / "outside.jsonl"
    target.write_text("")
    (clone / "history" / "local" / "mariadb-10.11" / "s" / "smoke" / "other.jsonl").symlink_to(target)
    proc = branch(remote, "publish", str(clone), str(night(clone, '{"night": 2}')))
    assert proc.returncode == 3 and "holds a symbolic link" in proc.stderr, proc.stderr
    assert target.read_text() == ""
