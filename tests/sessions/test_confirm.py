"""The nightly's A/B against its reference, without servers: when it runs, what it
compares, when it cannot run, and what its outcome does to the issue."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from perfci.alert.regression_issues import bisect_command, which_release
from perfci.judge import design
from perfci.judge.compare import MetricRow, compare_cases, worst_first
from perfci.judge.stats import judge
from perfci.model.ab_verdict import SideArgs
from perfci.model.abratio import AbRatio
from perfci.model.confirmation import Confirmation
from perfci.model.metrics import default_spec
from perfci.model.result import Rerun
from perfci.model.verdicts import Direction, Outcome
from perfci.providers.servers import load_servers
from perfci.sessions.confirm import confirm_case, last_good, legacy_run_args, run_args
from perfci.sessions.sized_ab import AbPlan
from perfci.store.baseline_files import load_baseline, update_baselines
from perfci.store.case_inputs import load_cases
from perfci.store.confirmation_files import save
from perfci.util.errors import BadInput
from perfci.util.progress import Progress

from conftest import REPO, run_perfci
from factories import QUIET_NOISE, make_noise_model, make_result, write_results


def test_the_server_and_config_of_a_run_are_its_typed_rerun_and_an_older_records_command_line():
    typed = make_result()
    assert typed.rerun is None or run_args(typed) == (typed.rerun.server, tuple(sorted(typed.rerun.config)))
    rerun = Rerun(scenario="s", profile="smoke", server="tarball:/x y.tar.gz", config=["b=2", "a= spaced"])
    assert run_args(typed.model_copy(update={"rerun": rerun, "reproduce": "garbage 'unbalanced"})) == (
        "tarball:/x y.tar.gz", ("a= spaced", "b=2"))  # overrides in a stable order; the line is never read
    # a record of a perfci from before `rerun`: its command line, as that perfci wrote it
    assert legacy_run_args("perfci run s --profile smoke --server local") == ("local", ())
    assert legacy_run_args("perfci run s --server 'tarball:/x y.tar.gz' --config b=2 --config a=1") == (
        "tarball:/x y.tar.gz", ("a=1", "b=2"))
    assert legacy_run_args("perfci run s --profile smoke") is None
    assert legacy_run_args("perfci run 'unbalanced") is None
    assert rerun.command() == "perfci run s --profile smoke --server 'tarball:/x y.tar.gz' --config b=2 --config 'a= spaced'"


def regressed(tmp_path, candidate_reproduce: str, tps: float = 600, version: str | None = None):
    root = tmp_path / "baselines"
    update_baselines(write_results(tmp_path / "base", [make_result(tps=1000 + 5 * i) for i in range(5)]), root=root)
    data = make_result(tps=tps).dump()
    data["reproduce"] = candidate_reproduce
    if version:
        data["server"]["full_version"] = version
    path = tmp_path / "candidate.json"
    path.write_text(json.dumps(data))
    from perfci.store.results import load_result
    [comp] = compare_cases(load_cases([load_result(path)], baseline_root=root))
    assert bool(comp.regressions) == (tps < 900)
    return comp, root


def test_the_last_good_server_is_the_baselines_newest_sample(tmp_path):
    comp, root = regressed(tmp_path, "perfci run tiny --profile smoke --server local")
    [path] = list(root.rglob("*.json"))
    baseline = load_baseline(path)
    assert last_good(baseline).reproduce == "perfci run tiny --profile smoke --server local"
    assert last_good(baseline).date == max(s.date for s in baseline.samples)


@pytest.mark.slow  # over a second (CLI starts): --slow, as scripts/check runs it
def test_a_run_on_the_baselines_own_server_and_config_is_not_ab_tested(tmp_path):
    comp, _ = regressed(tmp_path, "perfci run tiny --profile smoke --server local")
    c = confirm_case(comp, "smoke", AbPlan(), tmp_path, tmp_path / "out", Progress(quiet=True), "local")
    assert c.status == "not-run" and "compare the server with itself" in c.reason and not c.failed
    assert c.nightly_regressions and c.a == c.b == "local"
    assert not (tmp_path / "out").exists()  # nothing ran
    # the same server, build and config: the regression is the runner's (or perfci's), and its issue says so
    assert c.unchanged_server
    save(c, tmp_path / "confirm")
    proc = run_perfci("issues", "sync", str(tmp_path / "candidate.json"), "--baseline-dir", str(tmp_path / "baselines"),
                      "--dry-run", "--out", str(tmp_path / "issues"), "--confirmations", str(tmp_path / "confirm"))
    assert proc.returncode == 0, proc.stderr
    texts = [p.read_text() for p in (tmp_path / "issues").glob("*.md")]
    assert texts and all(t.startswith("# Runner or harness drift: ") for t in texts)
    [text] = [t for t in texts if t.startswith("# Runner or harness drift: tiny before: throughput")]
    assert "what moved is this runner, perfci or the data, not the server" in text and "`perfci doctor`" in text


def test_a_scenario_that_cannot_be_split_is_recorded_not_judged(tmp_path):
    # `tiny` is no scenario of scenarios/: the A/B's planning refuses it with one line, recorded
    comp, _ = regressed(tmp_path, "perfci run tiny --profile smoke --server local --config innodb_flush_log_at_trx_commit=1")
    c = confirm_case(comp, "smoke", AbPlan(), tmp_path, tmp_path / "out", Progress(quiet=True), "local")
    assert c.status == "not-run" and c.reason.startswith("the reference A/B could not run:") and not c.failed
    assert c.b == "local innodb_flush_log_at_trx_commit=1"  # as an A/B report names a side
    assert c.b_run == SideArgs(server="local", config=["innodb_flush_log_at_trx_commit=1"])


def test_an_ab_that_fails_on_the_runner_is_recorded_as_failed(tmp_path, monkeypatch):
    """A server that does not start is the runner's problem (confirm exits 3), not
    "nothing to compare" (exit 0): the confirmation says which."""
    from perfci.sessions import confirm
    from perfci.util.errors import InfraFailure

    def no_server(*args, **kwargs):
        raise InfraFailure("side A: the server did not start within 60 s")
    monkeypatch.setattr(confirm, "run_sized", no_server)
    comp, _ = regressed(tmp_path, "perfci run tiny --profile smoke --server local --config innodb_flush_log_at_trx_commit=1")
    c = confirm_case(comp, "smoke", AbPlan(), tmp_path, tmp_path / "out", Progress(quiet=True), "local")
    assert c.status == "not-run" and c.failed
    assert c.reason == "the reference A/B failed: side A: the server did not start within 60 s"


def test_a_server_spec_written_into_a_result_or_the_history_never_runs_unless_pinned(tmp_path):
    """The candidate's reproduce string names a `tarball:` spec no servers.yaml pins:
    the confirmation refuses to run it (before any download or start)."""
    comp, _ = regressed(tmp_path, "perfci run tiny --profile smoke --server "
                                  "'tarball:https://127.0.0.1:9/evil.tar.gz#sha256=" + "0" * 64 + "'")
    c = confirm_case(comp, "smoke", AbPlan(), tmp_path, tmp_path / "out", Progress(quiet=True), "local")
    assert c.status == "not-run" and "is not pinned in servers.yaml" in c.reason
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
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
    assert "### A/B against the reference" in text and "- **confirmed**: the A/B flags before.tps" in text
    assert "A, reference: `local` · B, tonight: `local --config x=1`" in text and "| the A/B's table |" in text


@pytest.mark.slow  # over a second (CLI starts): --slow, as scripts/check runs it
def test_a_corrupt_confirmation_is_a_one_line_error(tmp_path):
    comp, root = regressed(tmp_path, "perfci run tiny --server local")
    (tmp_path / "confirm").mkdir()
    (tmp_path / "confirm" / "x.confirmation.json").write_text("{}")
    proc = run_perfci("issues", "sync", str(tmp_path / "candidate.json"), "--baseline-dir", str(root),
                      "--dry-run", "--out", str(tmp_path / "issues"), "--confirmations", str(tmp_path / "confirm"))
    assert proc.returncode == 2 and "x.confirmation.json: not a perfci confirmation" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_a_night_on_the_references_server_and_config_runs_no_ab_and_a_changed_one_does(tmp_path):
    comp, _ = regressed(tmp_path, "perfci run tiny --profile smoke --server local", tps=1010)
    assert confirm_case(comp, "smoke", AbPlan(), tmp_path, tmp_path / "out", Progress(quiet=True), "local") is None
    comp, _ = regressed(tmp_path, "perfci run tiny --profile smoke --server local --config x=1", tps=1010)
    c = confirm_case(comp, "smoke", AbPlan(), tmp_path, tmp_path / "out", Progress(quiet=True), "local")
    assert c.trigger == "server-changed" and not c.nightly_regressions
    assert c.status == "not-run" and c.reason.startswith("the reference A/B could not run:")  # tiny: no scenario


def test_a_new_build_behind_the_references_spec_is_said_not_ab_tested(tmp_path):
    comp, _ = regressed(tmp_path, "perfci run tiny --profile smoke --server local", tps=1010, version="10.11.99-MariaDB")
    c = confirm_case(comp, "smoke", AbPlan(), tmp_path, tmp_path / "out", Progress(quiet=True), "local")
    assert c.trigger == "server-changed" and c.status == "not-run" and not c.failed
    assert "10.11.99-MariaDB" in c.reason and "no longer what the spec gives" in c.reason
    assert not c.unchanged_server  # another build: it may well be the server


def _ab_confirmation(result_id: str, label: str) -> Confirmation:
    return Confirmation(result_id=result_id, case=label, status="confirmed", reason="the A/B flags before.tps",
                        nightly_regressions=[], a="mariadb-10.11", b="local --config x=1", profile="smoke",
                        trigger="server-changed", reference_version="10.11.6-MariaDB", ab_regressions=["before.tps"],
                        ratios={"before.tps": AbRatio(a=1000.0, b=951.0, ratio=0.951, low=0.930, high=0.972,
                                                      confidence=0.9997, mde=0.031, verdict="regression")},
                        sizing="9 instance pairs x 20 burst pairs per phase, ~24 min; sees 4.9% at 90 % power",
                        alpha=0.005)


def issue_with(tmp_path, root, confirmation: Confirmation) -> str:
    """The issue `perfci issues sync --dry-run` writes for tmp_path/candidate.json (from
    `regressed`) with this confirmation."""
    save(confirmation, tmp_path / "confirm")
    issues = tmp_path / "issues"
    proc = run_perfci("issues", "sync", str(tmp_path / "candidate.json"), "--baseline-dir", str(root),
                      "--dry-run", "--out", str(issues), "--confirmations", str(tmp_path / "confirm"))
    assert proc.returncode == 0, proc.stderr
    [issue] = issues.glob("*.md")
    return issue.read_text()


@pytest.mark.slow  # over a second (CLI starts): --slow, as scripts/check runs it
def test_a_regression_only_the_reference_ab_sees_opens_its_issue_that_night(tmp_path):
    """5 % is inside the nights' noise: the threshold says nothing, the A/B flags it;
    the issue opens on the first night and starts with the change, its interval and the MDE."""
    comp, root = regressed(tmp_path, "perfci run tiny --profile smoke --server local --config x=1", tps=1010)
    text = issue_with(tmp_path, root, _ab_confirmation(comp.results[0].id, comp.label))
    assert text.startswith("# tiny before: throughput −4.9 % (A/B vs reference) (mariadb-10.11, smoke, local)")
    first = next(line for line in text.splitlines() if line.startswith("**"))
    assert first == ("**before.tps** is worse on tonight's server than on the reference, side by side on this runner: "
                     "−4.9 % [−7.0, −2.8] worse (B against A; its interval at the level of its Holm step); achieved: "
                     "it could see 3.1% at 90 % power.")
    assert "| `before.tps` | 1000 | 951 | −4.9 % [−7.0, −2.8] worse | 3.1% |" in text
    assert "(10.11.6-MariaDB)" in text and "9 instance pairs x 20 burst pairs" in text
    assert ("perfci ab tiny --profile smoke --a mariadb-10.11 --b local --b-config x=1" in text)
    # its level: the reference A/B's share of the budget; an A/B recorded at another level says so
    assert ("- level: the reference A/B judged at 0.167% per case and night: the reference A/B holds 50% of a false-issue "
            "budget of 1 a month over 10 cases and 30 nights (this A/B ran at 0.500% family-wise)") in text


def test_the_history_records_a_reference_ab_regression_as_tonights(tmp_path):
    from perfci.alert.nightly import night_verdicts
    comp, _ = regressed(tmp_path, "perfci run tiny --profile smoke --server local --config x=1", tps=1010)
    rid = comp.results[0].id
    verdicts = night_verdicts([comp], {rid: _ab_confirmation(rid, comp.label)})
    assert verdicts[rid].regressions == ("before.tps",) and "before.tps" in verdicts[rid].worse
    assert night_verdicts([comp], {})[rid].regressions == ()


def test_a_reference_spec_bumped_out_of_servers_yaml_stays_trusted_through_its_git_history(tmp_path):
    import subprocess

    from perfci.providers.servers import pinned_in_git_history
    old, new = "local:/opt/mariadb-11.4.4/bin/mariadbd", "local:/opt/mariadb-11.4.5/bin/mariadbd"
    path = tmp_path / "servers.yaml"

    def commit(spec: str) -> None:
        path.write_text(f"servers:\n  - id: mariadb-11.4\n    spec: {spec}\n")
        subprocess.run(["git", "add", "servers.yaml"], cwd=tmp_path, check=True)
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", spec], cwd=tmp_path,
                       check=True)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    commit(old)
    commit(new)
    assert pinned_in_git_history(old, path) and pinned_in_git_history(new, path)
    assert not pinned_in_git_history("local:/opt/evil/bin/mariadbd", path)
    assert not pinned_in_git_history(old, tmp_path / "elsewhere" / "servers.yaml")


def test_an_issue_whose_servers_are_releases_apart_carries_the_bisect_to_run(tmp_path, monkeypatch):
    """servers.yaml orders MySQL 5.7.22, 8.0.12, 8.0.15, 8.0.31: a reference A/B of 8.0.12
    against 8.0.31 names the bisect (8.0.15 between them); ids or their pinned specs."""
    monkeypatch.setenv("PERFCI_ROOT", str(REPO))
    c = _ab_confirmation("r1", "tiny").model_copy(update={"a": "mysql-8.0.12", "b": load_servers().get(
        "mysql-8.0.31").spec, "profile": "nightly"})
    command, between = bisect_command("microbench", c, "default", "point-query.qps")
    assert command == ("perfci bisect microbench --good mysql-8.0.12 --bad mysql-8.0.31 --metric qps "
                       "--profile nightly")
    assert between == ["mysql-8.0.15"]
    counted, _ = bisect_command("microbench", c, "default", "point-query.instructions_per_txn")  # a counted series'
    assert "--metric instructions_per_txn --measure work --profile nightly" in counted
    text = "\n".join(which_release("microbench", c, "default", "point-query.qps"))
    assert "### Which release" in text and "2 releases apart (`mysql-8.0.15` between them)" in text
    assert "dispatch the `bisect` workflow" in text
    # next releases, a config override, an unordered or another flavor's server: nothing to walk
    for a, b in (("mysql-8.0.15", "mysql-8.0.31"), ("mysql-8.0.12 --config x=1", "mysql-8.0.31"),
                 ("local", "mysql-8.0.31"), ("mariadb-10.11.5", "mysql-8.0.31")):
        assert bisect_command("microbench", c.model_copy(update={"a": a, "b": b}), "default", "point-query.qps") is None


def test_an_issue_whose_servers_are_two_builds_of_one_line_carries_the_bisect_over_commits(tmp_path, monkeypatch):
    """The reference ran build:mysql@v8.0.30, tonight build:mysql@trunk: the issue names
    the bisect over the commits between them (listed when it runs: the report job has no
    source tree); builds of two flavors or of one ref have nothing to walk."""
    monkeypatch.setenv("PERFCI_ROOT", str(REPO))
    c = _ab_confirmation("r1", "tiny").model_copy(update={"a": "build:mysql@v8.0.30", "b": "build:mysql@trunk"})
    command, between = bisect_command("microbench", c, "default", "range-not-covered.qps")
    assert command == ("perfci bisect microbench --good build:mysql@v8.0.30 --bad build:mysql@trunk --metric qps "
                       "--profile smoke")
    assert between == []
    text = "\n".join(which_release("microbench", c, "default", "range-not-covered.qps"))
    assert "two builds of one source line" in text and "names the first slower commit" in text
    for a, b in (("build:mariadb@v8.0.30", "build:mysql@trunk"), ("build:mysql@trunk", "build:mysql@trunk"),
                 ("build:mysql@v8.0.30", "mysql-8.0.31")):
        assert bisect_command("microbench", c.model_copy(update={"a": a, "b": b}), "default", "x.qps") is None


@pytest.mark.slow
def test_a_commit_on_a_pinned_build_line_is_trusted_and_one_off_it_is_not(tmp_path, monkeypatch):
    """A nightly of `build:mariadb@main` records the commit it built (`build:mariadb@<sha>`,
    the next test): the next night's reference A/B may build that commit again, and any
    commit main descends from; a commit main does not contain (a pull request's) never."""
    import subprocess

    import pytest

    from perfci.sessions.confirm import pinned_server
    from perfci.util.errors import BadInput
    repo = tmp_path / "src"
    repo.mkdir()

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(repo), "-c", "user.name=d", "-c", "user.email=d@d", *args],
                              check=True, capture_output=True, text=True).stdout.strip()
    git("init", "-q", "-b", "main")
    for i in range(2):
        (repo / "f").write_text(f"{i}\n")
        git("add", "f")
        git("commit", "-qm", f"c{i}")
    first, head = git("rev-list", "--reverse", "main").split()
    git("checkout", "-qb", "pull-request")
    (repo / "f").write_text("untrusted\n")
    git("commit", "-qam", "a pull request")
    off_line = git("rev-parse", "HEAD")
    project = tmp_path / "project"
    (project / "scripts").mkdir(parents=True)
    (project / "scripts" / "build-server").symlink_to(REPO / "scripts" / "build-server")
    (project / "servers.yaml").write_text("servers:\n  - id: mariadb-main\n    spec: build:mariadb@main\n")
    for name, value in {"PERFCI_ROOT": project, "PERFCI_BUILD_REPO": repo, "PERFCI_CACHE": tmp_path / "cache",
                        "PERFCI_LOCK_FILE": tmp_path / "host.lock"}.items():
        monkeypatch.setenv(name, str(value))
    monkeypatch.delenv("PERFCI_HOST_LOCK_HELD", raising=False)
    for sha in (first, head):
        assert pinned_server(f"build:mariadb@{sha}") == f"build:mariadb@{sha}"
    for spec in (f"build:mariadb@{off_line}", f"build:mysql@{head}", "build:mariadb@pull-request"):
        with pytest.raises(BadInput, match="is not pinned in servers.yaml"):
            pinned_server(spec)


def test_a_build_of_a_branch_is_reproduced_by_the_commit_it_built(tmp_path):
    from pathlib import Path

    from perfci.providers.basedirs import build_commit, pinned_to_commit
    from perfci.providers.spec import parse_spec
    sha = "0123456789abcdef0123456789abcdef01234567"
    assert build_commit(Path(f"/cache/builds/mysql-{sha}-0123456789ab")) == sha
    assert build_commit(Path("/opt/mysql-8.0.31")) is None
    assert pinned_to_commit(parse_spec("build:mysql@8.0"), sha) == f"build:mysql@{sha}"
    assert pinned_to_commit(parse_spec("build:mysql@8.0"), None) == "build:mysql@8.0"
    assert pinned_to_commit(parse_spec("local"), None) == "local"


def test_the_issue_of_a_build_names_the_commit_it_was_built_from(tmp_path):
    from perfci.alert.regression_issues import body_for
    sha = "0123456789abcdef0123456789abcdef01234567"
    root = tmp_path / "baselines"
    update_baselines(write_results(tmp_path / "base", [make_result(tps=1000 + 5 * i) for i in range(5)]), root=root)
    data = make_result(tps=600).dump()
    data["server"]["commit"] = sha
    path = tmp_path / "candidate.json"
    path.write_text(json.dumps(data))
    from perfci.store.results import load_result
    [comp] = compare_cases(load_cases([load_result(path)], baseline_root=root))
    body = body_for(comp, comp.regressions, "fp", "")
    assert f"built from commit `{sha}`" in body


def test_a_reproduce_string_that_loads_a_plugin_or_an_init_file_is_refused(tmp_path):
    """A reproduce string is data from the results branch: its --config values pass an
    allowlist of performance variables. A plugin from the checkout, an init file, a
    general log written anywhere, or the prefix chain to skip-grant-tables: refused by
    name, before any server starts."""
    for config, refused in [("plugin_load_add=evil.so", "plugin_load_add"), ("plugin_dir=results/x", "plugin_dir"),
                            ("init_file=/tmp/grant.sql", "init_file"), ("general_log_file=/etc/x", "general_log_file"),
                            ("loose-loose-skip-grant-tables=1", "skip_grant_tables"),
                            ("innodb_buffer_pool_filename=/etc/shadow", "innodb_buffer_pool_filename"),
                            ("innodb_ft_user_stopword_table=db/t", "innodb_ft_user_stopword_table")]:
        comp, _ = regressed(tmp_path / refused, f"perfci run tiny --profile smoke --server local --config {config}")
        c = confirm_case(comp, "smoke", AbPlan(), tmp_path, tmp_path / "out", Progress(quiet=True), "local")
        assert c.status == "not-run" and refused in c.reason and ("refused" in c.reason or "it sets" in c.reason), c.reason
        assert not (tmp_path / "out").exists()


def test_performance_variables_from_a_reproduce_string_pass():
    from perfci.providers.mycnf import parse_trusted_override
    for config in ("innodb_flush_log_at_trx_commit=1", "innodb_buffer_pool_size=4G", "sync_binlog=0",
                   "skip-log-bin", "innodb_log_file_size=96M", "loose-innodb_change_buffering=none",
                   "optimizer_switch=mrr=on,mrr_cost_based=off", "thread_handling=pool-of-threads"):
        assert parse_trusted_override(config, "test").name == config.partition("=")[0]


class Recorded(Progress):
    def __init__(self) -> None:
        super().__init__(quiet=True)
        self.lines: list[str] = []

    def info(self, message: str) -> None:
        self.lines.append(message)


def test_the_reference_ab_is_sized_from_the_noise_dir_it_is_given(real_server_tools, tmp_path, monkeypatch):
    """`perfci confirm --noise-dir D` (AbPlan.noise_dir): the reference A/B of a case is
    sized from the noise model in D, the only place it is; without it, from the runner
    default. Planned on the real server binary; stopped before a server starts."""
    from perfci.model.noise import NoiseModel
    from perfci.model.scenario import cases, load_scenario
    from perfci.sessions import sized_ab
    from perfci.store import noise_files
    from perfci.util.errors import InfraFailure

    def result(tps: float, reproduce: str):
        data = make_result(tps=tps).dump()
        data["scenario"]["name"], data["reproduce"] = "rebuild-after-delete", reproduce
        return data

    root = tmp_path / "baselines"
    base = [result(1000 + i, "perfci run rebuild-after-delete --profile smoke --server local") for i in range(4)]
    for i, data in enumerate(base):
        (tmp_path / f"b{i}.json").write_text(json.dumps(data))
    from perfci.store.results import load_result
    update_baselines([(tmp_path / f"b{i}.json", load_result(tmp_path / f"b{i}.json")) for i in range(4)], root=root)
    (tmp_path / "tonight.json").write_text(json.dumps(result(
        1000, "perfci run rebuild-after-delete --profile smoke --server local --config innodb_flush_log_at_trx_commit=1")))
    [comp] = compare_cases(load_cases([load_result(tmp_path / "tonight.json")], baseline_root=root))
    line = f"mariadb-{load_result(tmp_path / 'tonight.json').server.version.rsplit('.', 1)[0]}"
    scenario, path = load_scenario("rebuild-after-delete")
    case_hash = cases(scenario, "smoke", str(path))[0].content_hash()

    def model(scenario_hash: str) -> NoiseModel:
        return make_noise_model({"before.tps": QUIET_NOISE, "after.tps": QUIET_NOISE}, "rebuild-after-delete", scenario_hash,
                                line, burst=250)
    noise_files.save(model(case_hash), tmp_path / "noise")
    noise_files.save(model("sha256:" + "a" * 64), tmp_path / "stale")

    def no_servers(*args, **kwargs):
        raise InfraFailure("stopped before the servers start")
    monkeypatch.setattr(sized_ab, "run_interleaved", no_servers)

    def sizing(plan: AbPlan) -> str:
        progress = Recorded()
        c = confirm_case(comp, "smoke", plan, tmp_path, tmp_path / "out", progress, "local")
        assert c is not None and c.trigger == "server-changed" and c.failed, c
        return "\n".join(x for x in progress.lines if x.startswith(("A/B sized: ", "noise model of")))

    assert "noise from the noise model of 6 A/As learned 2026-11-20" in sizing(AbPlan(noise_dir=tmp_path / "noise"))
    # a --phase A/B cuts the case, and still uses the model learned on the whole case
    assert "noise from the noise model of 6 A/As" in sizing(AbPlan(noise_dir=tmp_path / "noise", phases=("after",)))
    assert "noise from the runner default" in sizing(AbPlan(noise_dir=tmp_path / "elsewhere"))
    stale = sizing(AbPlan(noise_dir=tmp_path / "stale"))  # learned on the scenario as it was: not used, and said
    assert "noise from the runner default" in stale and "not used: it was learned on scenario sha256:aaaaaaaaaaaa" in stale


def test_a_counted_nights_reference_ab_counts_too(tmp_path, monkeypatch):
    """A regression in the case's counted series (perfci run --measure work) is confirmed
    by a counting A/B sized for counting's 1 %, not by a timed one."""
    from perfci.judge import design
    from perfci.sessions import confirm

    asked = []

    def record(scenario, profile, sides, parent, case, ab, *args):
        asked.append(ab)
        raise BadInput("recorded")
    monkeypatch.setattr(confirm, "run_sized", record)
    comp, _ = regressed(tmp_path, "perfci run tiny --profile smoke --server local --config innodb_flush_log_at_trx_commit=1")
    counted = comp.results[0].model_copy(update={"measure": "work"})
    comp.results[0] = counted
    confirm_case(comp, "smoke", AbPlan(), tmp_path, tmp_path / "out", Progress(quiet=True), "local")
    comp.results[0] = counted.model_copy(update={"measure": "time"})
    confirm_case(comp, "smoke", AbPlan(), tmp_path, tmp_path / "out", Progress(quiet=True), "local")
    assert [(ab.measure, ab.target) for ab in asked] == [("work", design.WORK_TARGET_MDE),
                                                          ("time", design.DEFAULT_TARGET_MDE)]


def test_a_confirmation_of_an_older_perfci_is_typed_on_reading():
    """/6 kept the sides and the Why only as text: the upgrade types them once."""
    from perfci.model.confirmation import CONFIRMATION_FILE
    old = {"schema": "perfci.confirmation/6", "result_id": "r-20261101T000000Z-abcdef", "case": "c",
           "status": "confirmed", "reason": "x", "nightly_regressions": [], "a": "mysql-8.0.15",
           "b": "local --config innodb_flush_log_at_trx_commit=1",
           "report": "## A/B\n\n**Regression**\n\n### Why: the explain pass (x)\n\nrows\n"}
    c = CONFIRMATION_FILE.model.model_validate(CONFIRMATION_FILE.upgrade(old, "old.json"))
    assert c.a_run == SideArgs(server="mysql-8.0.15") and c.why == "the explain pass (x)\n\nrows"
    assert c.b_run == SideArgs(server="local", config=["innodb_flush_log_at_trx_commit=1"])


def test_the_phases_that_looked_worst_tonight_come_first():
    """compare.worst_first: a judged regression first, then the largest move the bad way of
    any judged metric (a latency up counts as a throughput down), improvements last, a phase
    with nothing judged after them, the scenario's order on ties."""
    def row(key: str, current: float, direction: Direction = Direction.HIGHER) -> MetricRow:
        spec = default_spec(key.split(".", 1)[1])
        baseline = [100.0, 101.0, 99.0, 100.5, 99.5]
        return MetricRow(key, spec, baseline, [current], judge([current], baseline, direction, spec.tolerance))
    rows = [row("scan.tps", 97.0), row("point.tps", 99.0), row("point.latency_ms_avg", 104.0, Direction.LOWER),
            row("insert.tps", 60.0), row("range.tps", 103.0), row("same-a.tps", 98.0), row("same-b.tps", 98.0)]
    assert rows[3].verdict.verdict == Outcome.REGRESSION
    assert worst_first(rows, ["scan", "point", "nothing", "range", "same-b", "insert", "same-a"]) == \
        ["insert", "point", "scan", "same-b", "same-a", "range", "nothing"]


def test_a_many_phase_cases_reference_ab_runs_the_phases_that_looked_worst_and_says_so(real_server_tools, tmp_path,
                                                                                       monkeypatch):
    """#55: microbench's 19 phases in one nightly A/B would see only ~24 %; the reference A/B
    runs the phases that looked worst tonight, as many as see 8 % (two at the runner
    default), and the confirmation and the issue say which and why. A two-phase case that
    sees 8 % runs whole; a budget too small for 8 % on one phase runs the worst one and says
    it sees large steps only. Planned on the real server binary, stopped before servers."""
    from perfci.judge.budget import IssueBudget
    from perfci.report.reference_ab import markdown_section
    from perfci.sessions import confirm

    asked = []

    def record(scenario, profile, sides, parent, case, ab, *args):
        asked.append((scenario, ab.phases))
        raise BadInput("recorded")
    monkeypatch.setattr(confirm, "run_sized", record)
    comp, _ = regressed(tmp_path, "perfci run tiny --profile smoke --server local --config innodb_flush_log_at_trx_commit=1",
                        tps=1000)

    def night_of(scenario: str, rows):
        comp.results[0] = comp.results[0].model_copy(
            update={"scenario": comp.results[0].scenario.model_copy(update={"name": scenario})})
        comp.rows = rows
        return comp

    def row(key: str, current: float) -> MetricRow:
        spec = default_spec(key.split(".", 1)[1])
        baseline = [100.0, 101.0, 99.0, 100.5, 99.5]
        return MetricRow(key, spec, baseline, [current], judge([current], baseline, Direction.HIGHER, spec.tolerance))
    nightly = AbPlan(alpha=IssueBudget().level("ab"))
    tonight = night_of("microbench", [row("full-scan.tps", 96.0), row("point-query.tps", 100.0),
                                      row("insert.tps", 97.5), row("range-sum.tps", 101.0)])
    c = confirm_case(tonight, "smoke", nightly, tmp_path, tmp_path / "out", Progress(quiet=True), "local")
    assert asked.pop() == ("microbench", ("full-scan", "insert"))
    assert c.phases.run == ["full-scan", "insert"] and c.phases.of == 19 and c.phases.mde_all > 0.2
    assert c.phases.mde_run <= design.PHASE_MDE_LIMIT < c.phases.mde_all
    assert c.phases.said().startswith("2 of 19 phases (full-scan, insert): those that looked worst tonight, because "
                                      "all 19 would see only 24.1% within the budget; these see 7.1%")
    assert "\n- phases: 2 of 19 phases" in "\n".join(markdown_section(c))  # the issue's reference A/B part
    assert Confirmation.model_validate(c.dump()) == c  # typed in the file
    # too small a budget for 8 % on any one phase: the worst runs, and says what it can see
    c = confirm_case(tonight, "smoke", replace(nightly, budget_minutes=3), tmp_path, tmp_path / "out",
                     Progress(quiet=True), "local")
    assert asked.pop() == ("microbench", ("full-scan",)) and c.phases.mde_run > design.PHASE_MDE_LIMIT
    assert "even the worst one alone sees only" in c.phases.said() and "large steps only" in c.phases.said()
    # phases given (--phase) are run as given; a case whose whole A/B sees 8 % runs whole
    confirm_case(tonight, "smoke", replace(nightly, phases=("point-query",)), tmp_path, tmp_path / "out",
                 Progress(quiet=True), "local")
    assert asked.pop() == ("microbench", ("point-query",))
    c = confirm_case(night_of("rebuild-after-delete", [row("after.tps", 96.0)]), "smoke", nightly, tmp_path,
                     tmp_path / "out", Progress(quiet=True), "local")
    assert asked.pop() == ("rebuild-after-delete", ()) and c.phases is None
