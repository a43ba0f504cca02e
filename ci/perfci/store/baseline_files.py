"""Stored baselines: one file per case (model/baseline.py has the values and the
layout), written atomically; `update` adds accepted results to them."""

from __future__ import annotations

from pathlib import Path

from perfci.model.baseline import (
    BASELINE_FILE,
    DEFAULT_WINDOW,
    NOISE_DIR,
    Baseline,
    BaselinesTree,
    new_baseline,
    refusals,
    sample_from,
)
from perfci.model.identity import DEFAULT_FOLLOW, CaseIdentity, Follow
from perfci.model.result import Result
from perfci.store import noise_files
from perfci.util.errors import BadInput
from perfci.util.files import write_json_atomic
from perfci.util.paths import baselines_dir


def baseline_path(root: Path | None, result: Result, follow: Follow = DEFAULT_FOLLOW) -> Path:
    return CaseIdentity.of(result, follow).path(root or baselines_dir(), ".json")


def load_baseline(path: Path) -> Baseline:
    return BASELINE_FILE.load(path)


def update_baselines(results: list[tuple[Path, Result]], root: Path | None = None, path: Path | None = None,
           window: int | None = None, force: bool = False,
           follow: Follow = DEFAULT_FOLLOW) -> list[tuple[Path, int, int]]:
    """Add accepted results to their baselines (created when missing).

    Every result is checked before anything is written; one refused result (without
    --force) refuses the whole update. Returns (path, samples added, samples kept)."""
    grouped: dict[Path, list[tuple[Path, Result]]] = {}
    for src, result in results:
        if not result.ran:
            continue  # a case this server cannot run has nothing to add (its reason is in the report)
        target = Path(path) if path else baseline_path(root, result, follow)
        grouped.setdefault(target, []).append((src, result))
    plans = []
    for target, members in grouped.items():
        baseline = load_baseline(target) if target.exists() else None
        added = 0
        for src, result in members:
            reasons = refusals(result, baseline)
            if reasons and not force:
                raise BadInput(f"{src}: refused for baseline {target}: {'; '.join(reasons)} (use --force to accept it anyway; "
                               "that is recorded in the sample)")
            if baseline is None:
                baseline = new_baseline(result, window or DEFAULT_WINDOW, follow)
            if any(s.result_id == result.id for s in baseline.samples):
                continue  # already in: updating twice with the same result is harmless
            baseline.samples.append(sample_from(result, forced=reasons))
            baseline.scenario_hash = result.scenario.hash
            added += 1
        assert baseline is not None  # members is never empty
        plans.append((target, baseline, added))
    written = []
    for target, baseline, added in plans:
        if window:
            baseline.window = window
        baseline.samples = baseline.samples[-baseline.window:]  # rolling window: newest samples win
        write_json_atomic(target, baseline.dump())
        for stale in target.parent.glob(f".{target.name}.*.tmp"):  # left by an update killed mid-write
            stale.unlink(missing_ok=True)
        written.append((target, added, len(baseline.samples)))
    return written


def read_tree(root: Path) -> BaselinesTree:
    """Every pinned baseline and noise model under a baselines/ root (none: an empty
    tree), each loaded through its versioned loader: a broken file is BadInput."""
    tree = BaselinesTree()
    if not root.is_dir():
        return tree
    for path in sorted(root.rglob("*.json")):
        rel = str(path.relative_to(root))
        if path.relative_to(root).parts[0] == NOISE_DIR:
            tree.models[rel], tree.model_bytes[rel] = noise_files.load(path), path.read_bytes()
        else:
            tree.cases[rel], tree.case_bytes[rel] = load_baseline(path), path.read_bytes()
    return tree
