"""A simulated month of nightly results (synthetic numbers, real result model),
shared by the nightly-loop test and the dashboard test.

Case `default`: `after.tps` steps down 8 % from night 15 on; `before.latency_ms_p95`
spikes +30 % on night 8 only. Case `recovering`: `before.tps` is 25 % down on nights
6-11 and back from night 12. The server is 10.11.19 until night 20 and 10.11.20 from
night 21 (a patch upgrade of the same line). Every other metric is flat with 1 %
independent noise (seeded)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np

from perfci.model.result import Result

from factories import make_result

RUNNER = "epyc-nvme"
STEP_NIGHT, SPIKE_NIGHT, RECOVERY = 15, 8, (6, 12)
UPGRADE_NIGHT = 21


def night_result(night: int, case: str, rng: np.random.Generator) -> Result:
    version = "10.11.20" if night >= UPGRADE_NIGHT else "10.11.19"
    base = make_result(tps=1000.0, runner_class=RUNNER, version=version, case=case)
    data = base.dump()
    data["id"] = f"month-{case}-night{night:02d}"
    data["finished_at"] = f"2026-10-{night:02d}T03:00:00+00:00"
    data["harness"]["git_sha"] = f"sha{night:02d}"
    for phase, body in data["phases"].items():
        metrics = body["metrics"]
        for key, value in list(metrics.items()):
            if isinstance(value, float) and key != "duration_s":
                metrics[key] = value * (1 + rng.normal(0, 0.01))
        if case == "default" and phase == "after" and night >= STEP_NIGHT:
            metrics["tps"] *= 0.92
        if case == "default" and phase == "before" and night == SPIKE_NIGHT:
            metrics["latency_ms_p95"] *= 1.30
        if case == "recovering" and phase == "before" and RECOVERY[0] <= night < RECOVERY[1]:
            metrics["tps"] *= 0.75
    return Result.model_validate(data)


def month(nights: int = 30, seed: int = 7) -> list[list[Result]]:
    """Per night, the results of both cases."""
    rng = np.random.default_rng(seed)
    return [[night_result(n, case, rng) for case in ("default", "recovering")] for n in range(1, nights + 1)]


def git(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def results_branch(tmp_path: Path) -> Path:
    """A bare repository with a `results` branch holding an empty history/."""
    bare = tmp_path / "results.git"
    git("init", "-q", "--bare", str(bare))
    seed = tmp_path / "seed"
    git("init", "-q", "-b", "results", str(seed))
    (seed / "history").mkdir()
    (seed / "history" / ".keep").write_text("")
    git("add", "history", cwd=seed)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "history", cwd=seed)
    git("push", "-q", str(bare), "results", cwd=seed)
    return bare


def checkout(bare: Path, where: Path) -> Path:
    git("clone", "-q", "--branch", "results", str(bare), str(where))
    return where


def push(work: Path, message: str) -> None:
    git("add", "-A", "history", cwd=work)
    if subprocess.run(["git", "diff", "--cached", "--quiet"], cwd=work).returncode:
        git("-c", "user.name=perfci", "-c", "user.email=p@p", "commit", "-q", "-m", message, cwd=work)
        git("push", "-q", "origin", "HEAD:results", cwd=work)
