"""The documentation a user reads: every link resolves, the README stays short, and every
`perfci` command line it shows names real commands and options."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest

from perfci.cli import COMMANDS, cli

from conftest import REPO

PAGES = sorted([REPO / "README.md", REPO / "CONTRIBUTING.md", REPO / "SECURITY.md", *(REPO / "docs").rglob("*.md")])
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to dashes."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    return {slug(m.group(1)) for m in re.finditer(r"(?m)^#+ (.+)$", page.read_text())}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_link_resolves(page: Path):
    broken = []
    for target in LINK.findall(page.read_text()):
        if re.match(r"^[a-z]+:", target):
            continue  # an external address: not ours to check offline
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            broken.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{target}: no heading #{anchor}")
    assert broken == [], f"{page.relative_to(REPO)}: {broken}"


def test_the_pages_link_to_each_other_and_the_checker_sees_a_broken_link(tmp_path: Path):
    assert anchors(REPO / "docs" / "scenarios.md") >= {"glossary", "dataset-snapshots"}
    bad = tmp_path / "bad.md"
    bad.write_text("[x](nowhere.md) [y](#no-heading)\n# Real heading\n")
    assert LINK.findall(bad.read_text()) == ["nowhere.md", "#no-heading"] and "real-heading" in anchors(bad)


def test_the_readme_is_read_in_five_minutes():
    assert len((REPO / "README.md").read_text().splitlines()) <= 200


def readme_command_lines() -> list[list[str]]:
    text = (REPO / "README.md").read_text()
    blocks = re.findall(r"```sh\n(.*?)```", text, re.S)
    lines = [line.split("#", 1)[0].strip() for block in blocks for line in block.splitlines()]
    return [shlex.split(line) for line in lines if line.startswith("perfci ")]


@pytest.mark.parametrize("argv", readme_command_lines(), ids=lambda a: " ".join(a[:3]))
def test_every_readme_command_names_real_commands_and_options(argv: list[str]):
    ctx = click.Context(cli)
    command: click.Command | None = cli.get_command(ctx, argv[1])
    assert command is not None and argv[1] in COMMANDS, f"no command {argv[1]!r}"
    rest = argv[2:]
    while isinstance(command, click.Group) and rest and not rest[0].startswith("-"):
        command = command.get_command(ctx, rest[0])
        assert command is not None, f"no subcommand {rest[0]!r} in {' '.join(argv)}"
        rest = rest[1:]
    known = {name for p in command.params for name in getattr(p, "opts", [])}
    unknown = [a for a in rest if a.startswith("--") and a.split("=", 1)[0] not in known]
    assert unknown == [], f"{' '.join(argv)}: no such option {unknown}"


def test_every_test_security_md_names_exists():
    """SECURITY.md's threat table names the test behind each row: each must be a real test."""
    named = re.findall(r"`(tests/[\w/]+\.py)::(\w+)`", (REPO / "SECURITY.md").read_text())
    assert len(named) >= 20
    missing = [f"{path}::{name}" for path, name in named
               if not re.search(rf"^def {name}\(", (REPO / path).read_text(), re.MULTILINE)]
    assert missing == []


ENV_NAME = re.compile(r"\bPERFCI_[A-Z0-9_]*[A-Z0-9]\b")
ENV_PAGE = REPO / "docs" / "environment.md"


def env_names_read(roots: list[Path]) -> set[str]:
    """Every PERFCI_* name in the files under `roots` (the package, scripts, workflows)."""
    return {name for root in roots for path in root.rglob("*") if path.is_file() and "__pycache__" not in path.parts
            for name in ENV_NAME.findall(path.read_text(errors="replace"))}


def test_every_environment_variable_is_on_the_reference_page():
    """docs/environment.md lists every PERFCI_* variable the code, scripts and workflows read,
    and nothing that no longer exists (benchmarks' PERFCI_BENCH_* are documented in place)."""
    read = env_names_read([REPO / "ci", REPO / "scripts", REPO / ".github"])
    listed = set(ENV_NAME.findall(ENV_PAGE.read_text())) - {"PERFCI_BENCH"}
    assert len(read) > 50
    assert sorted(read - listed) == [], "read but not on docs/environment.md"
    tested = env_names_read([REPO / "tests"])
    assert sorted(listed - read - tested) == [], "on docs/environment.md but nothing reads it"


def test_the_environment_check_sees_an_unlisted_variable(tmp_path: Path):
    (tmp_path / "x.py").write_text('os.environ.get("PERFCI_NEW_KNOB")\n')
    assert env_names_read([tmp_path]) - set(ENV_NAME.findall(ENV_PAGE.read_text())) == {"PERFCI_NEW_KNOB"}


@pytest.mark.parametrize("name", ["issue.md", "ab-full-scan.md", "pr-comment.md"])
def test_every_kept_example_opens_with_the_four_lines(name: str):
    """docs/examples/ (benchmarks/regenerate_examples.py): each writer's output says what,
    how sure, why and how to reproduce before any table."""
    lines = (REPO / "docs/examples" / name).read_text().splitlines()
    four = [i for i, line in enumerate(lines) if re.match(r"- \*\*(What|How sure|Why|Reproduce)\*\*: ", line)][:4]
    assert [lines[i].split("**")[1] for i in four] == ["What", "How sure", "Why", "Reproduce"], name
    assert four == list(range(four[0], four[0] + 4)), name  # together
    table = next((i for i, line in enumerate(lines) if line.startswith("| ")), len(lines))
    assert four[-1] < table, name
    assert "perfci " in lines[four[3]], name  # a command
