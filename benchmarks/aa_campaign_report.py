"""#35's proof on real runs: the A/As of benchmarks/aa-campaign.sh, read back from what they
kept (benchmarks/results/aa-campaign/<day>/runs.jsonl, each run's verdict JSON and bursts).

    python benchmarks/aa_campaign_report.py > benchmarks/results/aa-campaign/report-<date>.md

Prints, in Markdown:
- per engine commit, server and day: A/As run, family-wise false alarms (any judged key a
  regression, as the CLI decided: its exit code), with the exact (Clopper-Pearson) 95 %
  interval; and the minutes each took;
- the unadjusted p-values of every judged key, re-judged from the kept bursts by the engine
  of this checkout (which must be the campaign's: the commit is compared), per kind of
  metric (throughput: tps only, latency, CPU, work counters): a Kolmogorov-Smirnov test against the
  uniform distribution and the share below 0.05; a kind whose p-values pile up near 0 is
  mis-modelled. QQ plots per kind go to --plots DIR;
- per scenario and server, every judged key's between-instance spread learned on these A/As
  beside the prior the A/B used (held out: the priors were fixed before the campaign).
Nothing is simulated: every number is a count or a statistic of real bursts.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from scipy import stats

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "ci"))

from false_alarms import clopper_pearson  # noqa: E402  (the one exact interval of benchmarks/)
from perfci.judge.burst_verdicts import judge_run  # noqa: E402
from perfci.judge.calibration import learn, priors_for  # noqa: E402
from perfci.judge.paired import runner_default_prior  # noqa: E402
from perfci.model.bursts import BURSTS_FILE, InterleavedRun  # noqa: E402
from perfci.model.metrics import presentation  # noqa: E402
from perfci.model.scenario import load_scenario, resolve  # noqa: E402

CAMPAIGN = ROOT / "benchmarks" / "results" / "aa-campaign"



def runs() -> list[tuple[Path, dict]]:
    out = []
    for log in sorted(CAMPAIGN.glob("*/runs.jsonl")):
        out += [(log.parent, json.loads(line)) for line in log.read_text().splitlines() if line.strip()]
    return out


def main(plots: Path | None) -> None:
    kept = runs()
    here = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    print("# A/As of the shipping design, on real runs\n")
    print("`perfci ab SCENARIO --a S --b S [--phase P]` with no size option (sized for 5 % within 25 minutes, "
          "its interim look), explain off; microbench one phase per A/A, rebuild-after-delete whole; "
          "from a frozen worktree (`benchmarks/aa-campaign.sh`).\n")
    groups: dict[tuple[str, str, str, str], list[dict]] = defaultdict(list)
    for day, run in kept:
        groups[(run["engine"][:12], _scenario(run), run["server"], day.name)].append(run)
    print("| engine | scenario | server | day | A/As | false alarms (exit 1) | 95 % interval | failed (exit 2/3) "
          "| minutes each |")
    print("|---|---|---|---|---|---|---|---|---|")
    total = alarms = 0
    for (engine, scenario_name, server, day), rows in sorted(groups.items()):
        done = [r for r in rows if r["exit"] in (0, 1)]
        k = sum(r["exit"] == 1 for r in done)
        low, high = clopper_pearson(k, len(done))
        minutes = sorted(r["wall_s"] / 60 for r in done)
        total, alarms = total + len(done), alarms + k
        print(f"| `{engine}` | {scenario_name} | {server} | {day} | {len(done)} | {k} | {low:.1%}-{high:.1%} | "
              f"{len(rows) - len(done)} | {minutes[0]:.1f}-{minutes[-1]:.1f} |" if minutes else "| – |")
    low, high = clopper_pearson(alarms, total)
    print(f"\nAll: {alarms} false alarms in {total} A/As (95 % interval {low:.1%}-{high:.1%}).\n")
    engines = {r["engine"] for _, r in kept}
    print(f"## Unadjusted p-values of the judged keys (re-judged from the bursts at `{here[:12]}`; "
          f"campaign engine{'s' if len(engines) > 1 else ''} {', '.join(sorted(e[:12] for e in engines))})\n")
    by_kind: dict[str, list[float]] = defaultdict(list)
    by_case: dict[tuple[str, str], list[InterleavedRun]] = defaultdict(list)  # (scenario, server) -> its A/As
    judged: dict[tuple[str, str], set[str]] = defaultdict(set)
    for day, run in kept:
        scenario, _ = load_scenario(_scenario(run))
        compare = resolve(scenario, "smoke").compare
        for path in sorted((day / run["id"]).glob("*.bursts.json.gz")):
            burst_run = BURSTS_FILE.parse_text(gzip.decompress(path.read_bytes()).decode(), str(path))
            by_case[(_scenario(run), run["server"])].append(burst_run)
            priors, _ = priors_for(burst_run, None)
            for row in judge_run(burst_run, compare, 0.01, priors=priors):
                if row.spec is not None and row.estimate is not None:
                    by_kind[_kind(row.key)].append(row.estimate.p)
                    judged[(_scenario(run), run["server"])].add(row.key)
    print("Throughput counts `tps` only: a phase's `qps` is its `tps` times a fixed number of statements per "
          "transaction, so its p-value repeats tps's and would count one test twice; the qps row shows it.\n")
    print("A kind whose p-values pile up near 0 flags more than its level (mis-modelled, too narrow); one whose "
          "p-values lean towards 1 (mean above 0.5, few below 0.05) is conservative: its intervals are wider than "
          "its noise, which costs power, not false alarms.\n")
    print("| kind | p-values | below 0.05 | mean (uniform: 0.5) | KS vs uniform: D | KS p |")
    print("|---|---|---|---|---|---|")
    for kind, values in sorted(by_kind.items()):
        ks = stats.kstest(values, "uniform")
        print(f"| {kind} | {len(values)} | {sum(v < 0.05 for v in values) / len(values):.1%} | "
              f"{sum(values) / len(values):.2f} | {ks.statistic:.3f} | {ks.pvalue:.3g} |")
    if plots is not None:
        _qq(by_kind, plots)
    _spread_vs_priors(by_case, judged)


def _spread_vs_priors(by_case: dict[tuple[str, str], list[InterleavedRun]], judged: dict[tuple[str, str], set[str]]):
    """The between-instance spread of every judged key, learned on these A/As (calibrate's
    estimator), beside the prior an A/B without a noise model adds: held-out runs, read
    after the priors were frozen. A key measured above its prior is planned too optimistically
    on this runner; its level holds as long as its p-values stay uniform, because the A/B
    pools the prior with the run's own instance pairs (the table above checks that)."""
    print("\n## Between-instance spread of the judged keys vs the shipped priors (held out)\n")
    print("Learned per scenario and server on the campaign's own A/As (`judge/calibration.learn`: the spread of "
          "instance pairs' mean log ratios less their within-instance variance, floored at 0); the priors "
          "(`judge/paired.runner_default_prior`) were fixed before these runs. ▲: measured above the prior.\n")
    print("| scenario | server | A/As | instance pairs | key | instance sd (df) | prior |")
    print("|---|---|---|---|---|---|---|")
    above = total = 0
    for (scenario, server), burst_runs in sorted(by_case.items()):
        model = learn(burst_runs, "campaign")
        pairs = sum(len(r.instances) for r in burst_runs)
        for key in sorted(judged[(scenario, server)]):
            m, prior = model.metrics.get(key), runner_default_prior(key)
            if m is None or m.instance_sd is None:
                continue
            total += 1
            mark = " ▲" if m.instance_sd > prior.sd else ""
            above += bool(mark)
            print(f"| {scenario} | {server} | {len(burst_runs)} | {pairs} | `{key}` | {m.instance_sd:.2%} "
                  f"({m.instance_df}){mark} | {prior.sd:.1%} |")
    print(f"\n{above} of {total} judged keys measured above their prior.")


def _kind(key: str) -> str:
    """The kind a judged key's p-value is pooled in; qps apart (it repeats tps's test)."""
    kind = presentation(key)[0]
    return "throughput (qps, not pooled)" if kind == "throughput" and key.rsplit(".", 1)[-1].startswith("qps") else kind


def _scenario(run: dict) -> str:
    return run.get("scenario", "microbench")  # day 1's lines predate the field: all microbench


def _qq(by_kind: dict[str, list[float]], out: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    out.mkdir(parents=True, exist_ok=True)
    for kind, values in by_kind.items():
        if "not pooled" in kind:
            continue
        values = sorted(values)
        n = len(values)
        fig, ax = plt.subplots(figsize=(4, 4))
        ax.plot([(i + 0.5) / n for i in range(n)], values, ".", label=f"{n} p-values")
        ax.plot([0, 1], [0, 1], "-", linewidth=0.8)
        ax.set_xlabel("uniform quantile")
        ax.set_ylabel("unadjusted p")
        ax.set_title(f"A/A p-values: {kind}", fontsize=9)
        fig.tight_layout()
        fig.savefig(out / f"qq-{kind.replace(' ', '-')}.png", dpi=100)
        plt.close(fig)
        print(f"\n![{kind}]({out.name}/qq-{kind.replace(' ', '-')}.png)")


if __name__ == "__main__":
    main(Path(sys.argv[sys.argv.index("--plots") + 1]) if "--plots" in sys.argv else None)
