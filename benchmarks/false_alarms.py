"""Re-analyse the real A/As and known-effect runs of test_bench_false_alarms.py from
their kept bursts files (benchmarks/results/false-alarms.jsonl + bursts/*.gz).

    python benchmarks/false_alarms.py > benchmarks/results/false-alarms-<date>.md

Prints, in Markdown:
- family-wise false alarms of the A/As (any judged key flagged), as the CLI decided
  and as the current judge re-decides, each with its exact (Clopper-Pearson) 95 %
  interval;
- detection per known effect, with the realised B/A per phase;
- the noise at each level: burst pairs within one instance pair, and instance pairs
  within a run (what the between-instance prior must cover);
- side order: B/A of the A/As by which side ran first;
- covariates: whether background-work counters (purge, log flush, page cleaner)
  explain the burst-level tps differences (leave-one-run-out);
- the work fingerprint: how far Com_*/Handler_* per transaction differ between the
  sides of an A/A;
- minutes per verdict.
Nothing here is simulated: every number is a count or a statistic of real bursts.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
from scipy import stats

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "ci"))

from perfci.judge import calibration  # noqa: E402
from perfci.judge.burst_verdicts import instance_tables, judge_run  # noqa: E402
from perfci.judge.paired import PairedVerdict  # noqa: E402
from perfci.model.bursts import BURSTS_FILE, InterleavedRun  # noqa: E402
from perfci.model.metrics import is_work_counter  # noqa: E402
from perfci.model.verdicts import Outcome  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
PHASE_TPS = ("before.tps", "after.tps")
# background work a burst may or may not catch: candidates to explain its tps
COVARIATES = ("innodb_metrics.purge_invoked", "innodb_metrics.purge_undo_log_pages", "innodb_metrics.innodb_log_flush_usec",
              "innodb_metrics.buffer_flush_batch_total_pages", "innodb_metrics.buffer_LRU_get_free_search", "fsyncs_per_txn")
WORK_PREFIXES = ("global_status.Com_", "global_status.Handler_")


def clopper_pearson(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    a = (1 - confidence) / 2
    low = 0.0 if k == 0 else float(stats.beta.ppf(a, k, n - k + 1))
    high = 1.0 if k == n else float(stats.beta.ppf(1 - a, k + 1, n - k))
    return low, high


def load_run(path: Path) -> InterleavedRun:
    return BURSTS_FILE.load(path)  # kept gzipped: the loader reads *.gz


def trials(log: str = "false-alarms.jsonl") -> list[tuple[dict, InterleavedRun]]:
    lines = [json.loads(line) for line in (RESULTS / log).read_text().splitlines() if line.strip()]
    return [(t, load_run(ROOT / t["bursts_file"])) for t in lines]


_REJUDGED: dict[str, list[PairedVerdict]] = {}  # run id -> its judged rows: each table re-reads them


def rejudge(run: InterleavedRun) -> list[PairedVerdict]:
    if run.id not in _REJUDGED:
        priors, _ = calibration.priors_for(run, None)
        _REJUDGED[run.id] = [r for r in judge_run(run, [], 0.01, priors=priors) if r.spec is not None]
    return _REJUDGED[run.id]


def flagged(rows: list[PairedVerdict]) -> list[str]:
    return sorted(r.key for r in rows if r.verdict == Outcome.REGRESSION)


def log_ratios(run: InterleavedRun, key: str) -> list[np.ndarray]:
    """Per instance pair: log(B/A) of each measured burst pair."""
    out = []
    for table in instance_tables(run):
        a, b = table[key]
        out.append(np.log(np.asarray(b)) - np.log(np.asarray(a)))
    return out


def pct(x: float) -> str:
    return f"{x:.1%}"


def interval(k: int, n: int) -> str:
    low, high = clopper_pearson(k, n)
    return f"{k}/{n} = {pct(k / n)} (95 % CI {pct(low)}–{pct(high)})"


def main() -> None:
    data = trials(*sys.argv[1:2])  # default false-alarms.jsonl; sized-ab.jsonl: the sized A/Bs
    aas = [(t, r) for t, r in data if t["effect"] == 0]
    effects = sorted({t["effect"] for t, _ in data if t["effect"]})
    first = data[0][0]
    print("# False alarms and detection of the interleaved A/B, measured on real runs\n")
    print(f"{len(data)} runs of `perfci ab rebuild-after-delete` (profile smoke, {first['instances']} instance pairs × "
          f"{first['bursts']} burst pairs per phase, side order drawn at random per pair), "
          f"{data[0][0]['date'][:16]}Z – {data[-1][0]['date'][:16]}Z, host {data[0][1].host.hostname} "
          f"({data[0][1].host.cpu_model}, {data[0][1].host.cpus} CPUs), server {data[0][1].sides[0].full_version}, "
          f"scenario {data[0][1].scenario_hash[:19]}. Prior when they ran: {first['prior']}.\n")
    sizes = sorted({(t["instances"], t["bursts"]) for t, _ in data})
    if len(sizes) > 1 or first.get("sized"):
        print("Sizes as run (instance pairs x burst pairs per phase): " + ", ".join(f"{k} x {n}" for k, n in sizes)
              + "".join(f"\n- {t['date'][:16]}Z effect {t['effect']:.0%}: {t['sized']}" for t, _ in data
                        if t.get("sized")) + "\n")

    print("## Family-wise false alarms (A/As: any judged key flagged)\n")
    cli = sum(t["exit"] == 1 for t, _ in aas)
    judged = [(t, rejudge(r)) for t, r in aas]
    now = sum(bool(flagged(rows)) for _, rows in judged)
    print(f"- as the CLI decided at the time: {interval(cli, len(aas))}")
    _, source = calibration.priors_for(aas[0][1], None)
    print(f"- re-judged by the current code ({source}; statement-path CPU judged too): {interval(now, len(aas))}")
    for level in (0.95, None):
        covered: dict[str, int] = defaultdict(int)
        for _, rows in judged:
            for row in rows:
                if row.key in PHASE_TPS and row.estimate is not None:
                    e = row.estimate.at(level) if level else row.estimate
                    covered[row.key] += e.low <= 1 <= e.high
        what = "95 % intervals" if level else "decision intervals (1 − 0.005/m)"
        print(f"- A/A tps {what} that contain B/A = 1: "
              + ", ".join(f"`{k}` {covered[k]}/{len(aas)}" for k in PHASE_TPS))
    verdicts = defaultdict(lambda: defaultdict(int))
    for _, rows in judged:
        for row in rows:
            if row.key in PHASE_TPS:
                verdicts[row.key][str(row.verdict)] += 1
    mdes = {k: [row.mde for _, rows in judged for row in rows if row.key == k and row.mde is not None]
            for k in PHASE_TPS}
    print("- A/A verdicts now: " + "; ".join(f"`{k}` " + ", ".join(f"{v} {n}" for v, n in sorted(verdicts[k].items()))
                                           for k in PHASE_TPS))
    print("- MDE per run (90 % power, the decision's level): " + "; ".join(
        f"`{k}` median {statistics.median(v):.1%} [{min(v):.1%}, {max(v):.1%}]" for k, v in mdes.items() if v) + "\n")

    print("## Detection of known server-side slowdowns\n")
    print("Effect: the trigger's CPU per updated row sized to the stated share of a transaction's time; "
          "the realised B/A per phase is what the runs measured.\n")
    print("| effect | runs | flagged (any key), re-judged | `before.tps` flagged | `after.tps` flagged | "
          "`before.tps` B/A mean [min, max] | `after.tps` B/A mean [min, max] | MDE `before.tps` / `after.tps` (median) |")
    print("|---|---|---|---|---|---|---|---|")
    for effect in effects:
        runs = [(t, rejudge(r)) for t, r in data if t["effect"] == effect]
        cells = []
        for key in PHASE_TPS:
            ratios = [row.estimate.ratio for _, rows in runs for row in rows if row.key == key and row.estimate]
            cells.append(f"{statistics.mean(ratios):.3f} [{min(ratios):.3f}, {max(ratios):.3f}]")
        hits = sum(bool(flagged(rows)) for _, rows in runs)
        per_phase = [sum(key in flagged(rows) for _, rows in runs) for key in PHASE_TPS]
        mde = [statistics.median(row.mde for _, rows in runs for row in rows if row.key == key and row.mde is not None)
               for key in PHASE_TPS]
        print(f"| {effect:.0%} | {len(runs)} | {interval(hits, len(runs))} | {per_phase[0]}/{len(runs)} | "
              f"{per_phase[1]}/{len(runs)} | {cells[0]} | {cells[1]} | {mde[0]:.1%} / {mde[1]:.1%} |")
    print()
    _by_realised_size([(t, r) for t, r in data if t["effect"]])

    print("## Noise at each level (A/As, log B/A of tps)\n")
    print("| key | burst-pair sd | within-instance sd of an instance mean | instance-pair means sd | "
          "between-instance sd (excess) | instance pairs |")
    print("|---|---|---|---|---|---|")
    instance_sd = {}
    for key in PHASE_TPS:
        pairs = [d for _, r in aas for d in log_ratios(r, key)]
        burst_sd = math.sqrt(statistics.mean([float(np.var(d, ddof=1)) for d in pairs]))
        within = statistics.mean([float(np.var(d, ddof=1)) / len(d) for d in pairs])
        means = [float(d.mean()) for d in pairs]
        total = float(np.var(means, ddof=1))
        excess = max(0.0, total - within)
        instance_sd[key] = math.sqrt(excess)
        print(f"| `{key}` | {pct(burst_sd)} | {pct(math.sqrt(within))} | {pct(math.sqrt(total))} | "
              f"{pct(math.sqrt(excess))} | {len(means)} |")
    print("\nBurst-level spread of tps on one side (CV of measured bursts within one instance and phase):",
          ", ".join(f"`{key}` {pct(_side_cv(aas, key))}" for key in PHASE_TPS) + ".\n")

    print("## Side order (A/As)\n")
    for key in PHASE_TPS:
        by_first = defaultdict(list)
        for _, r in aas:
            for pair, d in zip(r.instances, log_ratios(r, key)):
                by_first[pair.first].append(float(d.mean()))
        cells = []
        for side in ("a", "b"):
            xs = by_first[side]
            if len(xs) >= 2:
                half = stats.t.ppf(0.975, len(xs) - 1) * statistics.stdev(xs) / math.sqrt(len(xs))
                m = statistics.mean(xs)
                cells.append(f"{side.upper()} first: B/A {math.exp(m):.4f} [{math.exp(m - half):.4f}, "
                             f"{math.exp(m + half):.4f}] over {len(xs)} pairs")
        print(f"- `{key}`: " + "; ".join(cells))
    print()

    _cpu(data)

    print("## Covariates (background work in the burst) against the tps difference\n")
    _covariates(aas)

    print("## Work fingerprint (A/As: Com_* and Handler_* per transaction, B vs A)\n")
    _work(aas)

    _planning(aas, judged)

    wall = [t["wall_s"] for t, _ in data]
    print("## Cost\n")
    print(f"Minutes per verdict: mean {statistics.mean(wall) / 60:.1f}, max {max(wall) / 60:.1f} "
          f"(wall time of the whole `perfci ab`: setup of both sides twice, warm-up, measured bursts).")


# realised slowdown of `before.tps` (1 - B/A): the bins the known effects are labelled by
REALISED_BINS = (("~2 %", 0.01, 0.035), ("~5 %", 0.035, 0.07), ("~10 %", 0.07, 0.15))


def realised_key(trial: dict) -> str:
    """The key a known effect is labelled by: its phase's tps (older lines: `before.tps`)."""
    return trial.get("realised_key") or "before.tps"


def _by_realised_size(runs) -> None:
    """Known effects labelled by what they realised, not the dial: detection (any judged
    key, and the labelling tps) with its interval, and false attributions: a CPU cost in
    the statement path does no extra work, so a work counter flagged is a false attribution."""
    print("### By realised size, with false attributions\n")
    print("| realised slowdown (1 − B/A of the phase's tps) | runs | detected (any judged key) | that tps flagged | "
          "work counter flagged (false attribution) | counters flagged |")
    print("|---|---|---|---|---|---|")
    for label, low, high in REALISED_BINS:
        rows_of = []
        for trial, run in runs:
            rows, key = rejudge(run), realised_key(trial)
            ratio = next((r.estimate.ratio for r in rows if r.key == key and r.estimate), None)
            if ratio is not None and low <= 1 - ratio < high:
                rows_of.append((key, rows))
        if not rows_of:
            continue
        counters = [[k for k in flagged(rows) if is_work_counter(k)] for _, rows in rows_of]
        named = sorted({k for ks in counters for k in ks})
        detected = sum(bool(flagged(rows)) for _, rows in rows_of)
        print(f"| {label} ({low:.1%}-{high:.1%}) | {len(rows_of)} | {interval(detected, len(rows_of))} | "
              f"{sum(key in flagged(rows) for key, rows in rows_of)}/{len(rows_of)} | "
              f"{interval(sum(bool(c) for c in counters), len(rows_of))} | {', '.join(f'`{k}`' for k in named) or '–'} |")
    print()


PLAN_INSTANCES = (2, 4, 6, 8)
PLAN_PAIRS = (8, 30, 60, 120)


def _planning(aas, judged) -> None:
    """What K instance pairs x n measured burst pairs would reach, projected from the
    A/As' own estimates: per run, the within-instance part of the squared standard error
    (se^2 - instance sd^2 / K) times K times its measured pairs gives the variance one
    measured pair contributes (ABBA blocks and autocorrelation included, as the engine
    estimated them); the between-instance sd is the runner default the verdict adds
    (RUNNER_DEFAULT_INSTANCE_SD); normal quantiles at the decision's level (0.005 / m
    two-sided, m judged metrics) and 90 % power, so the small-df t of few instance pairs
    makes real runs' MDE somewhat larger (see the measured MDE above). Minutes: the
    measured setup time per instance pair plus the measured burst time per pair (both
    sides, both phases, warm-up included)."""
    from perfci.judge.paired import RUNNER_DEFAULT_INSTANCE_SD
    m = len(judged[0][1])
    z = stats.norm.ppf(1 - 0.005 / m / 2) + stats.norm.ppf(0.9)
    per_pair = {}
    for key in PHASE_TPS:
        values = []
        for _, rows in judged:
            row = next(r for r in rows if r.key == key)
            e = row.estimate
            within = max(e.se ** 2 - e.instance_sd ** 2 / e.instances, 0.0)
            values.append(within * e.instances * (e.n_pairs / e.instances))
        per_pair[key] = statistics.median(values)
    burst_s, setup_s = _timing(aas)
    print("## Planning: instance pairs × burst pairs for a 5 % MDE (a projection from the measured A/As)\n")
    print(" ".join(line.strip() for line in (_planning.__doc__ or "").splitlines()) + "\n")
    print(f"Measured: {setup_s:.0f} s setup per instance pair, {burst_s:.1f} s of bursts per burst pair; "
          f"a measured pair's share of the variance: " + ", ".join(f"`{k}` sd {math.sqrt(v):.1%}"
                                                                  for k, v in per_pair.items()) + f"; m = {m}.\n")
    print("| instance pairs | measured burst pairs / phase | MDE `before.tps` | MDE `after.tps` | minutes |")
    print("|---|---|---|---|---|")
    for k in PLAN_INSTANCES:
        for n in PLAN_PAIRS:
            mdes = [math.exp(z * math.sqrt((per_pair[key] / n + RUNNER_DEFAULT_INSTANCE_SD ** 2) / k)) - 1
                    for key in PHASE_TPS]
            minutes = k * (setup_s + (n + 2) * burst_s) / 60
            print(f"| {k} | {n} | {mdes[0]:.1%} | {mdes[1]:.1%} | {minutes:.0f} |")
    print()


def _timing(aas) -> tuple[float, float]:
    """(seconds of bursts per burst pair over both phases, seconds of setup per instance pair)."""
    per_pair, setup = [], []
    for t, r in aas:
        total = sum(b.duration_s for b in r.bursts)
        pairs_per_instance = sum(r.bursts_per_phase.values()) + r.warmup_pairs * len(r.bursts_per_phase)
        per_pair.append(total / len(r.instances) / pairs_per_instance * len(r.bursts_per_phase))
        setup.append((t["wall_s"] - total) / len(r.instances))
    return statistics.mean(per_pair), statistics.mean(setup)


def _side_cv(aas, key: str) -> float:
    cvs = []
    for _, r in aas:
        for table in instance_tables(r):
            for values in table[key]:
                cvs.append(statistics.stdev(values) / statistics.mean(values))
    return statistics.mean(cvs)


CPU_KEYS = ("tps", "server_cpu_us_per_txn", "statement_cpu_us_per_txn")


def _cpu(data) -> None:
    """The server's CPU per transaction (threads' schedstat) beside tps, in the runs that
    recorded it: the spread of a burst pair's log B/A in the A/As, and B/A in the
    known-effect runs (the trigger's cost is CPU in the statement path)."""
    have = [(t, r) for t, r in data if any("statement_cpu_us_per_txn" in b.metrics for b in r.bursts)]
    if not have:
        return
    print("## Statement-path CPU against throughput (runs that recorded it)\n")
    print("CPU per transaction from each server thread's schedstat (ns) over the burst: `server_cpu` all threads, "
          "`statement_cpu` the busiest thread (one client thread: the connection's). "
          "Burst-pair sd: log B/A of one burst pair, A/As only; B/A: mean over the runs of each effect.\n")
    print("| phase | metric | burst-pair sd (A/As) | " + " | ".join(
        f"B/A at {e:.0%}" for e in sorted({t['effect'] for t, _ in have if t['effect']})) + " |")
    effects = sorted({t["effect"] for t, _ in have if t["effect"]})
    print("|---|---|---|" + "---|" * len(effects))
    for phase in ("before", "after"):
        for metric in CPU_KEYS:
            key = f"{phase}.{metric}"
            aa_d = [d for t, r in have if t["effect"] == 0 for d in log_ratios(r, key)]
            sd = math.sqrt(statistics.mean([float(np.var(d, ddof=1)) for d in aa_d])) if aa_d else math.nan
            cells = []
            for e in effects:
                ratios = [math.exp(float(np.mean(np.concatenate(log_ratios(r, key))))) for t, r in have
                          if t["effect"] == e]
                cells.append(f"{statistics.mean(ratios):.3f} ({len(ratios)} runs)")
            print(f"| {phase} | `{metric}` | {pct(sd)} | " + " | ".join(cells) + " |")
    n_aa = sum(t["effect"] == 0 for t, _ in have)
    print(f"\n{len(have)} runs recorded it ({n_aa} A/As).\n")


def _covariates(aas) -> None:
    """Per phase: regress each burst pair's log(B/A) tps on the B-A difference of each
    background counter; fit on all runs but one, predict the left-out run, compare the
    residual spread with the raw spread."""
    for key in PHASE_TPS:
        phase = key.split(".")[0]
        rows = []  # (run index, y, x...)
        for i, (_, r) in enumerate(aas):
            for table in instance_tables(r):
                a, b = table[key]
                y = np.log(np.asarray(b)) - np.log(np.asarray(a))
                xs = []
                for c in COVARIATES:
                    ca, cb = table.get(f"{phase}.{c}", ([0.0] * len(a), [0.0] * len(a)))
                    scale = (np.mean(ca) + np.mean(cb)) / 2 or 1.0
                    xs.append((np.asarray(cb) - np.asarray(ca)) / scale)
                for j in range(len(y)):
                    rows.append((i, y[j], *[x[j] for x in xs]))
        arr = np.asarray(rows, float)
        runs = arr[:, 0].astype(int)
        y, x = arr[:, 1], arr[:, 2:]
        residuals = np.empty_like(y)
        for i in set(runs.tolist()):
            fit, test = runs != i, runs == i
            design = np.column_stack([np.ones(fit.sum()), x[fit]])
            beta, *_ = np.linalg.lstsq(design, y[fit], rcond=None)
            residuals[test] = y[test] - np.column_stack([np.ones(test.sum()), x[test]]) @ beta
        print(f"- `{key}`: burst-pair sd {pct(float(y.std(ddof=1)))} raw, {pct(float(residuals.std(ddof=1)))} after "
              f"leave-one-run-out adjustment for {len(COVARIATES)} counters ({len(y)} pairs)")
    print()


def _work(aas) -> None:
    worst: dict[str, float] = {}
    for _, r in aas:
        for table in instance_tables(r):
            for key, (a, b) in table.items():
                metric = key.split(".", 1)[1]
                if metric.startswith(WORK_PREFIXES):
                    ma, mb = statistics.mean(a), statistics.mean(b)
                    if ma or mb:
                        d = abs(mb - ma) / ((ma + mb) / 2)
                        worst[key] = max(worst.get(key, 0.0), d)
    ordered = sorted(worst.items(), key=lambda kv: -kv[1])
    moved = [(k, d) for k, d in ordered if d > 0]
    print(f"{len(worst)} work counters per phase; largest relative B-vs-A difference of an instance pair's mean "
          f"over all A/As: {ordered[0][1]:.3%}" if ordered else "no work counters")
    if moved:
        print("\n| counter | largest difference |")
        print("|---|---|")
        for key, d in moved[:8]:
            print(f"| `{key}` | {d:.2%} |")
    print()


if __name__ == "__main__":
    main()
