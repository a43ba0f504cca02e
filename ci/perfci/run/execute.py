"""Executing one plan: start the server, run the steps (or restore the dataset and
run the rest), shut down, and assemble the typed `Result`.

The server-side reads and the step handlers are parameters, so the runner's unit
tests drive this very code with a fake provider, inspector and handlers.
"""

from __future__ import annotations

import datetime as dt
import shutil
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path

from perfci.host import hostinfo
from perfci.model.identity import server_line, slug
from perfci.model.result import DatasetState, Harness, HeadlineValue, Host, Result, ScenarioRef, Server, Status
from perfci.providers.provider import ServerProvider
from perfci.providers.servers import id_of_spec
from perfci.run.counted import CountedLaunches
from perfci.run.inspect import RunningServer, SqlInspector, logs_dir
from perfci.run.plan import RunPlan, ignored_axis_option, rerun_of, work_note
from perfci.run.snapshot_use import SnapshotUse
from perfci.run.snapshots import data_prefix
from perfci.run.steps import HANDLERS, Handler, StepContext, run_steps, utc_now
from perfci.run.validity import assess
from perfci.util.errors import InfraFailure
from perfci.util.files import NO_SPACE
from perfci.util.progress import Progress

InspectorFactory = Callable[[ServerProvider], RunningServer]


def headlines(ctx: StepContext) -> list[HeadlineValue]:
    out = []
    for h in ctx.resolved.headline:
        num = ctx.phases[h.numerator].metrics.get(h.metric)
        den = ctx.phases[h.denominator].metrics.get(h.metric)
        value = round(num / den, 4) if num is not None and den else None
        out.append(HeadlineValue(metric=h.metric, numerator=h.numerator, denominator=h.denominator, value=value))
    return out


DISK_FULL_BYTES = 64 * 2**20  # below this a server's next file extension fails (InnoDB extends by MiBs)


def explained(server: ServerProvider, failure: BaseException, name: str = "the server") -> BaseException:
    """A failure as the user should read it: when the server itself is gone (killed,
    crashed, out of memory), or its disk is full, that is the news, not the client's
    lost connection or a table that is "full". Other exceptions pass unchanged."""
    if isinstance(failure, OSError) and failure.errno in NO_SPACE:
        failure = InfraFailure(f"{failure.strerror}{f': {failure.filename}' if failure.filename else ''}")
    if not isinstance(failure, InfraFailure):
        return failure
    death = server.death()
    if death is not None:
        how, log_tail = death
        return InfraFailure(f"{name} died during the run ({how}); its error log ends with:", detail=log_tail)
    free = free_bytes(server.workdir)
    if free is not None and free < DISK_FULL_BYTES:
        return InfraFailure(f"{failure} -- the disk of {server.workdir} is full ({free // 2**20} MiB free): "
                            "free space, or point --workdir elsewhere", detail=failure.detail)
    return failure


def free_bytes(path: Path) -> int | None:
    try:
        return shutil.disk_usage(path).free
    except OSError:
        return None


def result_id(plan: RunPlan) -> str:
    r = plan.resolved
    case = "" if r.case == "default" else slug(r.case) + "-"
    return f"{r.name}-{r.profile}-{case}{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:6]}"


def execute(plan: RunPlan, progress: Progress, keep_workdir: bool = False, runner_class: str = "local",
            handlers: Mapping[str, Handler] = HANDLERS, inspect: InspectorFactory = SqlInspector,
            host: Host | None = None) -> Result:
    """Start the server, run every step, shut down; return the result (not yet written).
    A case the server cannot run as specified gives a `skipped` result with the reason."""
    server = plan.provider
    r = plan.resolved
    started = utc_now()
    t0 = time.monotonic()
    host = (host or hostinfo.host_record(server.workdir, runner_class)).model_copy(
        update={"runner_class": runner_class})
    if host.check and host.check.allow_busy and host.check.others_running:
        progress.info(f"  warning: measuring beside {', '.join(host.check.others_running)} (--allow-busy)")
    for warning in host.check.warnings if host.check else []:
        progress.info(f"  warning: {warning}")
    case = "" if r.case == "default" else f" case {r.case}"
    progress.info(f"perfci: {r.name} --profile {r.profile}{case} on {server.identity.label} ({server.where}); "
                  f"expected ~{r.expected_minutes:g} min")
    for note in plan.config_notes:
        progress.info(f"  note: {note.option} {note.action}: {note.reason}")
    skip_reason = plan.skip_reason
    server_info = server.identity.info(running=False)
    effective: dict[str, str] = {}
    ctx: StepContext | None = None
    dataset = DatasetState()
    if skip_reason is None:
        inspector = inspect(server)
        abandoned = server_up = False
        try:
            snap = SnapshotUse(plan, plan.snapshots) if plan.snapshots else None
            restore = snap.lookup() if snap else None
            counting = None
            if plan.work is not None:
                counting = CountedLaunches(plan.work, server, plan.config_options, progress,
                                           reconnect=lambda: setattr(ctx, "bench", inspector.setup()[1]))
                counting.start_natively()
            t_start = time.monotonic()
            with progress.step("start server" + (" from the dataset snapshot" if restore else "")):
                server.start(plan.config_options, restore_from=restore)
            server_up = True
            server_info, bench = inspector.setup()
            ctx = StepContext(r, plan.scenario_file, server, inspector, progress, logs_dir(server), bench, handlers,
                              counting=counting)
            effective = inspector.effective_config()
            skip_reason = ignored_axis_option(r, effective)
            if skip_reason is None:
                if snap:
                    dataset = snap.restored(ctx, time.monotonic() - t_start) if restore \
                        else snap.prepare_and_save(ctx)
                    run_steps(ctx, r.steps[len(data_prefix(r)):])
                else:
                    run_steps(ctx, r.steps)
                effective = inspector.effective_config()
        except BaseException as exc:
            # The datadir is thrown away: no clean shutdown to wait for. A server on a
            # full disk would wait for space forever, and a runner's SIGKILL follows its
            # cancel signal within 10 s.
            why = "interrupted" if isinstance(exc, KeyboardInterrupt) else "the run failed"
            news = explained(server, exc) if server_up else exc  # a failed start says why itself
            with progress.step(f"stop server at once ({why}: its datadir is thrown away)"):
                server.abandon()
            abandoned = True
            if news is not exc:
                raise news from exc
            raise
        finally:
            if not abandoned:
                with progress.step("shut down server"):
                    server.stop()
            server.cleanup(keep_workdir)
    else:
        server.cleanup(keep_workdir)
    if skip_reason:
        progress.info(f"  skipped: {skip_reason}")
    ran = ctx is not None and skip_reason is None
    requested = {req.name: req.value for req in plan.requested if req.origin == "scenario"}
    overrides = {req.name: req.value for req in plan.requested if req.origin == "override"}
    rerun = rerun_of(plan)
    result = Result(
        id=result_id(plan),
        status=Status.ok if ran else Status.skipped,
        skip_reason=skip_reason,
        case=r.case,
        axes=r.axes,
        started_at=started,
        finished_at=utc_now(),
        duration_s=round(time.monotonic() - t0, 3),
        harness=Harness.model_validate({**hostinfo.harness_revision(), "sysbench": plan.sysbench,
                                        **hostinfo.harness_versions()}),
        host=host,
        server=Server.model_validate({
            **server.describe(), **server_info,
            "server_id": id_of_spec(plan.server_spec),
            "line": server_line(server_info["flavor"], server_info["version"]),
            "config": {"scenario": requested, "overrides": overrides, "written": plan.config_options},
            "effective_config": effective,
        }),
        scenario=ScenarioRef(name=r.name, profile=r.profile, file=str(plan.scenario_file), hash=r.content_hash(),
                             resolved=r.model_dump(mode="json")),
        dataset=dataset,
        steps=ctx.steps if ctx is not None and ran else [],
        phases=ctx.phases if ctx is not None and ran else {},
        headline=headlines(ctx) if ctx is not None and ran else [],
        notes=plan.config_notes,
        reproduce=rerun.command(),
        rerun=rerun,
        measure="work" if plan.work else "time",
        work=work_note(plan),
    )
    validity = assess(result)
    for reason in validity.reasons:
        progress.info(f"  invalid: {reason}")
    return result.model_copy(update={"validity": validity})
