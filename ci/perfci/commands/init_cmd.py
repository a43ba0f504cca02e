"""`perfci init DIR`: a team's own perfci project — scenarios, servers.yaml, baselines and
thin workflows that call perfci's reusable ones, pinned by commit (the templates:
commands/project_files.py). The team keeps its repository; perfci is never forked or
vendored. `perfci init --upgrade SHA` moves every pin of a project at once."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import click

from perfci.commands.project_files import (
    DEFAULT_LABELS,
    DEFAULT_RUNNER_CLASS,
    SHA_RE,
    Caller,
    pin_disagreements,
    pins,
    project_files,
    server_repository_files,
    upgraded,
    workflow_texts,
)
from perfci.host.hostinfo import harness_revision
from perfci.model.scenario import load_scenario
from perfci.util.errors import BadInput
from perfci.util.files import write_atomic


def scaffold(target: Path, caller: Caller, scenarios: list[Path]) -> list[Path]:
    """Write the project's files under `target`; refuse to overwrite any of them."""
    files = project_files(caller, scenarios[0].stem)
    for path in scenarios:
        files[f"scenarios/{path.name}"] = path.read_text()
    existing = [name for name in files if (target / name).exists()]
    if existing:
        raise BadInput(f"perfci init: {target} already has {', '.join(sorted(existing))}: nothing was written")
    written = []
    for name, text in files.items():
        write_atomic(target / name, text)
        written.append(target / name)
    return written


def scaffold_server_repository(target: Path, caller: Caller, flavor: str, scenarios: list[str],
                               phases: list[str]) -> list[Path]:
    """Write the server-code PR check's workflows into a team's server repository."""
    if not (target / ".git").exists():
        raise BadInput(f"perfci init --server-code: {target} is not a git checkout (the server repository's, "
                       "where its workflows go)")
    for name in scenarios:
        if not re.fullmatch(r"[A-Za-z0-9._-][A-Za-z0-9._/-]*", name) or ".." in name.split("/"):
            raise BadInput(f"--scenario {name!r}: a name perfci ships or a path in {target} "
                           "(letters, digits, '.', '_', '-', '/')")
        if not (target / name).is_file():
            load_scenario(name)  # a name perfci ships (bad input, named, otherwise)
    files = server_repository_files(caller, flavor, scenarios, phases)
    existing = [name for name in files if (target / name).exists()]
    if existing:
        raise BadInput(f"perfci init: {target} already has {', '.join(sorted(existing))}: nothing was written")
    for name, text in files.items():
        write_atomic(target / name, text)
    return [target / name for name in files]


def upgrade(project: Path, ref: str) -> list[str]:
    """Move every perfci pin of the project's workflows to `ref`; the files changed."""
    if not SHA_RE.match(ref):
        raise BadInput(f"--upgrade {ref!r}: a full 40-character commit SHA is needed (a tag or branch can move)")
    texts = workflow_texts(project)
    found = [pin for name, text in texts.items() for pin in pins(name, text)]
    if not found:
        raise BadInput(f"perfci init --upgrade: no perfci pin in {project / '.github' / 'workflows'} "
                       "(a project made by `perfci init` has them)")
    changed = {name: upgraded(text, ref) for name, text in texts.items() if upgraded(text, ref) != text}
    for name, text in changed.items():
        write_atomic(project / name, text)
    return sorted(changed)


def ask(value, question: str, default, interactive: bool):
    """A value given on the command line, else the user's answer (on a terminal), else the default."""
    if value is not None:
        return value
    return click.prompt(question, default=default) if interactive else default


@click.command()
@click.argument("directory", type=click.Path(path_type=Path, file_okay=False), default=".")
@click.option("--perfci-repository", metavar="OWNER/NAME",
              help="Where perfci lives on GitHub: the workflows call its reusable ones.")
@click.option("--perfci-ref", metavar="SHA", help="The perfci commit to pin (default: the commit of this perfci).")
@click.option("--runner-labels", metavar="L1,L2,...",
              help=f"The labels of the team's benchmark runner (default: {','.join(DEFAULT_LABELS)}).")
@click.option("--runner-class", metavar="NAME",
              help=f"The runner's class: results, baselines and history are kept per class (default: {DEFAULT_RUNNER_CLASS}).")
@click.option("--private/--public", "private", default=None,
              help="perfci's repository is private: the workflows read it with the PERFCI_TOKEN secret (default: public).")
@click.option("--scenario", "scenario_names", multiple=True,
              help="A scenario to start with (repeatable): copied from perfci's (default: rebuild-after-delete). "
                   "With --server-code: what the check A/Bs, a name perfci ships or a path in the repository "
                   "(default: microbench).")
@click.option("--server-code", "server_flavor", type=click.Choice(["mariadb", "mysql", "percona"]),
              help="DIRECTORY is the team's server repository (this flavor's tree or a fork): write the "
                   "server-code PR check instead (each PR's base and head commits built and A/B'd).")
@click.option("--phase", "phases", multiple=True, metavar="PHASE",
              help="With --server-code: only this phase of the scenarios (repeatable; e.g. microbench's full-scan).")
@click.option("--interactive/--no-interactive", default=None,
              help="Ask for what is not given on the command line (default: when stdin is a terminal).")
@click.option("--upgrade", "upgrade_ref", metavar="SHA",
              help="In an existing project: move every perfci pin of its workflows to SHA, and nothing else.")
def init(directory: Path, perfci_repository: str | None, perfci_ref: str | None, runner_labels: str | None,
         runner_class: str | None, private: bool | None, scenario_names: tuple[str, ...], server_flavor: str | None,
         phases: tuple[str, ...], interactive: bool | None, upgrade_ref: str | None) -> None:
    """Start a team's perfci project in DIRECTORY: scenarios/, servers.yaml, baselines/,
    and the nightly, PR check, PR comment, approval and bisect workflows, which call
    perfci's reusable ones pinned by commit. On a terminal it asks for what differs
    between teams (perfci's repository, the runner's labels and class, a private perfci).
    With --server-code FLAVOR, DIRECTORY is the team's server repository instead: it gets
    the server-code PR check (each pull request's base and head commits built on the
    runner and A/B'd on the named scenarios), its sticky comment and the fork approval.

    \b
    Examples:
      perfci init perf-scenarios --perfci-repository acme/perfci
      cd perf-scenarios && perfci run rebuild-after-delete --profile smoke
      perfci init --upgrade 0123abcd...  (40 hex digits) in the project, later
      perfci init ~/src/server --server-code mariadb --scenario microbench --phase full-scan \\
        --perfci-repository acme/perfci"""
    if upgrade_ref is not None:
        changed = upgrade(directory, upgrade_ref)
        for name in changed:
            click.echo(f"pinned {upgrade_ref[:12]} in {directory / name}")
        problems = pin_disagreements([p for n, t in workflow_texts(directory).items() for p in pins(n, t)])
        if problems:
            raise BadInput("; ".join(problems))
        click.echo("every perfci pin agrees" if changed else f"every perfci pin already is {upgrade_ref[:12]}")
        return
    interactive = sys.stdin.isatty() if interactive is None else interactive
    repository = ask(perfci_repository, "perfci's GitHub repository (OWNER/NAME)", None, interactive)
    if repository is None:
        raise BadInput("--perfci-repository OWNER/NAME is needed: where perfci lives on GitHub")
    ref = ask(perfci_ref, "the perfci commit to pin", str(harness_revision()["git_sha"]), interactive)
    if not SHA_RE.match(ref) and perfci_ref is None:
        raise BadInput(f"this perfci is not a git checkout (commit {ref!r}): pass --perfci-ref SHA")
    labels = ask(runner_labels, "the benchmark runner's labels", ",".join(DEFAULT_LABELS), interactive)
    caller = Caller(repository=repository, ref=ref,
                    runner_labels=tuple(label.strip() for label in labels.split(",") if label.strip()),
                    runner_class=ask(runner_class, "the runner's class (one per kind of host)", DEFAULT_RUNNER_CLASS,
                                     interactive),
                    private=ask(private, "is perfci's repository private (y/n)", False, interactive)).check()
    if server_flavor is not None:
        bad = [p for p in phases if not re.fullmatch(r"[A-Za-z0-9._-]+", p)]
        if bad:
            raise BadInput(f"--phase {bad[0]!r}: letters, digits, '.', '_', '-'")
        names = list(scenario_names) or ["microbench"]
        for path in scaffold_server_repository(directory, caller, server_flavor, names, list(phases)):
            click.echo(f"wrote {path}")
        if caller.private:
            click.echo(f"note: add a repository secret PERFCI_TOKEN that may read {caller.repository} (contents: read)")
        click.echo(f"next: commit and push them; each pull request's base and head are then built "
                   f"(build:{server_flavor}@SHA) and A/B'd on {' '.join(names)} on the runner labelled "
                   f"{','.join(caller.runner_labels)}")
        return
    if phases:
        raise BadInput("--phase goes with --server-code (a project's scenarios run every phase)")
    sources = [load_scenario(name)[1] for name in scenario_names or ["rebuild-after-delete"]]
    directory.mkdir(parents=True, exist_ok=True)
    written = scaffold(directory, caller, sources)
    for path in written:
        click.echo(f"wrote {path}")
    if caller.private:
        click.echo(f"note: add a repository secret PERFCI_TOKEN that may read {caller.repository} (contents: read)")
    click.echo(f"next: cd {directory} && git init && perfci run {sources[0].stem} --profile smoke; then push it, "
               f"register a runner with the labels {','.join(caller.runner_labels)} and check it (perfci doctor)")
    if shutil.which("git") is None:
        click.echo("note: git is not on PATH; the nightly needs this directory as a GitHub repository")
