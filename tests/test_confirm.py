"""The second stage of a nightly alert, without servers: what the confirmation A/B
compares, when it cannot run, and what its outcome does to the issue."""

from __future__ import annotations

import json

from perfci.judge.compare import compare
from perfci.sessions.confirm import Confirmation, confirm_case, last_good, run_args, save
from perfci.store.baseline import load_baseline, update
from perfci.util.progress import Progress

from conftest import run_perfci
from factories import make_result, write_results


def test_the_server_and_config_of_a_run_come_from_its_reproduce_command():
    assert run_args("perfci run s --profile smoke --server local") == ("local", ())
    assert run_args("perfci run s --server 'tarball:/x y.tar.gz' --config b=2 --config a=1") == (
        "tarball:/x y.tar.gz", ("a=1", "b=2"))  # overrides in a stable order
    assert run_args("perfci run s --profile smoke") is None
    assert run_args("perfci run 'unbalanced") is None


def regressed(tmp_path, candidate_reproduce: str):
    root = tmp_path / "baselines"
    update(write_results(tmp_path / "base", [make_result(tps=1000 + 5 * i) for i in range(5)]), root=root)
    data = make_result(tps=600).dump()
    data["reproduce"] = candidate_reproduce
    path = tmp_path / "candidate.json"
    path.write_text(json.dumps(data))
    from perfci.store.results import load_result
    [comp] = compare([load_result(path)], baseline_root=root)
    assert comp.regressions
    return comp, root


def test_the_last_good_server_is_the_baselines_newest_sample(tmp_path):
    comp, root = regressed(tmp_path, "perfci run tiny --profile smoke --server local")
    [path] = list(root.rglob("*.json"))
    baseline = load_baseline(path)
    assert last_good(baseline).reproduce == "perfci run tiny --profile smoke --server local"
    assert last_good(baseline).date == max(s.date for s in baseline.samples)


def test_a_run_on_the_baselines_own_server_and_config_is_not_ab_tested(tmp_path):
    comp, _ = regressed(tmp_path, "perfci run tiny --profile smoke --server local")
    c = confirm_case(comp, "smoke", 10, tmp_path, tmp_path / "out", Progress(quiet=True), "local", 0.01)
    assert c.status == "not-run" and "compare the server with itself" in c.reason and not c.failed
    assert c.nightly_regressions and c.a == c.b == "local"
    assert not (tmp_path / "out").exists()  # nothing ran


def test_a_scenario_that_cannot_be_split_is_recorded_not_judged(tmp_path):
    # `tiny` is no scenario of scenarios/: the A/B's planning refuses it with one line, recorded
    comp, _ = regressed(tmp_path, "perfci run tiny --profile smoke --server local --config innodb_flush_log_at_trx_commit=1")
    c = confirm_case(comp, "smoke", 10, tmp_path, tmp_path / "out", Progress(quiet=True), "local", 0.01)
    assert c.status == "not-run" and c.reason.startswith("the confirmation A/B could not run:") and not c.failed
    assert c.b == "local --config innodb_flush_log_at_trx_commit=1"


def test_an_ab_that_fails_on_the_runner_is_recorded_as_failed(tmp_path, monkeypatch):
    """A server that does not start is the runner's problem (confirm exits 3), not
    "nothing to compare" (exit 0): the confirmation says which."""
    from perfci.sessions import confirm as confirm_mod
    from perfci.util.errors import InfraFailure

    def no_server(*args, **kwargs):
        raise InfraFailure("side A: the server did not start within 60 s")
    monkeypatch.setattr(confirm_mod, "plan_sides", no_server)
    comp, _ = regressed(tmp_path, "perfci run tiny --profile smoke --server local --config innodb_flush_log_at_trx_commit=1")
    c = confirm_case(comp, "smoke", 10, tmp_path, tmp_path / "out", Progress(quiet=True), "local", 0.01)
    assert c.status == "not-run" and c.failed
    assert c.reason == "the confirmation A/B failed: side A: the server did not start within 60 s"


def test_a_server_spec_written_into_a_result_or_the_history_never_runs_unless_pinned(tmp_path):
    """The candidate's reproduce string names a `tarball:` spec no servers.yaml pins:
    the confirmation refuses to run it (before any download or start)."""
    comp, _ = regressed(tmp_path, "perfci run tiny --profile smoke --server "
                                  "'tarball:https://127.0.0.1:9/evil.tar.gz#sha256=" + "0" * 64 + "'")
    c = confirm_case(comp, "smoke", 10, tmp_path, tmp_path / "out", Progress(quiet=True), "local", 0.01)
    assert c.status == "not-run" and "is not pinned in servers.yaml" in c.reason
    assert not (tmp_path / "out").exists()


def test_confirmations_decide_whether_a_regression_opens_an_issue(tmp_path):
    comp, root = regressed(tmp_path, "perfci run tiny --profile smoke --server local --config x=1")
    result = comp.results[0]
    confirm_dir, issues = tmp_path / "confirm", tmp_path / "issues"

    def sync_with(status: str, reason: str):
        save(Confirmation(result_id=result.id, case=comp.label, status=status, reason=reason,
                          nightly_regressions=[r.key for r in comp.regressions], a="local", b="local --config x=1",
                          profile="smoke", report="| the A/B's table |"), confirm_dir)
        return run_perfci("issues", "sync", str(tmp_path / "candidate.json"), "--baseline-dir", str(root),
                          "--dry-run", "--out", str(issues), "--confirmations", str(confirm_dir))

    proc = sync_with("not-confirmed", "the A/B finds no judged regression")
    assert proc.returncode == 0, proc.stderr
    assert "not opened: before.tps was not confirmed by the A/B (local vs local --config x=1)" in proc.stdout
    assert not issues.exists()

    proc = sync_with("confirmed", "the A/B flags before.tps")
    assert proc.returncode == 0, proc.stderr
    text = next(issues.glob("*.md")).read_text()
    assert "### Confirmation A/B" in text and "- **confirmed**: the A/B flags before.tps" in text
    assert "A, last good: `local` · B, this run: `local --config x=1`" in text and "| the A/B's table |" in text


def test_a_corrupt_confirmation_is_a_one_line_error(tmp_path):
    comp, root = regressed(tmp_path, "perfci run tiny --server local")
    (tmp_path / "confirm").mkdir()
    (tmp_path / "confirm" / "x.confirmation.json").write_text("{}")
    proc = run_perfci("issues", "sync", str(tmp_path / "candidate.json"), "--baseline-dir", str(root),
                      "--dry-run", "--out", str(tmp_path / "issues"), "--confirmations", str(tmp_path / "confirm"))
    assert proc.returncode == 2 and "x.confirmation.json: not a perfci confirmation" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
