"""Noise models on disk: baselines/noise/<runner class>/<server line>/<scenario>/
<profile>/<case>.json (model/noise.py `noise_path`), written atomically."""

from __future__ import annotations

import json
from pathlib import Path

from perfci.model.baseline import NOISE_DIR
from perfci.model.noise import NOISE_FILE, NoiseModel, noise_path
from perfci.util.files import write_atomic
from perfci.util.paths import baselines_dir


def save(model: NoiseModel, root: Path) -> Path:
    path = noise_path(root, model.runner_class, model.server_line, model.scenario, model.profile, model.case,
                      model.measure)
    write_atomic(path, json.dumps(model.dump(), indent=1, sort_keys=True) + "\n")
    return path


def load(path: Path) -> NoiseModel:
    return NOISE_FILE.load(path)


def find_current(root: Path, runner_class: str, server_line: str, scenario: str, profile: str, case: str,
                 hashes: tuple[str, ...], measure: str = "time") -> tuple[NoiseModel | None, str | None]:
    """The case's noise model if it was learned on the case as it is now (one of `hashes`:
    the whole case's first; a --phase A/B also accepts its cut case's); else None, and,
    when a model learned on another hash is there, why it is not used. `measure`: the
    model of timed bursts, or of counted work."""
    path = noise_path(root, runner_class, server_line, scenario, profile, case, measure)
    model = load(path) if path.is_file() else None
    if model is None or model.scenario_hash in hashes:
        return model, None
    return None, (f"noise model of {scenario} at {profile} not used: it was learned on scenario "
                  f"{model.scenario_hash[:19]}, this case is {hashes[0][:19]} (the scenario changed since; "
                  "re-run `perfci calibrate`)")


def noise_root(noise_dir: Path | None, baseline_root: Path | None = None) -> Path:
    """Where noise models are read and written, one rule for every command: --noise-dir,
    else noise/ beside the baselines (--baseline-dir, else the project's baselines/)."""
    return noise_dir or (baseline_root or baselines_dir()) / NOISE_DIR
