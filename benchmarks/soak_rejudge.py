"""A kept soak (benchmarks/soak-nights.sh) judged again by today's `perfci nightly`: the
same nights' results, in order, into a fresh history, each night with --dry-run (issues
as files) and --summary. Nothing is measured again: the results are the soak's own.

    python benchmarks/soak_rejudge.py benchmarks/results/soak/<day>-<engine>

Writes <soak>/rejudged-<commit>/: history/, issues/, one summary per night
(nights/NN.md), rejudged.jsonl (per night: the soak's exit code, today's, issues so far)
and report.md (the counts, beside the soak's own).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def perfci(*args: str) -> int:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "ci"), "PERFCI_RUNNER_CLASS": "soak"}
    return subprocess.run([sys.executable, "-m", "perfci.cli", *args], env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True).returncode


def main() -> None:
    soak = Path(sys.argv[1])
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                            check=True).stdout.strip()
    out = soak / f"rejudged-{commit[:12]}"
    shutil.rmtree(out, ignore_errors=True)
    for d in ("history", "issues", "nights"):
        (out / d).mkdir(parents=True)
    before = {json.loads(line)["night"]: json.loads(line) for line in (soak / "soak.jsonl").read_text().splitlines()}
    lines = []
    for night in sorted((soak / "nights").iterdir()):
        n = int(night.name)
        args = [*sorted(str(p) for p in (night / "results").iterdir()), "--history", str(out / "history"),
                "--dry-run", "--out", str(out / "issues"), "--summary", str(out / "nights" / f"{night.name}.md"),
                "--json", str(out / "nights" / f"{night.name}.json")]
        if (night / "confirm").is_dir():
            args += ["--confirmations", str(night / "confirm")]
        code = perfci("nightly", *args)
        cases = json.loads((out / "nights" / f"{night.name}.json").read_text())["cases"]
        lines.append({"night": n, "soak_exit": before[n]["nightly"], "exit": code,
                      "issues": len(list((out / "issues").glob("*.md"))),
                      "pending": sum(c["status"] == "pending" for c in cases)})
    (out / "rejudged.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    loud_then = sum(x["soak_exit"] == 1 for x in lines)
    loud_now = sum(x["exit"] == 1 for x in lines)
    told_nothing = sum(x["exit"] == 0 and x["issues"] == (lines[i - 1]["issues"] if i else 0)
                       for i, x in enumerate(lines))
    report = [f"# Soak {soak.name} judged again by `perfci nightly` at `{commit[:12]}`", "",
              f"- {len(lines)} nights of an unchanged server, the soak's own results, a fresh history, `--dry-run`.",
              f"- Exit 1 (an issue written): {loud_now} nights now; the soak's engine exited 1 on {loud_then} nights, "
              f"writing {before[max(before)]['issues']} issues.",
              f"- Nights that wrote no issue and exited 0: {told_nothing} of {len(lines)}; issues written now: "
              f"{lines[-1]['issues']}.",
              f"- Nights with a pending regression (said in the summary, exit 0): "
              f"{sum(x['pending'] > 0 and x['exit'] == 0 for x in lines)}.",
              "- One summary per night: nights/NN.md (what the report job writes to its job summary).", "",
              "| night | soak's exit | exit now | issues so far | pending cases |", "|---|---|---|---|---|",
              *(f"| {x['night']} | {x['soak_exit']} | {x['exit']} | {x['issues']} | {x['pending']} |" for x in lines)]
    (out / "report.md").write_text("\n".join(report) + "\n")
    print("\n".join(report[:7]))


if __name__ == "__main__":
    main()
