"""The flame graphs of confirmed regressions, kept beside their case's history (the
results branch): history/.../CASE.flames/<result id>/<name>.svg, written by the nightly
from the reference A/B's explain directory, copied whole into the dashboard's site at
the same relative path (so a case page, an issue and the chart link one file)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from perfci.model.identity import CaseIdentity

SUFFIX = ".flames"


def relative(case_key: str, result_id: str, name: str) -> str:
    """Where a night's flame graph lives under the history root and under the site root
    (`case_key`: the case's slug path, runner class/server/scenario/profile/case)."""
    return f"{case_key}{SUFFIX}/{result_id}/{name}"


def keep(history_root: Path, case: CaseIdentity, result_id: str, directory: Path, names: list[str]) -> list[str]:
    """Copy the SVG files `names` (relative to `directory`, as a confirmation names them)
    into the case's flame graphs of night `result_id`, replacing what a replay of the night
    kept (the directory is swapped in whole: never half a night's graphs); their paths
    relative to the history root. A name that is missing (an artifact that did not hold
    it) or points outside `directory` (the file is data) is left out."""
    inside = Path(directory).resolve()
    sources = [(Path(directory) / name).resolve() for name in names]
    present = [s for s in sources if s.is_relative_to(inside) and s.is_file() and s.suffix == ".svg"]
    if not present:
        return []
    target = case.path(history_root, SUFFIX) / result_id
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{result_id}.", dir=target.parent))
    for source in present:
        shutil.copyfile(source, staging / source.name)
    if target.exists():
        shutil.rmtree(target)
    staging.rename(target)
    return [relative(case.slug_path, result_id, s.name) for s in sorted(present)]


def kept(history_root: Path, case_key: str) -> dict[str, list[str]]:
    """A case's kept flame graphs: night (result id) -> paths relative to the history
    root, the differential ones (`*-diff.svg`) first."""
    directory = Path(history_root) / f"{case_key}{SUFFIX}"
    if not directory.is_dir():
        return {}
    found: dict[str, list[str]] = {}
    for night in sorted(p for p in directory.iterdir() if p.is_dir() and not p.name.startswith(".")):
        names = sorted((p.name for p in night.glob("*.svg")), key=lambda n: (not n.endswith("-diff.svg"), n))
        if names:
            found[night.name] = [relative(case_key, night.name, n) for n in names]
    return found
