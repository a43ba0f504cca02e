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
def source_checkout() -> Path | None:
    """The perfci checkout this package is imported from (an editable install, or
    PYTHONPATH=ci), or None for an installed wheel."""
    root = Path(__file__).resolve().parents[3]
    manifest = root / "pyproject.toml"
    if (root / "ci" / "perfci").is_dir() and manifest.is_file() and 'name = "perfci"' in manifest.read_text():
        return root
    return None


@cache
def builtin_scenarios() -> Path | None:
    """The scenarios perfci ships: inside the wheel (`perfci/_scenarios`), or the
    `scenarios/` of the checkout an editable install runs from."""
    shipped = Path(str(resources.files("perfci") / "_scenarios"))
    if shipped.is_dir():
        return shipped
    checkout = source_checkout()
    return checkout / "scenarios" if checkout is not None and (checkout / "scenarios").is_dir() else None


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
