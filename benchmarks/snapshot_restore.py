"""Benchmark: restoring a dataset snapshot vs preparing it again.

    python3 benchmarks/snapshot_restore.py [--profile nightly] [--scenario rebuild-after-delete]

Prepares the scenario's dataset on a fresh server (initialise + start + the data
steps), saves it to a throwaway snapshot cache, then restores it on a new server
(copy + start + buffer pool load). Prints both times, the ratio, and the row count
and CHECKSUM TABLE of every table on both sides; exits 1 if the restore is not at
least --min-ratio times faster or the tables differ. Not a test: a number with its
context, run by hand or by a scheduled job on the runner class that matters.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ci import hostinfo  # noqa: E402

from perfci.progress import Progress  # noqa: E402
from perfci.runner import ScenarioExecution, _SnapshotUse, plan_runs  # noqa: E402
from perfci.snapshots import SnapshotCache, data_prefix  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", default="rebuild-after-delete")
    ap.add_argument("--profile", default="nightly")
    ap.add_argument("--server", default="local")
    ap.add_argument("--min-ratio", type=float, default=10.0)
    ap.add_argument("--json", type=Path, help="also write the numbers here")
    args = ap.parse_args()
    progress = Progress(quiet=False)
    with tempfile.TemporaryDirectory(prefix="perfci-bench-") as tmp:
        cache = SnapshotCache(Path(tmp) / "snapshots")
        fresh_plan, = plan_runs(args.scenario, args.profile, args.server, [], Path(tmp), snapshots=cache)
        server = fresh_plan.provider
        t0 = time.monotonic()
        try:
            server.start(fresh_plan.config_options)
            fresh = ScenarioExecution(fresh_plan, progress, Path(tmp))
            fresh.setup()
            fresh.run_steps(data_prefix(fresh_plan.resolved))
            prepare_s = time.monotonic() - t0
            fresh_tables = fresh.table_states()
            use = _SnapshotUse(fresh_plan)
            use.lookup()
            with server.connect() as conn:
                from perfci.snapshots import shrink_redo
                shrink_redo(conn, server.identity)
            clean = server.stop(slow=True)
            entry = cache.save(use.key, use.spec, server.datadir, {"flavor": server.identity.flavor,
                               "full_version": server.identity.full_version}, clean, fresh_tables, fresh.steps)
        finally:
            server.stop()
            server.cleanup()
        if entry is None:
            print("snapshot was not saved (unclean shutdown)", file=sys.stderr)
            return 1
        snapshot_bytes = json.loads((entry / "manifest.json").read_text())["bytes"]
        restore_plan, = plan_runs(args.scenario, args.profile, args.server, [], Path(tmp), snapshots=cache)
        server = restore_plan.provider
        use = _SnapshotUse(restore_plan)
        t0 = time.monotonic()
        try:
            server.start(restore_plan.config_options, restore_from=use.lookup())
            restored = ScenarioExecution(restore_plan, progress, Path(tmp))
            restored.setup()
            bp = restored.wait_buffer_pool_load()
            restore_s = time.monotonic() - t0
            restored_tables = restored.table_states()
        finally:
            server.stop()
            server.cleanup()
    ratio = prepare_s / restore_s
    out = {"scenario": args.scenario, "profile": args.profile, "server": server.identity.full_version,
           "host": hostinfo.fingerprint(Path(tempfile.gettempdir())), "prepare_s": round(prepare_s, 2),
           "restore_s": round(restore_s, 2), "ratio": round(ratio, 1), "snapshot_bytes": snapshot_bytes,
           "buffer_pool_load": bp,
           "tables_fresh": fresh_tables, "tables_restored": restored_tables,
           "tables_equal": fresh_tables == restored_tables}
    print(json.dumps(out, indent=2))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))
    ok = out["tables_equal"] and ratio >= args.min_ratio
    print(f"prepare {prepare_s:.1f} s, restore {restore_s:.1f} s: {ratio:.1f}x "
          f"(need >= {args.min_ratio:g}x); tables {'equal' if out['tables_equal'] else 'DIFFER'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
