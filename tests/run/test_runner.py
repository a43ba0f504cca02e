"""The runner on a fake provider: planning, step dispatch, skips, snapshot use and
result assembly, with no server and no sysbench (the e2e tests run the real ones)."""

from __future__ import annotations

import json

import pytest

from perfci.commands.schema_cmd import json_schema
from perfci.model.result import Host, Status
from perfci.model.scenario import cases, load_scenario
from perfci.providers.capabilities import Requested
from perfci.run.execute import execute
from perfci.run.plan import plan_case, use_snapshots
from perfci.run.snapshots import SnapshotCache
from perfci.util.errors import BadInput, InfraFailure
from perfci.util.progress import Progress

from fake_provider import FakeInspector, FakeProvider, fake_handlers

HOST = Host(hostname="h", cpu_model="Test CPU", cpus=2, memory_bytes=24 << 30, kernel="Linux 6")
QUIET = Progress(quiet=True)


def plan_for(tmp_path, scenario="rebuild-after-delete", case=None, overrides=(), **provider):
    sc, path = load_scenario(scenario)
    [resolved] = cases(sc, "smoke", str(path), [case] if case else None)[:1]
    fake = FakeProvider(tmp_path / "work", **provider)
    return plan_case(resolved, path, fake, "local", list(overrides), []), fake


def run(plan, calls, effective=None, tps=None, runner_class="local"):
    plan.sysbench = "sysbench 1.0.20"
    return execute(plan, QUIET, runner_class=runner_class, handlers=fake_handlers(calls, tps),
                   inspect=lambda server: FakeInspector(server, effective), host=HOST)


def test_steps_run_in_order_and_the_result_is_assembled(tmp_path):
    plan, fake = plan_for(tmp_path)
    result = run(plan, fake.calls, tps={"before": 200.0, "after": 110.0})
    steps = [c for c in fake.calls if c.split()[0] in ("prepare", "apply_layout", "delete_random", "sql", "measure")]
    assert steps == ["prepare prepare", "apply_layout add-indexes-compress", "delete_random delete-half",
                     "measure before", "sql rebuild", "measure after"]
    assert fake.calls[0] == "start" and fake.calls[-2:] == ["stop", "cleanup"]
    assert result.status is Status.ok and [s.name for s in result.steps] == [
        "prepare", "add-indexes-compress", "delete-half", "before", "rebuild", "after"]
    tps = next(h for h in result.headline if h.metric == "tps")
    assert (tps.numerator, tps.denominator, tps.value) == ("after", "before", 0.55)
    assert result.server.line == "mariadb-10.11" and result.server.full_version == "10.11.19-mariadb"
    assert result.scenario.hash == plan.resolved.content_hash() and result.harness.sysbench == "sysbench 1.0.20"
    assert result.reproduce == "perfci run rebuild-after-delete --profile smoke --server local"
    # the options the capability table skips on MariaDB are noted, never silent
    assert {n.option for n in result.notes if n.action == "skipped"} >= {"innodb_use_fdatasync"}
    assert "innodb_use_fdatasync" not in fake.started_with[0]


def test_a_build_of_a_branch_is_reproduced_as_the_commit_it_built(tmp_path):
    sc, path = load_scenario("rebuild-after-delete")
    [resolved] = cases(sc, "smoke", str(path))[:1]
    fake = FakeProvider(tmp_path / "work")
    fake.kind, fake.commit = "build", "0123456789abcdef0123456789abcdef01234567"
    result = run(plan_case(resolved, path, fake, "build:mariadb@main", [], []), fake.calls)
    assert result.reproduce.endswith(f"--server build:mariadb@{fake.commit}")
    assert result.server.commit == fake.commit


def test_an_override_is_recorded_and_reproduced(tmp_path):
    plan, fake = plan_for(tmp_path, overrides=[Requested("innodb_flush_log_at_trx_commit", "1", "override")])
    result = run(plan, fake.calls)
    assert result.server.config.overrides == {"innodb_flush_log_at_trx_commit": "1"}
    assert fake.started_with[0]["innodb_flush_log_at_trx_commit"] == "1"
    assert result.reproduce.endswith("--config innodb_flush_log_at_trx_commit=1")


def test_an_override_the_binary_does_not_know_is_bad_input_before_any_work(tmp_path):
    with pytest.raises(BadInput, match="--config: server option 'innodb_no_such' is not known"):
        plan_for(tmp_path, overrides=[Requested("innodb_no_such", "1", "override")], known={"innodb_buffer_pool_size"})


def test_a_case_the_server_lacks_is_skipped_without_starting_it(tmp_path):
    plan, fake = plan_for(tmp_path, scenario="change-buffer-matrix", case="cx_full/change_buffering=all",
                          version="11.4.5")
    assert plan.skip_reason and "innodb_change_buffering=all is not supported" in plan.skip_reason
    result = run(plan, fake.calls)
    assert fake.calls == ["cleanup"]
    assert result.status is Status.skipped and result.skip_reason == plan.skip_reason
    assert result.steps == [] and result.phases == {} and result.headline == []


def test_a_case_the_running_server_ignores_is_skipped_after_start(tmp_path):
    plan, fake = plan_for(tmp_path, scenario="change-buffer-matrix", case="cx_full/change_buffering=none")
    result = run(plan, fake.calls, effective={"innodb_change_buffering": "all"})
    assert result.status is Status.skipped
    assert result.skip_reason == "innodb_change_buffering=none: the server ignored it (it reports 'all')"
    assert fake.calls == ["start", "setup", "stop", "cleanup"]  # no step ran


def test_a_failing_step_still_stops_and_cleans_up(tmp_path):
    plan, fake = plan_for(tmp_path)
    handlers = fake_handlers(fake.calls)

    def broken(ctx, step):
        raise InfraFailure("sysbench oltp_write_only run failed with exit code 1")

    handlers["measure"] = broken
    plan.sysbench = "sysbench 1.0.20"
    with pytest.raises(InfraFailure):
        execute(plan, QUIET, handlers=handlers, inspect=lambda s: FakeInspector(s), host=HOST)
    assert fake.calls[-2:] == ["abandon", "cleanup"] and "stop" not in fake.calls  # no waiting on a clean shutdown


def test_a_step_that_fails_because_the_server_died_says_the_server_died(tmp_path):
    plan, fake = plan_for(tmp_path)
    handlers = fake_handlers(fake.calls)

    def server_gone(ctx, step):
        fake.died = ("killed by signal 9 (SIGKILL)", "[Note] InnoDB: Starting shutdown...")
        raise InfraFailure("sysbench oltp_write_only run failed with exit code 1", detail="Lost connection")

    handlers["measure"] = server_gone
    plan.sysbench = "sysbench 1.0.20"
    with pytest.raises(InfraFailure) as failed:
        execute(plan, QUIET, handlers=handlers, inspect=lambda s: FakeInspector(s), host=HOST)
    assert str(failed.value) == "the server died during the run (killed by signal 9 (SIGKILL)); its error log ends with:"
    assert failed.value.detail == "[Note] InnoDB: Starting shutdown..."
    assert fake.calls[-2:] == ["abandon", "cleanup"]


def test_an_interrupt_stops_the_server_at_once_and_cleans_up(tmp_path):
    plan, fake = plan_for(tmp_path)
    handlers = fake_handlers(fake.calls)

    def interrupted(ctx, step):
        raise KeyboardInterrupt

    handlers["measure"] = interrupted
    plan.sysbench = "sysbench 1.0.20"
    with pytest.raises(KeyboardInterrupt):
        execute(plan, QUIET, handlers=handlers, inspect=lambda s: FakeInspector(s), host=HOST)
    assert fake.calls[-2:] == ["abandon", "cleanup"] and "stop" not in fake.calls


def test_the_first_run_prepares_and_saves_the_dataset_the_second_restores_it(tmp_path):
    cache = SnapshotCache(tmp_path / "snapshots")
    first, fake1 = plan_for(tmp_path / "1")
    use_snapshots(first, cache)
    saved = run(first, fake1.calls)
    assert "prepare prepare" in fake1.calls and "stop slow" in fake1.calls
    assert fake1.calls.index("stop slow") < fake1.calls.index("measure before")
    assert saved.dataset.snapshot and saved.dataset.snapshot.saved and not saved.dataset.snapshot.restored
    # MariaDB 10.11: one start with a small redo log between the slow shutdown and the copy
    slow = fake1.calls.index("stop slow")
    assert fake1.calls[slow:slow + 4] == ["stop slow", "start", "stop", "start"]
    configured, small, again = fake1.started_with
    assert configured["innodb_log_file_size"] == "512M" and small["innodb_log_file_size"] == 16 << 20
    assert small["innodb_buffer_pool_dump_at_shutdown"] == "OFF" and again == configured

    second, fake2 = plan_for(tmp_path / "2")
    use_snapshots(second, cache)
    restored = run(second, fake2.calls)
    assert fake2.calls[0] == "start restore"
    assert not any(c.startswith(("prepare", "apply_layout", "delete_random")) for c in fake2.calls)
    assert restored.steps[0].kind == "snapshot_restore"
    assert restored.steps[0].replaces == ["prepare", "add-indexes-compress", "delete-half"]
    assert restored.dataset.snapshot and restored.dataset.snapshot.restored
    assert restored.dataset.tables == saved.dataset.tables


def test_mysql_saves_its_snapshot_without_an_extra_start(tmp_path):
    plan, fake = plan_for(tmp_path, version="8.0.31", flavor="mysql")
    use_snapshots(plan, SnapshotCache(tmp_path / "snapshots"))
    run(plan, fake.calls)
    slow = fake.calls.index("stop slow")
    assert fake.calls[slow - 1:slow + 2] == ["shrink redo", "stop slow", "start"] and len(fake.started_with) == 2


def test_a_provider_that_cannot_keep_snapshots_always_prepares(tmp_path):
    plan, fake = plan_for(tmp_path)
    fake.supports_snapshots = False
    use_snapshots(plan, SnapshotCache(tmp_path / "snapshots"))
    assert plan.snapshots is None


def test_the_assembled_result_fits_the_published_schema(tmp_path):
    import jsonschema
    plan, fake = plan_for(tmp_path)
    result = run(plan, fake.calls, runner_class="epyc")
    jsonschema.validate(json.loads(json.dumps(result.dump())), json_schema("result"))
    assert result.host.runner_class == "epyc"
