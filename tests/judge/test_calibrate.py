"""`perfci calibrate --from` real A/A bursts (the false-alarm benchmark's, kept in the
repository): the model it writes and what it prints, including the size of the A/B the
nightly runs against its reference on that model."""

from __future__ import annotations

import gzip
import json
import re
import shutil

import pytest

from perfci.judge import design
from perfci.store import noise_files

from conftest import REPO, run_perfci


@pytest.mark.slow
def test_calibrate_from_real_aas_prints_the_sized_ab_and_its_mde_per_metric(tmp_path):
    runs = [json.loads(line) for line in (REPO / "benchmarks/results/false-alarms.jsonl").read_text().splitlines()]
    files = []
    for run in [r for r in runs if r["effect"] == 0][:4]:
        target = tmp_path / REPO.joinpath(run["bursts_file"]).name.removesuffix(".gz")
        with gzip.open(REPO / run["bursts_file"]) as src, target.open("wb") as dst:
            shutil.copyfileobj(src, dst)
        files += ["--from", str(target)]
    done = run_perfci("calibrate", "rebuild-after-delete", *files, "--simulate", "0", "--noise-dir",
                      str(tmp_path / "noise"), "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    [path] = (tmp_path / "noise").rglob("*.json")
    model = noise_files.load(path)
    assert len(model.runs) == 4 and model.scenario == "rebuild-after-delete"
    line = next(x for x in done.stdout.splitlines() if x.startswith("- sized A/B"))
    k, n = map(int, re.search(r"(\d+) instance pairs? x (\d+) burst pairs", line).groups())
    judged = len([x for x in done.stdout.splitlines() if "(judged)" in x])
    sized = design.for_case(model, 2, judged // 2, 2)
    assert (k, n) == (sized.instances, sized.bursts) and f"sees {sized.mde:.1%}" in line
    header = next(x for x in done.stdout.splitlines() if x.startswith("| metric |")).split(" | ")
    row = next(x for x in done.stdout.splitlines() if x.startswith("| `before.tps` (judged)")).split(" | ")
    shown = row[header.index("A/B MDE (sized)")]
    assert shown == f"{design.mde(design.key_noise('before.tps', model.metrics['before.tps']), k, n, judged):.2%}"
    assert float(shown.rstrip("%")) <= sized.mde * 100 + 1e-9  # the design is sized on the worst throughput key
