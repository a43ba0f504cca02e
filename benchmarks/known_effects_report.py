"""#35's known effects on the shipping design, read back from what the trials kept: the lines
of benchmarks/results/sized-ab.jsonl that name the given engine commits (written by
test_bench_false_alarms.py with PERFCI_BENCH_SIZE=target) and their bursts files.

    python benchmarks/known_effects_report.py ENGINE... > benchmarks/results/known-effects-<date>.md

The effect is a CPU cost in the statement path (test_bench_detection.py's trigger), dialled
for a share of a phase's transaction time; each run is labelled by what it realised (its
phase's tps B/A: `before.tps` for rebuild-after-delete), not by the dial. Prints, in
Markdown, one row per run (realised B/A with the interval that decided, instance pairs run
of planned, minutes, exit code, the keys flagged, work counters apart), then detection by
realised size with exact (Clopper-Pearson) intervals and the false attributions: a cost
that only slows the server does no extra work, so a work counter flagged is a false
attribution.
Nothing is simulated: every number is a count or a statistic of real bursts.
"""

from __future__ import annotations

import math
import statistics
import sys
from collections import defaultdict

from scipy import stats

from false_alarms import _by_realised_size, flagged, interval, realised_key, rejudge, trials
from perfci.model.metrics import is_work_counter


def main(engines: list[str]) -> None:
    runs = [(t, r) for t, r in trials("sized-ab.jsonl")
            if t["effect"] and any(t.get("engine", "").startswith(e) for e in engines)]
    if not runs:
        sys.exit(f"known_effects_report: no known-effect trial of engine {', '.join(engines)} in sized-ab.jsonl")
    first = runs[0][1]
    print("# Known effects on the shipping design, on real runs\n")
    print(f"{len(runs)} runs of `perfci ab CASE` with no size option (sized for 5 % within 25 minutes unless "
          f"the row's options say otherwise, its interim look), B carrying a trigger that burns CPU in every "
          f"updated row (A the same trigger with no work); engine {', '.join(f'`{e}`' for e in engines)}; "
          f"host {first.host.hostname} ({first.host.cpu_model}, {first.host.cpus} CPUs); "
          f"server{'s' if len({r.sides[0].full_version for _, r in runs}) > 1 else ''} "
          f"{', '.join(sorted({r.sides[0].full_version for _, r in runs}))}; "
          f"explain {runs[0][0].get('explain', 'auto')} (it runs after the verdict and changes none).\n")
    print("| date (UTC) | case | dial (trigger's BENCHMARK N, A → B) | options | labelled by: B/A [decision interval] "
          "| `after.tps` B/A | instance pairs (of planned) | minutes | exit | flagged: throughput, latency, CPU "
          "| flagged: work counters |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for trial, run in runs:
        rows = {r.key: r for r in rejudge(run)}
        cells = []
        for key in (realised_key(trial), "after.tps"):
            e = rows[key].estimate if key in rows else None
            cells.append(f"`{key}` " * (key != "after.tps") + (f"{e.ratio:.3f} [{e.low:.3f}, {e.high:.3f}]" if e else "–"))
        keys = flagged(list(rows.values()))
        time_keys = [k for k in keys if not is_work_counter(k)]
        counters = [k for k in keys if is_work_counter(k)]
        case = _case(trial)
        base = trial.get("base_iterations", 0)
        dial = f"{trial['effect']:.0%} (N {base} → {base + trial['iterations']})"
        print(f"| {trial['date'][:16]} | {case} | {dial} | {' '.join(trial.get('ab_args', [])) or '–'} | "
              f"{cells[0]} | {cells[1]} | {len(run.instances)} ({run.planned_instances}) | {trial['wall_s'] / 60:.1f} | "
              f"{trial['exit']} | {', '.join(f'`{k}`' for k in time_keys) or '–'} | "
              f"{', '.join(f'`{k}`' for k in counters) or 'none'} |")
    print()
    wrong = sum(any(is_work_counter(k) for k in flagged(rejudge(r))) for _, r in runs)
    print(f"False attributions (a work counter flagged) over all {len(runs)} runs: {interval(wrong, len(runs))}.\n")
    _by_dial(runs)
    print("Each run's own B/A carries its noise (on a noisy case ± several %), so labelling runs one by one sorts "
          "them partly by their noise: a run whose noise made the effect look larger is both put in a larger bin "
          "and more likely flagged. The table above pools the runs of one dial (the same cost per row), whose "
          "realised size is their mean; the one below labels each run by its own estimate, as asked.\n")
    _by_realised_size(runs)


def _by_dial(runs) -> None:
    """Runs of one case and one dial (the same intended cost per row: N follows the cost of
    one iteration measured before each run; the same options) pooled: their realised size
    is the geometric mean of their B/A with a t interval over runs, and detection is
    counted over them with its exact interval."""
    groups: dict[tuple, list] = defaultdict(list)
    for trial, run in runs:
        key = (_case(trial), trial["effect"], trial.get("dial") or "the default", " ".join(trial.get("ab_args", [])))
        groups[key].append((trial, rejudge(run)))
    print("### By dial: runs of one cost pooled\n")
    print("| case | dial: effect, TPS:ROWS:BASE | options | runs | realised B/A: geometric mean [95 % over runs] "
          "| detected (any judged key) | that tps flagged | work counter flagged (false attribution) | minutes (median) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (case, effect, dial, options), members in sorted(groups.items()):
        logs = [math.log(r.estimate.ratio) for t, rows in members for r in rows
                if r.key == realised_key(t) and r.estimate]
        mean = statistics.fmean(logs)
        if len(logs) > 1:
            half = stats.t.ppf(0.975, len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
            realised = f"{math.exp(mean):.3f} [{math.exp(mean - half):.3f}, {math.exp(mean + half):.3f}]"
        else:
            realised = f"{math.exp(mean):.3f} (one run)"
        k = len(members)
        detected = sum(bool(flagged(rows)) for _, rows in members)
        tps_hits = sum(realised_key(t) in flagged(rows) for t, rows in members)
        counters = sum(any(is_work_counter(x) for x in flagged(rows)) for _, rows in members)
        minutes = statistics.median(t["wall_s"] / 60 for t, _ in members)
        print(f"| {case} | {effect:.0%}, {dial} | {options or '–'} | {k} | {realised} | "
              f"{interval(detected, k)} | {tps_hits}/{k} | {interval(counters, k)} | {minutes:.1f} |")
    print()


def _case(trial: dict) -> str:
    """The case a trial ran, with its phase and (when not the distribution's) its server."""
    server = trial.get("server", "local")
    return (trial.get("scenario", "rebuild-after-delete") + (f" --phase {trial['phase']}" if trial.get("phase") else "")
            + ("" if server == "local" else f" on {server}"))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: python benchmarks/known_effects_report.py ENGINE_COMMIT...")
    main(sys.argv[1:])
