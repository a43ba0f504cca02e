"""Regenerate docs/examples/ from the kept data of the real-tree planted commit
(docs/findings/2026-11-26-build-from-source.md): the same bursts, results, baseline and
confirmation, written by the current perfci, so the examples show what people read now.

    python benchmarks/regenerate_examples.py

- ab-full-scan.md / .json: the reference A/B's bursts re-judged by the current engine
  (the scenario's compare list, the runner-default priors it ran with) and reported;
- issue.md: the nightly's issue of that night (`perfci issues sync --dry-run`);
- pr-comment.md: the PR comment of that A/B (`perfci issues pr-comment --dry-run`).
Nothing is measured again: the numbers are the kept run's.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "ci"))
DATA = ROOT / "docs/findings/data/2026-11-26-build-from-source"
NIGHT = DATA / "nightly"
PROJECT = DATA / "nightly-project"
OUT = ROOT / "docs/examples"
BURSTS = NIGHT / "confirm/full-scan-smoke-ab-20261126T191551Z-3bb624.bursts.json.gz"
TONIGHT = NIGHT / "tonight/full-scan-smoke-20261126T191116Z-af6973.json"

os.environ["PERFCI_ROOT"] = str(PROJECT)  # the full-scan scenario and servers.yaml of that night

from perfci.judge import calibration  # noqa: E402
from perfci.judge.burst_verdicts import judge_run  # noqa: E402
from perfci.judge.paired import DEFAULT_MIN_EFFECT  # noqa: E402
from perfci.model.bursts import BURSTS_FILE  # noqa: E402
from perfci.model.scenario import load_scenario  # noqa: E402
from perfci.report.interleaved import interleaved_markdown, verdict_record  # noqa: E402
from perfci.report.opening import with_opening  # noqa: E402
from perfci.store.confirmation_files import load_all  # noqa: E402


def perfci(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "perfci.cli", *args], capture_output=True, text=True, check=False,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "ci")})


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    run = BURSTS_FILE.parse_text(gzip.decompress(BURSTS.read_bytes()).decode(), str(BURSTS))
    [confirmation] = load_all(NIGHT / "confirm").values()
    scenario, _ = load_scenario("full-scan")
    priors, source = calibration.priors_for(run, None)
    rows = judge_run(run, scenario.compare, DEFAULT_MIN_EFFECT, priors=priors)
    text = interleaved_markdown(run, rows, DEFAULT_MIN_EFFECT, instance_source=source, sizing=confirmation.sizing)
    verdict = verdict_record(run, rows, confirmation.size, report_file="ab-full-scan.md",
                             bursts_file=str(BURSTS.relative_to(ROOT)))
    verdict = verdict.model_copy(update={"sizing": confirmation.sizing})  # (kept before the size was typed)
    (OUT / "ab-full-scan.md").write_text(with_opening(text, verdict))
    (OUT / "ab-full-scan.json").write_text(json.dumps(verdict.dump(), indent=1) + "\n")
    with tempfile.TemporaryDirectory() as tmp:
        sync = perfci("issues", "sync", str(TONIGHT), "--baseline-dir", str(NIGHT / "baselines"),
                      "--confirmations", str(NIGHT / "confirm"), "--dry-run", "--out", tmp)
        assert sync.returncode == 0, sync.stderr
        [issue] = Path(tmp).glob("*.md")
        shutil.copyfile(issue, OUT / "issue.md")
    comment = perfci("issues", "pr-comment", str(OUT / "ab-full-scan.md"), "--pr", "1", "--head-sha", "7" * 40,
                     "--dry-run")
    assert comment.returncode == 0, comment.stderr
    (OUT / "pr-comment.md").write_text(comment.stdout)
    print(f"wrote {', '.join(p.name for p in sorted(OUT.glob('*')))} in {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
