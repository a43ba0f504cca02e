"""#35's soak read back: the compressed nights of benchmarks/soak-nights.sh (one unchanged
server, so every issue written is a false one), from what the soak kept.

    python benchmarks/soak_report.py benchmarks/results/soak/<day>-<engine> > .../report.md

Prints, in Markdown: the engine commit, server, host and scenarios; per night each case's
throughput per phase, the nightly's outcome, what stood and the issues written; then the
issues opened over the case-nights looked at (a case-night is looked at once its history
holds the two nights a threshold verdict needs), with the exact 95 % interval, beside the
false-issue budget's rate per case-night. Nothing is simulated: every number is a count or
a value of the real runs.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "ci"))

from false_alarms import clopper_pearson  # noqa: E402  (the one exact interval of benchmarks/)
from perfci.judge.budget import IssueBudget  # noqa: E402

MIN_HISTORY = 2  # nights a case's history needs before tonight is judged (a history baseline of two samples)


def night_results(night: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((night / "results").glob("*/*.json"))]


def main() -> None:
    soak = Path(sys.argv[1])
    lines = [json.loads(line) for line in (soak / "soak.jsonl").read_text().splitlines()]
    nights = sorted((soak / "nights").iterdir())
    first = night_results(nights[0])
    server = first[0]["server"]
    cases = sorted({f"{r['scenario']['name']}/{r['case']}" for r in first})
    counted = first[0].get("measure") == "work"  # MEASURE=work: the counted series, judged on its instructions
    metric, named = ("instructions_per_txn", "instructions per transaction") if counted else ("tps", "tps")
    print(f"# Soak: {len(lines)} compressed nights of an unchanged server{' (counted series)' if counted else ''}\n")
    host = first[0]["host"]
    print(f"- engine `{lines[0]['engine'][:12]}` (every night: {len({x['engine'] for x in lines})} engine); server "
          f"{server.get('full_version') or server['version']} ({server['provider']}), host {host['hostname']} "
          f"({host['cpus']} CPUs), runner class {host['runner_class']}")
    print(f"- cases: {', '.join(f'`{c}`' for c in cases)} (smoke profile: a night compressed to minutes; "
          f"scenario hashes {', '.join(sorted({r['scenario']['hash'][7:19] for r in first}))})")
    print(f"- from {lines[0]['at']} to {lines[-1]['at']}; per night `perfci run` of each case, `perfci confirm`, "
          "one `perfci nightly --dry-run` (issues written as files), as the nightly workflow runs them\n")

    print("| night | " + " | ".join(f"{c} {named} (geometric mean of its phases)" for c in cases)
          + " | exit codes | outcome | stood | why no issue | issues |")
    print("|---|" + "---|" * len(cases) + "---|---|---|---|---|")
    tps: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))  # case -> phase -> nights
    looked, opened_nights = 0, []
    issues_before = 0
    stood_before: dict[str, set[str]] = {}  # case -> the keys that stood the night before
    for line, night in zip(lines, nights, strict=False):
        results = {f"{r['scenario']['name']}/{r['case']}": r for r in night_results(night)}
        cells = []
        for case in cases:
            r = results.get(case)
            if r is None or not r.get("phases"):
                cells.append("—")
                continue
            values = {p: v for p, body in r["phases"].items() if (v := body["metrics"].get(metric))}
            for phase, v in values.items():
                tps[case][phase].append(v)
            cells.append(f"{statistics.geometric_mean(values.values()):.0f}")
        summary = json.loads((night / "nightly.json").read_text()) if (night / "nightly.json").is_file() else {}
        stood = "; ".join(f"{s['case'].split('/')[-3]}: {len(s['keys'])} keys ({', '.join(s['keys'][:3])}"
                          f"{', …' if len(s['keys']) > 3 else ''})" for s in summary.get("standing", [])) or "—"
        # the nightly's pending: lines, from "regressed" on (what held each case's issue back)
        pending = "; ".join("regressed" + a.split(" regressed", 1)[1].split(": judged at")[0]
                            for a in summary.get("actions", []) if a.startswith("pending:") and " regressed" in a)
        standing = {x["case"]: set(x["keys"]) for x in summary.get("standing", [])}
        if not pending and standing and all(keys <= stood_before.get(case, set()) for case, keys in standing.items()):
            pending = "stood the night before, worse again: no regression tonight"  # it stays out of the baseline
        stood_before = standing
        codes = ", ".join(f"{k} {v}" for k, v in line.items() if k.startswith(("run ", "confirm", "nightly")))
        new = line["issues"] - issues_before
        issues_before = line["issues"]
        if line["night"] > MIN_HISTORY:
            looked += len(cases)
            if new:
                opened_nights.append(line["night"])
        outcome = summary.get("outcome", "—")
        print(f"| {line['night']} | " + " | ".join(cells) + f" | {codes} | {outcome} | {stood} | {pending or '—'} | "
              f"{new or ''} |")

    issues = sorted((soak / "issues").glob("*.md"))
    budget = IssueBudget()
    per_case_night = budget.false_issues / budget.cases / budget.nights
    low, high = clopper_pearson(len(opened_nights), looked)
    print(f"\n**Issues opened: {len(issues)}** over {looked} case-nights looked at ({len(cases)} cases, nights "
          f"{MIN_HISTORY + 1}-{lines[-1]['night']}); case-nights with an issue opened: {len(opened_nights)} "
          f"(95 % interval {low:.1%}-{high:.1%}). The default budget allows {per_case_night:.2%} per case-night "
          f"({budget.false_issues:g} false issue a month over {budget.cases} cases): a soak this long can show the "
          "loop opens nothing on real unchanged nights, not that the rate is within the budget (the month "
          "simulation's 200 case-months are for that).")
    for case, phases in tps.items():
        cvs = sorted(statistics.stdev(v) / statistics.fmean(v) for v in phases.values() if len(v) > 1)
        if cvs:
            print(f"- `{case}`: night-to-night CV of {named} per phase over {len(lines)} nights: median "
                  f"{statistics.median(cvs):.2%}, largest {cvs[-1]:.2%} ({len(cvs)} phases)")
        if counted:
            print(f"\n| phase | {named} (mean over nights) | night-to-night CV | largest night vs smallest |")
            print("|---|---|---|---|")
            for phase, v in phases.items():
                cv = statistics.stdev(v) / statistics.fmean(v) if len(v) > 1 else 0.0
                print(f"| {phase} | {statistics.fmean(v):,.0f} | {cv:.3%} | {max(v) / min(v) - 1:+.3%} |")
    for path in issues:
        print(f"- issue written: `{path.name}`: {path.read_text().splitlines()[0]}")


if __name__ == "__main__":
    main()
