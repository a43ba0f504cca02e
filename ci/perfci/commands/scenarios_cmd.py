"""`perfci list` and `perfci validate`: the scenario files of the project."""

from __future__ import annotations

from pathlib import Path

import click

from perfci.commands import options
from perfci.commands.project_files import pin_disagreements, project_pins
from perfci.model.outputs import InvalidFile, ProfileEntry, ScenarioEntry, ScenarioList, ValidatedFile, Validation
from perfci.model.scenario import Scenario, all_scenario_files, cases, load_scenario, resolve
from perfci.util.errors import EXIT_BAD_INPUT, PerfciError
from perfci.util.paths import project_root


def profiles_of(scenario: Scenario, path: Path) -> list[ProfileEntry]:
    """Every profile of a scenario, each case resolved (a bad case raises here)."""
    return [ProfileEntry(name=name, description=prof.description, expected_minutes=prof.expected_minutes,
                         cases=len(cases(scenario, name, str(path))),
                         scenario_hash=resolve(scenario, name, str(path)).content_hash())
            for name, prof in scenario.profiles.items()]


@click.command()
@click.argument("files", nargs=-1, type=click.Path(path_type=Path))
@options.json_output("validation")
def validate(files: tuple[Path, ...], json_out: Path | None) -> int:
    """Check scenario files (default: every file in scenarios/) and all their profiles;
    without FILES also that the project's workflows pin one perfci commit."""
    say = options.text_out(json_out)
    paths = list(files) or all_scenario_files()
    root = project_root()
    pins = pin_disagreements(project_pins(root)) if not files and root is not None else []
    for problem in pins:
        click.echo(f"error: {problem}", err=True)
    checked = []
    for path in paths:
        try:
            scenario, _ = load_scenario(str(path))
            profiles = profiles_of(scenario, path)
            checked.append(ValidatedFile(path=str(path), ok=True, profiles=profiles))
            say(f"ok    {path}  profiles: " + ", ".join(
                f"{p.name} ({p.scenario_hash[7:15]}, {p.cases} case{'s' if p.cases > 1 else ''})" for p in profiles))
        except PerfciError as err:
            checked.append(ValidatedFile(path=str(path), ok=False, error=str(err)))
            click.echo(f"error: {err}", err=True)
    ok = not pins and all(f.ok for f in checked)
    options.emit_json(Validation(ok=ok, files=checked, pins=pins).dump(), json_out)
    return 0 if ok else EXIT_BAD_INPUT


@click.command(name="list")
@options.json_output("scenarios")
def list_scenarios(json_out: Path | None) -> None:
    """Show the scenarios, their profiles and expected run time."""
    say = options.text_out(json_out)
    listed, invalid = [], []
    for path in all_scenario_files():
        try:
            scenario, _ = load_scenario(str(path))
            profiles = profiles_of(scenario, path)
        except PerfciError as err:
            invalid.append(InvalidFile(path=str(path), error=str(err)))
            say(f"{path.stem}: INVALID: {err}")
            continue
        listed.append(ScenarioEntry(name=scenario.name, path=str(path), description=scenario.description,
                                    source=scenario.source or None,
                                    axes={axis.name: list(axis.ids()) for axis in scenario.axes}, profiles=profiles))
        say(f"{scenario.name}" + (f"  ({scenario.source})" if scenario.source else ""))
        say(f"  {scenario.description}")
        for axis in scenario.axes:
            say(f"  axis {axis.name}: {', '.join(axis.ids())}")
        for p in profiles:
            say(f"  --profile {p.name:<8} ~{p.expected_minutes:g} min  {p.cases} case(s)  {p.description}")
        say("")
    options.emit_json(ScenarioList(scenarios=listed, invalid=invalid).dump(), json_out)
