"""Everything a comparison reads, read in one place: results grouped by case, each
case's baseline (a pinned file, else made from its history) and its noise model.
judge/compare.py then judges the values."""

from __future__ import annotations

from pathlib import Path

from perfci.model.baseline import CaseInputs, baseline_from_history, provenance
from perfci.model.history import DEFAULT_HISTORY_WINDOW
from perfci.model.identity import DEFAULT_FOLLOW, CaseIdentity, Follow
from perfci.model.noise import NoiseModel
from perfci.model.result import Result
from perfci.store.baseline_files import baseline_path, load_baseline
from perfci.store.history_files import Histories, case_history
from perfci.store.noise_files import find_current, noise_root
from perfci.util.errors import BadInput


def noise_model_for(result: Result, noise_dir: Path | None, baseline_root: Path | None = None) -> NoiseModel | None:
    """The case's noise model (None: none, or one learned on another scenario hash):
    under `noise_dir`, else noise/ beside the baselines."""
    model, _ = find_current(noise_root(noise_dir, baseline_root), result.runner_class, result.server.line or "",
                            result.scenario.name, result.scenario.profile, result.case, (result.scenario.hash,))
    return model


def load_cases(results: list[Result], baseline_file: Path | None = None, baseline_root: Path | None = None,
               follow: Follow = DEFAULT_FOLLOW, noise_dir: Path | None = None,
               history_root: Path | Histories | None = None, window: int = DEFAULT_HISTORY_WINDOW) -> list[CaseInputs]:
    """Group results by case with each case's baseline: a pinned file (--baseline, or one
    under the baselines root) wins; else, with `history_root`, the last `window` usable
    samples of the case's history (model/baseline.py baseline_from_history)."""
    groups: dict[CaseIdentity, list[Result]] = {}
    for r in results:
        groups.setdefault(CaseIdentity.of(r, follow), []).append(r)
    if baseline_file and len(groups) > 1:
        raise BadInput("--baseline names one baseline file, but the results belong to "
                       f"{len(groups)} different cases; give the results of one case, or use --baseline-dir")
    out = []
    for ident, members in groups.items():
        model = noise_model_for(next((r for r in members if r.ran and r.validity.valid), members[0]), noise_dir,
                                baseline_root)
        path = Path(baseline_file) if baseline_file else baseline_path(baseline_root, members[0], follow)
        elsewhere = [] if baseline_file or path.exists() else other_classes(path, ident)
        if baseline_file or path.exists() or history_root is None:
            baseline = load_baseline(path) if (baseline_file or path.exists()) else None
            out.append(CaseInputs(members, baseline, path, model, warnings=elsewhere))
            continue
        hist = case_history(history_root, ident)
        from_history = baseline_from_history(hist, members[0], window, follow)
        out.append(CaseInputs(members, from_history, hist.path, model, provenance(hist, from_history), elsewhere))
    return out


def other_classes(path: Path, ident: CaseIdentity) -> list[str]:
    """A warning when this case has no baseline on its runner class but has one pinned on
    another: a baseline counts only on the class of host it was measured on, so it is
    not used, and that is said rather than silently ignored."""
    class_dir = path.parents[3]  # root/<class>/<server>/<scenario>/<profile>/<case>.json
    relative = path.relative_to(class_dir)
    found = sorted(d.name for d in class_dir.parent.iterdir() if d != class_dir and (d / relative).is_file()) \
        if class_dir.parent.is_dir() else []
    if not found:
        return []
    return [f"no baseline of runner class `{ident.runner_class}` for this case, but one pinned on runner class "
            f"{', '.join(f'`{c}`' for c in found)} (not used: a baseline counts on the class of host it was measured "
            f"on); pin one from runs of this class (`perfci run --runner-class {ident.runner_class}`, "
            "then `perfci baseline update`)"]
