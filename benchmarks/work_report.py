"""#54's tables from the kept bursts of benchmarks/work-campaign.sh (nothing simulated:
every number is a statistic or a count of real bursts).

    python benchmarks/work_report.py stability benchmarks/results/work/<day>-<engine>/stability
    python benchmarks/work_report.py aa benchmarks/results/work/<day>-<engine>/aa [more aa folders]
    python benchmarks/work_report.py spread DIR [DIR ...]   every counted A/A under the folders
    python benchmarks/work_report.py why BURSTS_FILE       a counted A/B's Why, from its bursts
    python benchmarks/work_report.py sweep SWEEP_FILE      a counted sweep's table and heatmap, rendered again

stability: per server, scenario and phase of the counting A/As (both sides the same
server, instance pairs from one dataset snapshot, A and B running the same seeded
transactions in every burst pair): instructions per transaction; the spread of one burst
pair's log(B/A) within an instance pair (what the paired verdict sees); the spread between
the server instances (each instance's mean over the same seeded bursts, all four servers of
the two instance pairs: what a fresh server changes); the spread between the bursts of one
instance (different seeds: how much the statements' own work varies); and the slowdown of
counting (seconds per transaction under callgrind over the timed A/A's, same phase).

spread: the stability table's columns per server, scenario and phase over every counted
A/A found under the folders (the A/A campaign's: one to three instance pairs each; pair sd
pooled over their burst pairs, instance sd and burst CV the median of the A/As'), the
slowdown against every timed A/A of the same server and phase found there (the timed
campaign's bursts, benchmarks/results/aa-campaign).

why: the Why a counted A/B prints with --explain always (where the instructions went, per
phase, from the function counts in its bursts file): for the campaign's A/Bs, which ran with
PERFCI_EXPLAIN=never.

aa: per A/A, the verdict (exit code, regressions) and each phase's unadjusted p of
instructions per transaction with the shipped priors; false alarms with their binomial
interval; the p-values against uniform (Kolmogorov-Smirnov).
"""

from __future__ import annotations

import gzip
import json
import math
import statistics
import sys
from pathlib import Path

from scipy import stats

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "ci"))

from perfci.host import policy  # noqa: E402
from perfci.judge.burst_verdicts import judge_run  # noqa: E402
from perfci.judge.calibration import priors_for  # noqa: E402
from perfci.judge.work_profile import phase_shift  # noqa: E402
from perfci.model.bursts import BURSTS_FILE, InterleavedRun  # noqa: E402
from perfci.model.metrics import WORK_METRIC  # noqa: E402
from perfci.model.sweep import SWEEP_FILE  # noqa: E402
from perfci.report.sweep_report import heatmap, sweep_markdown  # noqa: E402
from perfci.report.work_why import work_why_section  # noqa: E402


def runs_in(directory: Path) -> dict[str, InterleavedRun]:
    """Label (the A/B's folder) -> its bursts."""
    out = {}
    for path in sorted(directory.glob("*/*.bursts.json")):
        out[path.parent.name] = BURSTS_FILE.parse_text(path.read_text(), str(path))
    return out


def every_run(directory: Path) -> list[InterleavedRun]:
    """Every bursts file under `directory`, gzipped or not (an `excluded-*` folder's are
    kept for the record and left out: its README says why)."""
    out = []
    for path in sorted([*directory.rglob("*.bursts.json"), *directory.rglob("*.bursts.json.gz")]):
        if any(part.startswith("excluded-") for part in path.relative_to(directory).parts):
            continue
        text = gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz" else path.read_text()
        out.append(BURSTS_FILE.parse_text(text, str(path)))
    return out


def is_aa(run: InterleavedRun) -> bool:
    """Both sides the same server, config and setup (an A/B of an effect, a sweep or a
    bisect step is not noise)."""
    a, b = run.sides
    return (a.spec, a.described, a.full_version, a.setup_sql) == (b.spec, b.described, b.full_version, b.setup_sql)


def spread(*directories: Path) -> None:
    runs = [run for d in directories for run in every_run(d) if is_aa(run)]
    groups: dict[tuple[str, str, str], list[InterleavedRun]] = {}
    timed: dict[tuple[str, str, str], list[float]] = {}
    for run in runs:
        server = f"{run.sides[0].flavor} {run.sides[0].full_version}"
        for phase in run.bursts_per_phase:
            key = (server, run.scenario, phase)
            if run.measure == "work":
                groups.setdefault(key, []).append(run)
            elif any(b.phase == phase and not b.warmup for b in run.bursts):
                timed.setdefault(key, []).append(seconds_per_txn(run, phase))
    print("# Counted work: spread over the A/As (" + ", ".join(f"`{d.relative_to(ROOT)}`" for d in directories)
          + ")\n")
    print("| server | scenario | phase | A/As | instructions/txn | pair sd (pooled) | instance sd (median) | "
          "burst CV (median) | slowdown (timed A/As) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (server, scenario, phase), group in sorted(groups.items()):
        logs, instance_sds, cvs, values, counted = [], [], [], [], []
        for run in group:
            measured = [b for b in run.bursts if b.phase == phase and not b.warmup and WORK_METRIC in b.metrics]
            pairs: dict[tuple[int, int], dict[str, float]] = {}
            for b in measured:
                pairs.setdefault((b.instance, b.index), {})[b.side] = b.metrics[WORK_METRIC]
            logs += [math.log(p["b"] / p["a"]) for p in pairs.values() if "a" in p and "b" in p]
            servers = sorted({(b.instance, b.side) for b in measured})
            means = [statistics.fmean(b.metrics[WORK_METRIC] for b in measured if (b.instance, b.side) == k)
                     for k in servers]
            if len(means) > 1:
                instance_sds.append(sd(means) / statistics.fmean(means))
            cvs += [sd([b.metrics[WORK_METRIC] for b in measured if (b.instance, b.side) == k]) / m
                    for k, m in zip(servers, means) if sum((b.instance, b.side) == k for b in measured) > 1]
            values += [b.metrics[WORK_METRIC] for b in measured]
            counted.append(seconds_per_txn(run, phase))
        base = timed.get((server, scenario, phase))
        slowdown = f"{statistics.median(counted) / statistics.median(base):.1f}x" if base else "–"
        print(f"| {server} | {scenario} | {phase} | {len(group)} | {statistics.median(values):,.0f} | "
              f"{pct(sd(logs))} | {pct(statistics.median(instance_sds)) if instance_sds else '–'} | "
              f"{pct(statistics.median(cvs)) if cvs else '–'} | {slowdown} |")


def why(bursts_file: Path) -> None:
    run = BURSTS_FILE.parse_text(bursts_file.read_text(), str(bursts_file))
    shifts = [shift for phase in run.bursts_per_phase if (shift := phase_shift(run, phase)) is not None]
    print(work_why_section(shifts))


def sweep(sweep_file: Path) -> None:
    """A counted sweep's table (and its heatmap beside the file), rendered again from the
    sweep file with this perfci (a sweep's report is rendered when it runs)."""
    found = SWEEP_FILE.parse_text(sweep_file.read_text(), str(sweep_file))
    print(sweep_markdown(found, heatmap(found, sweep_file.with_suffix(".png"))))


def sd(values: list[float]) -> float:
    return statistics.stdev(values) if len(values) > 1 else float("nan")


def pct(x: float) -> str:
    return "–" if math.isnan(x) else f"{x:.4%}" if x < 0.001 else f"{x:.2%}"


def seconds_per_txn(run: InterleavedRun, phase: str) -> float:
    bursts = [b for b in run.bursts if b.phase == phase and not b.warmup]
    return statistics.median(b.duration_s / b.transactions for b in bursts)


def stability(directory: Path) -> None:
    runs = runs_in(directory)
    print(f"# Counted work: stability (`{directory.relative_to(ROOT)}`)\n")
    print("Instructions per transaction counted by callgrind inside the statement loop; every figure from the "
          "work A/As' measured bursts (warm-up pairs dropped). Pair sd: log(B/A) of one burst pair (same seeds "
          "on both sides); instance sd: the server instances' means over the same seeded bursts (4 servers: 2 "
          "instance pairs x 2 sides); burst CV: one side's bursts within an instance (different seeds); "
          "slowdown: seconds per transaction counted over timed (the timed A/A of the same phase).\n")
    print("| server | scenario | phase | instructions/txn | txn/burst | pair sd | instance sd | burst CV | "
          "counted s/pair | slowdown |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for label, run in runs.items():
        if not label.endswith("-work"):
            continue
        timed = runs.get(label[:-len("-work")] + "-time")
        scenario, server = run.scenario, run.sides[0].spec
        for phase in run.bursts_per_phase:
            measured = [b for b in run.bursts if b.phase == phase and not b.warmup and WORK_METRIC in b.metrics]
            if not measured:
                continue
            pairs: dict[tuple[int, int], dict[str, float]] = {}
            for b in measured:
                pairs.setdefault((b.instance, b.index), {})[b.side] = b.metrics[WORK_METRIC]
            logs = [math.log(p["b"] / p["a"]) for p in pairs.values() if "a" in p and "b" in p]
            means = [statistics.fmean(b.metrics[WORK_METRIC] for b in measured if (b.instance, b.side) == key)
                     for key in sorted({(b.instance, b.side) for b in measured})]
            cvs = [sd([b.metrics[WORK_METRIC] for b in measured if (b.instance, b.side) == key])
                   / statistics.fmean(b.metrics[WORK_METRIC] for b in measured if (b.instance, b.side) == key)
                   for key in sorted({(b.instance, b.side) for b in measured})]
            value = statistics.median(b.metrics[WORK_METRIC] for b in measured)
            pair_s = statistics.median(b.duration_s for b in measured) * 2
            slowdown = (seconds_per_txn(run, phase) / seconds_per_txn(timed, phase)
                        if timed and phase in timed.bursts_per_phase else float("nan"))
            print(f"| {server} | {scenario} | {phase} | {value:,.0f} | {run.burst_transactions[phase]} | "
                  f"{pct(sd(logs))} | {pct(sd(means) / statistics.fmean(means))} | {pct(statistics.fmean(cvs))} | "
                  f"{pair_s:.1f} | {'–' if math.isnan(slowdown) else f'{slowdown:.1f}x'} |")


def aa(*directories: Path) -> None:
    runs = {label: run for directory in directories for label, run in runs_in(directory).items()}
    print("# Counted work: A/As (" + ", ".join(f"`{d.relative_to(ROOT)}`" for d in directories) + ")\n")
    lines = [json.loads(line) for d in directories for line in (d / "runs.jsonl").read_text().splitlines()]
    seconds = {line["label"]: line["seconds"] for line in lines}
    exits = {line["label"]: line["exit"] for line in lines}
    engines = sorted({line["engine"][:12] for line in lines})
    print(f"Engine {', '.join(engines)}. Each row one `perfci ab --measure work` A/A (both sides the same server, "
          "sized by perfci for its 1 % target).\n")
    print("| A/A | server | phases | instance pairs (planned) | minutes | exit | regressions | "
          "p (instructions, per phase) | MDE (instructions) |")
    print("|---|---|---|---|---|---|---|---|---|")
    p_values: list[float] = []
    alarms = 0
    for label, run in runs.items():
        priors, _ = priors_for(run, None)
        rows = judge_run(run, [], 0.005, priors=priors)
        worse = [r.key for r in rows if r.spec is not None and r.verdict == "regression"]
        alarms += exits.get(label) == 1  # the shipped verdict: exit 1 is a regression of B
        ps = [r.estimate.p for r in rows if r.key.endswith(WORK_METRIC) and r.estimate]
        mdes = [r.mde for r in rows if r.key.endswith(WORK_METRIC) and r.mde is not None]
        p_values += ps
        planned = run.planned_instances or len(run.instances)
        stop = f", {run.stopped}" if run.stopped else ""
        server = f"{run.sides[0].flavor} {run.sides[0].full_version}"
        print(f"| {label} | {server} | {len(run.bursts_per_phase)} | {len(run.instances)} ({planned}{stop}) | "
              f"{seconds.get(label, 0) / 60:.1f} | {exits.get(label, '?')} | {', '.join(worse) or '–'} | "
              f"{', '.join(f'{p:.3f}' for p in ps)} | {', '.join(pct(m) for m in mdes)} |")
    busy = sum(policy.busy((b.host_cpu or {}).get("others")) for run in runs.values() for b in run.bursts
               if not b.warmup)
    print(f"\nMeasured bursts during which other processes used over {policy.BUSY_OTHER_CORES} cores (a timed "
          f"A/B would drop their pairs; a counted one keeps them since 2026-11-28): {busy}.")
    n = len(runs)
    low, high = stats.beta.ppf(0.025, alarms, n - alarms + 1) if alarms else 0.0, stats.beta.ppf(0.975, alarms + 1,
                                                                                                  n - alarms)
    print(f"\n**{alarms} false alarm{'s' if alarms != 1 else ''} in {n} A/As** (95 % Clopper-Pearson "
          f"{low:.1%}-{high:.1%}).")
    if len(p_values) >= 5:
        ks = stats.kstest(p_values, "uniform")
        print(f"Unadjusted p of instructions per transaction, {len(p_values)} phases: mean {statistics.fmean(p_values):.2f}, "
              f"KS against uniform p {ks.pvalue:.2f}.")


if __name__ == "__main__":
    MODES = {"stability": stability, "aa": aa, "spread": spread, "why": why, "sweep": sweep}
    MODES[sys.argv[1]](*(Path(a).resolve() for a in sys.argv[2:]))
