"""An explain pass's directory (`<run id>.explain/`): its record and the folded
profiles of its bursts."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from perfci.model.explain import ExplainRun, parse_folded
from perfci.util.errors import BadInput

RECORD = "explain.json"


def read_explain(directory: Path) -> tuple[ExplainRun, dict[str, dict[str, int]]]:
    """(record, {burst profile file: folded stacks}) of an explain directory."""
    path = directory / RECORD
    try:
        run = ExplainRun.model_validate(json.loads(path.read_text()))
    except FileNotFoundError:
        raise BadInput(f"{directory}: no {RECORD} (not an explain pass's directory)") from None
    except (ValueError, ValidationError) as bad:
        raise BadInput(f"{path}: not an explain record ({str(bad).splitlines()[0]})") from None
    folded = {}
    for burst in run.bursts:
        if burst.profile and (directory / burst.profile).is_file():
            folded[burst.profile] = parse_folded((directory / burst.profile).read_text())
    return run, folded
