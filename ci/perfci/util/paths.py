"""Where the project perfci works on lives: its `scenarios/`, `baselines/` and
`servers.yaml`.

perfci runs inside a checkout of a perfci project (this repository, or a team's
own repository of scenarios and baselines), never relative to where the package is
installed: `$PERFCI_ROOT` if set, else the working directory or the nearest parent
that holds a `scenarios/` directory or a `servers.yaml`. Outside any project the
scenarios shipped inside the package are the fallback, and baselines go to
`./baselines`.
"""

from __future__ import annotations

import os
from functools import cache
from importlib import resources
from pathlib import Path

from perfci.util.errors import BadInput

ROOT_ENV = "PERFCI_ROOT"
MARKERS = ("scenarios", "servers.yaml")


def project_root(start: Path | None = None) -> Path | None:
    """The project directory, or None when perfci runs outside one."""
    env = os.environ.get(ROOT_ENV)
    if env:
        root = Path(env).expanduser()
        if not root.is_dir():
            raise BadInput(f"${ROOT_ENV}={env}: no such directory")
        return root.resolve()
    here = (start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if (candidate / "scenarios").is_dir() or (candidate / "servers.yaml").is_file():
            return candidate
    return None


@cache
def builtin_scenarios() -> Path | None:
    """The scenario files shipped inside the wheel (`perfci/_scenarios`)."""
    shipped = resources.files("perfci") / "_scenarios"
    path = Path(str(shipped))
    return path if path.is_dir() else None


def scenarios_dir() -> Path:
    root = project_root()
    if root is not None and (root / "scenarios").is_dir():
        return root / "scenarios"
    shipped = builtin_scenarios()
    if shipped is not None:
        return shipped
    raise BadInput(f"no scenarios/ directory here or above {Path.cwd()} and none shipped with perfci; "
                   f"run from a perfci project or set ${ROOT_ENV}")


def baselines_dir() -> Path:
    root = project_root()
    return (root if root is not None else Path.cwd()) / "baselines"


def project_file(relative: str) -> Path | None:
    """A file of the project (e.g. `scripts/build-server`), or None outside one."""
    root = project_root()
    return root / relative if root is not None else None
