"""`perfci list` and `perfci validate`: the scenario files of the project."""

from __future__ import annotations

from pathlib import Path

import click

from perfci.commands.project_files import pin_disagreements, project_pins
from perfci.model.scenario import all_scenario_files, cases, load_scenario, resolve
from perfci.util.errors import EXIT_BAD_INPUT, PerfciError
from perfci.util.paths import project_root


@click.command()
@click.argument("files", nargs=-1, type=click.Path(path_type=Path))
def validate(files: tuple[Path, ...]) -> int:
    """Check scenario files (default: every file in scenarios/) and all their profiles;
    without FILES also that the project's workflows pin one perfci commit."""
    paths = list(files) or all_scenario_files()
    bad = 0
    root = project_root()
    if not files and root is not None:
        for problem in pin_disagreements(project_pins(root)):
            bad += 1
            click.echo(f"error: {problem}", err=True)
    for path in paths:
        try:
            scenario, _ = load_scenario(str(path))
            counts = [len(cases(scenario, p, str(path))) for p in scenario.profiles]  # every case resolves
            click.echo(f"ok    {path}  profiles: " + ", ".join(
                f"{p} ({resolve(scenario, p, str(path)).content_hash()[7:15]}, {n} case{'s' if n > 1 else ''})"
                for p, n in zip(scenario.profiles, counts)))
        except PerfciError as err:
            bad += 1
            click.echo(f"error: {err}", err=True)
    return EXIT_BAD_INPUT if bad else 0


@click.command(name="list")
def list_scenarios() -> None:
    """Show the scenarios, their profiles and expected run time."""
    for path in all_scenario_files():
        try:
            scenario, _ = load_scenario(str(path))
        except PerfciError as err:
            click.echo(f"{path.stem}: INVALID: {err}")
            continue
        click.echo(f"{scenario.name}" + (f"  ({scenario.source})" if scenario.source else ""))
        click.echo(f"  {scenario.description}")
        for axis in scenario.axes:
            click.echo(f"  axis {axis.name}: {', '.join(axis.ids())}")
        for name, prof in scenario.profiles.items():
            n = len(cases(scenario, name, str(path)))
            click.echo(f"  --profile {name:<8} ~{prof.expected_minutes:g} min  {n} case(s)  {prof.description}")
        click.echo("")
