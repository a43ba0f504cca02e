"""The command line's contract: exit codes, one-line errors, the schema, and
finding the project it runs in."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from perfci import cli
from perfci.commands.schema_cmd import KINDS, json_schema
from perfci.util import paths
from perfci.util.errors import BadInput
from perfci.util.paths import project_root, scenarios_dir

from conftest import DATA, REPO, SOURCE_ENV, run_perfci
from factories import edited, make_result, write_results

V1_RESULTS = sorted((DATA / "results-v1").glob("*.json"))


def test_a_result_with_an_empty_server_object_is_bad_input_in_one_line(tmp_path, perfci_here):
    [(path, result)] = write_results(tmp_path, [make_result()])
    path.write_text(json.dumps(edited(result, server={})))
    (tmp_path / "b").mkdir()
    proc = perfci_here("compare", str(path), "--baseline-dir", str(tmp_path / "b"))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and f"{path} (corrupt result): field server.provider: required but missing" in proc.stderr


def test_an_unexpected_exception_is_an_internal_error_with_exit_3(tmp_path, monkeypatch, capsys):
    [(path, _)] = write_results(tmp_path, [make_result()])
    from perfci.commands import compare_cmd

    def boom(*args, **kwargs):
        raise KeyError("flavor")

    monkeypatch.setattr(compare_cmd, "compare_cases", boom)
    with pytest.raises(SystemExit) as exit_:
        cli.main(["compare", str(path), "--baseline-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert exit_.value.code == 3
    assert err == "perfci: internal error: KeyError: 'flavor'; rerun with PERFCI_DEBUG=1 for the traceback\n"
    monkeypatch.setenv("PERFCI_DEBUG", "1")
    with pytest.raises(SystemExit):
        cli.main(["compare", str(path), "--baseline-dir", str(tmp_path)])
    assert "Traceback" in capsys.readouterr().err


def test_usage_errors_exit_2_and_help_exits_0(capsys):
    for argv, code in ((["compare"], 2), (["no-such-command"], 2), (["--help"], 0), (["compare", "--help"], 0)):
        with pytest.raises(SystemExit) as exit_:
            cli.main(argv)
        assert exit_.value.code == code, argv


def test_a_bisect_by_work_judges_instructions_and_refuses_a_time_metric(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["bisect", "tiny", "--good", "local", "--bad", "local", "--measure", "work", "--metric", "tps"])
    assert exit_.value.code == 2
    assert "--metric tps is a time metric: --measure work judges instructions_per_txn" in capsys.readouterr().err


@pytest.mark.parametrize("command", [["sweep", "tiny", "--servers", "local,local"],
                                     ["bisect", "tiny", "--good", "local", "--bad", "local"],
                                     ["confirm", "results"]])
@pytest.mark.parametrize("measure", ["both", "auto"])
def test_measure_both_is_refused_where_only_one_a_b_runs(command, measure, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main([*command, "--measure", measure])
    assert exit_.value.code == 2
    assert (f"--measure {measure} is perfci ab's (a counting and a timed A/B): here choose time or work"
            in capsys.readouterr().err)


@pytest.mark.parametrize("args, measured", [(["--bursts", "4", "--warmup", "5"], "no burst pair"),
                                            (["--bursts", "3", "--warmup", "3"], "no burst pair"),
                                            (["--bursts", "4", "--warmup", "3"], "one burst pair")])
def test_bursts_that_leave_too_few_after_the_warm_up_are_refused_in_one_line(args, measured, capsys):
    """`--bursts` counts the warm-up pairs: 4 with 5 warm-up measured nothing and said "No change"
    (#55); one measured pair judges nothing either (a verdict needs two per instance pair)."""
    with pytest.raises(SystemExit) as exit_:
        cli.main(["ab", "microbench", "--phase", "point-query", "--instances", "1", *args, "--plan-only"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "counts the warm-up pairs" in err and f"{measured} would be measured and a verdict needs 2" in err, err
    assert len(err.strip().splitlines()[-1]) and "Traceback" not in err


def test_measure_auto_counts_first_where_this_host_can_count_else_times(tmp_path, monkeypatch, capsys):
    """The server-code PR check's default: `both` with valgrind on PATH (callgrind), `time`
    without it, saying why."""
    from perfci.commands.options import measure_here
    tools = tmp_path / "bin"
    tools.mkdir()
    for tool in ("valgrind", "vgdb"):
        (tools / tool).write_text("#!/bin/sh\nexit 0\n")
        (tools / tool).chmod(0o755)
    monkeypatch.setenv("PATH", str(tools))
    assert measure_here("callgrind") == "both" and "--measure auto: both" in capsys.readouterr().err
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert measure_here("callgrind") == "time"
    assert "--measure auto: time (valgrind and vgdb not found" in capsys.readouterr().err


@pytest.mark.slow
def test_the_schema_validates_results_of_this_and_the_previous_version(tmp_path):
    proc = run_perfci("schema", "result")
    assert proc.returncode == 0, proc.stderr
    schema = json.loads(proc.stdout)
    assert schema == json.loads(json.dumps(json_schema("result")))
    assert V1_RESULTS, "tests/data/results-v1 holds files written by perfci.result/1"
    for path in V1_RESULTS:
        jsonschema.validate(json.loads(path.read_text()), schema)
    jsonschema.validate(make_result().dump(), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(edited(make_result(), server={}), schema)
    for kind in ("baseline", "history", "comparison"):
        proc = run_perfci("schema", kind)
        assert proc.returncode == 0 and json.loads(proc.stdout)["type"] == "object"


@pytest.mark.slow
def test_version_1_results_load_and_compare(tmp_path):
    """A /1 result (the previous version's, kept as test data) goes through every reader."""
    ran = next(p for p in V1_RESULTS if "rebuild-after-delete" in p.name)
    proc = run_perfci("baseline", "update", str(ran), "--baseline-dir", str(tmp_path / "b"))
    assert proc.returncode == 0, proc.stderr
    proc = run_perfci("compare", *map(str, V1_RESULTS), "--baseline-dir", str(tmp_path / "b"),
                      "--json", str(tmp_path / "c.json"))
    assert proc.returncode == 0, proc.stderr
    assert "headline.qps_write after/before" in proc.stdout and "**Skipped:** innodb_io_capacity=50" in proc.stdout
    comparison = json.loads((tmp_path / "c.json").read_text())
    jsonschema.validate(comparison, json_schema("comparison"))
    assert comparison["rules"]["confidence"] == 0.995 and comparison["rules"]["prior_cv"] == 0.05
    [case] = [c for c in comparison["cases"] if not c["skipped"]]
    assert case["server"] == "mariadb-10.11" and case["baseline_samples"] == 1


@pytest.mark.slow  # over a second (CLI starts): --slow, as scripts/check runs it
def test_the_project_is_found_from_a_subdirectory_or_perfci_root(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO / "tests" / "data")
    assert project_root() == REPO and scenarios_dir() == REPO / "scenarios"
    other = tmp_path / "team"
    (other / "scenarios").mkdir(parents=True)
    shutil.copy(REPO / "scenarios" / "rebuild-after-delete.yaml", other / "scenarios")
    monkeypatch.setenv("PERFCI_ROOT", str(other))
    assert scenarios_dir() == other / "scenarios"
    proc = run_perfci("list", env={"PERFCI_ROOT": str(other)})
    assert proc.returncode == 0 and proc.stdout.startswith("rebuild-after-delete") and "change-buffer" not in proc.stdout


def test_a_bad_perfci_root_is_one_line(tmp_path):
    proc = run_perfci("list", env={"PERFCI_ROOT": str(tmp_path / "nowhere")})
    assert proc.returncode == 2 and proc.stderr.strip() == f"error: $PERFCI_ROOT={tmp_path / 'nowhere'}: no such directory"


@pytest.mark.slow  # over a second (CLI starts): --slow, as scripts/check runs it
def test_outside_a_project_a_checkouts_perfci_uses_the_scenarios_it_ships(tmp_path, monkeypatch):
    """perfci run from a source checkout (an editable install, as scripts/install-deps
    makes) outside any project: the checkout's scenarios are the ones it ships (the
    wheel's perfci/_scenarios: see test_e2e_install); with neither, one line says so."""
    proc = run_perfci("list", cwd=tmp_path, env={"PERFCI_ROOT": ""})
    assert proc.returncode == 0 and "rebuild-after-delete" in proc.stdout, proc.stderr
    assert not Path(REPO / "ci" / "perfci" / "_scenarios").exists()
    assert paths.builtin_scenarios() == REPO / "scenarios" and paths.source_checkout() == REPO
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PERFCI_ROOT", raising=False)
    monkeypatch.setattr(paths, "builtin_scenarios", lambda: None)
    with pytest.raises(BadInput, match="no scenarios/ directory here or above"):
        paths.scenarios_dir()


@pytest.mark.parametrize("kind", KINDS)
def test_the_published_schemas_are_the_ones_perfci_prints(kind):
    """docs/schema/*.schema.json (linked from the README) never drift from the model."""
    published = json.loads((REPO / "docs" / "schema" / f"{kind}.schema.json").read_text())
    assert published == json.loads(json.dumps(json_schema(kind))), \
        f"regenerate: perfci schema {kind} > docs/schema/{kind}.schema.json"


@pytest.mark.parametrize("args", [
    ["compare", "{result}", "--baseline-dir", "{tmp}/nowhere"],
    ["compare", "{result}", "--history", "{tmp}/nowhere"],
    ["issues", "sync", "{result}", "--history", "{tmp}/nowhere", "--dry-run"],
    ["nightly", "{result}", "--history", "{tmp}/nowhere", "--dry-run"],
    ["history", "exclude", "r1", "--reason", "x", "--history", "{tmp}/nowhere"],
])
def test_a_directory_to_read_that_does_not_exist_is_bad_input_never_no_baseline_and_green(tmp_path, args, perfci_here):
    [(path, _)] = write_results(tmp_path, [make_result()])
    proc = perfci_here(*(a.format(result=path, tmp=tmp_path) for a in args))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith("error: Invalid value for '--") and "does not exist" in proc.stderr


def test_out_without_dry_run_is_refused_not_ignored(tmp_path, perfci_here):
    [(path, _)] = write_results(tmp_path, [make_result()])
    proc = perfci_here("issues", "sync", str(path), "--out", str(tmp_path / "issues"))
    assert proc.returncode == 2 and "--out is where --dry-run writes the issues" in proc.stderr


@pytest.mark.parametrize("args, named", [
    (["run", "no-such-scenario"], "no-such-scenario"),
    (["run", "rebuild-after-delete", "--profile", "smok"], "unknown profile 'smok'"),
    (["ab", "rebuild-after-delete", "--a", "local", "--b", "no-such-server"], "no-such-server"),
])
@pytest.mark.slow
def test_a_typo_is_exit_2_before_the_host_lock_is_taken(tmp_path, args, named):
    """The host lock is held by another process all along: a typo must not wait for it or name it."""
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK], env={**os.environ, **SOURCE_ENV},
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        proc = run_perfci(*args, "--host-wait", "30", cwd=REPO)
        assert proc.returncode == 2 and named in proc.stderr and "host lock" not in proc.stderr, proc.stderr
    finally:
        holder.kill()
        holder.wait()


HOLD_LOCK = """
import sys, time
from perfci.host.hostlock import exclusive_host
with exclusive_host("perfci run held-by-test", allow_busy=True):
    print("held", flush=True)
    time.sleep(60)
"""


@pytest.mark.parametrize("args, refused", [
    (["--rounds", "4"], "--rounds only apply to --mode rounds"),
    (["--mode", "rounds", "--min-effect", "0.05"], "--min-effect only apply to --mode interleaved"),
])
def test_an_ab_option_of_the_other_mode_is_refused_not_silently_ignored(args, refused, perfci_here):
    proc = perfci_here("ab", "rebuild-after-delete", *args)
    assert proc.returncode == 2 and refused in proc.stderr and proc.stderr.count("\n") == 1


@pytest.mark.parametrize("command", [
    ("ab", "microbench", "--plan-only"),
    ("sweep", "microbench", "--servers", "local,local"),
    ("bisect", "microbench", "--good", "mysql-8.0.12", "--bad", "mysql-8.0.31"),
], ids=lambda c: c[0])
def test_a_phase_typo_is_one_line_before_anything_runs(command, tmp_path, perfci_here):
    proc = perfci_here(*command, "--phase", "point-querry", "--out", str(tmp_path / "out"))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("error: --phase 'point-querry': not a measure phase of microbench at smoke; "
                                  "phases: point-query, ") and proc.stderr.count("\n") == 1
    assert not list((tmp_path / "out").glob("**/*.json"))


@pytest.mark.slow
def test_history_changes_of_a_path_that_does_not_exist_or_holds_no_history_is_bad_input(tmp_path):
    """"no change points" would read as a clean history."""
    missing = run_perfci("history", "changes", str(tmp_path / "nowhere"))
    assert missing.returncode == 2 and "does not exist" in missing.stderr and missing.stderr.count("\n") == 1
    (tmp_path / "empty").mkdir()
    empty = run_perfci("history", "changes", str(tmp_path / "empty"))
    assert empty.returncode == 2 and empty.stderr.count("\n") == 1, empty.stderr
    assert "no history files" in empty.stderr and "no change points" not in empty.stdout


def test_servers_fetch_with_nothing_to_fetch_says_so(tmp_path):
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "servers.yaml").write_text("servers:\n  - id: db\n    spec: local\n    enabled: false\n")
    proc = run_perfci("servers", "fetch", env={"PERFCI_ROOT": str(tmp_path)})
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stdout + proc.stderr
    assert "none enabled in servers.yaml" in proc.stderr and "known: db" in proc.stderr


def every_option():
    """(command path, option) of every option of every perfci command."""
    import click

    def walk(command: click.Command, path: str):
        for param in command.params:
            if isinstance(param, click.Option):
                yield path, param
        if isinstance(command, click.Group):
            for name, sub in command.commands.items():
                yield from walk(sub, f"{path} {name}")

    for name in sorted(cli.COMMANDS):
        command = cli.cli.get_command(click.Context(cli.cli), name)
        assert command is not None
        yield from walk(command, name)


def test_every_option_says_what_it_does():
    bare = [f"{path} {option.opts[0]}" for path, option in every_option() if not (option.help or "").strip()]
    assert bare == []


def test_the_profile_is_smoke_by_default_and_the_same_option_everywhere():
    profiles = {path: option for path, option in every_option() if option.name == "profile"}
    assert {"ab", "bisect", "calibrate", "confirm", "doctor", "run", "sweep"} <= set(profiles)
    # `plan nightly` plans the nightly: its profile is the nightly's
    assert {path: option.default for path, option in profiles.items()} == {
        path: "nightly" if path == "plan nightly" else "smoke" for path in profiles}
    assert all("-p" in option.opts for option in profiles.values())


@pytest.mark.slow
def test_help_texts_say_what_the_commands_do():
    issues = run_perfci("issues", "sync", "--help")
    assert "one issue per regressed case" in " ".join(issues.stdout.split())
    dashboard = run_perfci("dashboard", "--help")
    assert "--history" not in dashboard.stdout and "--window" in dashboard.stdout


@pytest.mark.parametrize("args, named", [
    (["--false-issues", "0"], "Invalid value for '--false-issues'"),
    (["--false-issues", "5", "--cases", "1"], "false-issue budget: 5 a month is not allowed: give a number above 0 "
                                              "and at most 3"),
    (["--cases", "0"], "Invalid value for '--cases'"),
])
def test_a_false_issue_budget_out_of_range_is_one_line_naming_what_is_allowed(tmp_path, args, named, perfci_here):
    [(path, _)] = write_results(tmp_path, [make_result()])
    (tmp_path / "history").mkdir()
    proc = perfci_here("nightly", str(path), "--history", str(tmp_path / "history"), "--dry-run", *args)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and named in proc.stderr, proc.stderr
    assert not list((tmp_path / "history").iterdir())  # nothing written
