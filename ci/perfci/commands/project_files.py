"""A perfci project's own files, from one set of templates (`project_templates/`): the
thin workflows that call perfci's reusable ones, servers.yaml, the READMEs.

The same templates render perfci's own callers (`SELF`: `uses: ./.github/workflows/…`,
no pins) and a team's (`Caller`: `uses: OWNER/perfci/.github/workflows/…@SHA`, with the
runner's labels and class). tests/project/test_project_templates.py holds perfci's own
.github/workflows/ to what the templates render.

Template syntax, kept small on purpose: `@name@` is replaced by a value, `@uses FILE@`
by the reusable workflow's reference; a line ending in `#@team` is a team's only,
`#@private` a team's whose perfci repository is private (a token reads it)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from perfci.util.errors import BadInput
from perfci.util.files import write_atomic

DEFAULT_LABELS = ("self-hosted", "linux", "x64", "perf")
DEFAULT_RUNNER_CLASS = "epyc-nvme"
REPOSITORY_RE = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
SHA_RE = re.compile(r"^[0-9a-f]{40}$")
LABEL_RE = re.compile(r"^[A-Za-z0-9_.-]+$")
RUNNER_CLASS_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")
# project file -> template file
WORKFLOWS = {f".github/workflows/{name}": name
             for name in ("nightly.yml", "pr-checks.yml", "pr-comment.yml", "bisect.yml", "perf-approval.yml")}
# a team's server repository (perfci's server-code PR check): project file -> template file
SERVER_WORKFLOWS = {".github/workflows/perf-pr-checks.yml": "server-pr-checks.yml",
                    ".github/workflows/perf-pr-comment.yml": "pr-comment.yml",
                    ".github/workflows/perf-approval.yml": "perf-approval.yml"}
OTHER_FILES = {"servers.yaml": "servers.yaml", "README.md": "README.md", "baselines/README.md": "baselines-README.md",
               ".gitignore": "gitignore"}
# perfci's own callers rendered from the same templates (its pr-checks.yml adds perfci's
# own lint and unit tests job, so it is written by hand)
OWN_WORKFLOWS = (".github/workflows/nightly.yml", ".github/workflows/pr-comment.yml", ".github/workflows/bisect.yml",
                 ".github/workflows/perf-approval.yml")
# a pin in a caller: `uses: OWNER/NAME/.github/workflows/perfci-X.yml@SHA` or `perfci-ref: SHA`
USES_PIN_RE = re.compile(r"(?m)(?P<head>^[ \t]*(?:-[ \t]*)?uses:[ \t]*"
                         r"(?P<repo>[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)/\.github/workflows/perfci-[\w-]+\.yml@)"
                         r"(?P<sha>[0-9A-Za-z_.-]+)(?=[ \t]*(?:#.*)?$)")
REF_PIN_RE = re.compile(r"(?m)(?P<head>^[ \t]*perfci-ref:[ \t]*)(?P<sha>[0-9A-Za-z_.-]+)(?=[ \t]*(?:#.*)?$)")
REPO_PIN_RE = re.compile(r"perfci-repository:\s*(?P<repo>[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)")


@dataclass(frozen=True)
class Caller:
    """What differs between teams: where perfci lives, the commit, the runner."""

    repository: str
    ref: str
    runner_labels: tuple[str, ...] = DEFAULT_LABELS
    runner_class: str = DEFAULT_RUNNER_CLASS
    private: bool = False

    def check(self) -> Caller:
        if not REPOSITORY_RE.match(self.repository):
            raise BadInput(f"--perfci-repository {self.repository!r}: expected OWNER/NAME")
        if not SHA_RE.match(self.ref):
            raise BadInput(f"--perfci-ref {self.ref!r}: a full 40-character commit SHA is needed (a tag or branch can move)")
        bad = [label for label in self.runner_labels if not LABEL_RE.match(label)]
        if not self.runner_labels or bad:
            raise BadInput(f"--runner-labels: comma-separated labels of letters, digits, '-', '_', '.' "
                           f"(got {','.join(self.runner_labels) or 'none'!r})")
        if not RUNNER_CLASS_RE.match(self.runner_class):
            raise BadInput(f"--runner-class {self.runner_class!r}: lower-case letters, digits, '-', '_', '.'")
        return self


SELF = None  # render() for perfci's own repository
MISSING = "\0"  # a line left out


def template(name: str) -> str:
    return (resources.files("perfci.commands") / "project_templates" / name).read_text()


def render(text: str, caller: Caller | None, scenario: str = "", **values: str) -> str:
    """A template for a team's `caller`, or for perfci itself (`SELF`); `values` fill
    their `@name@` for both."""
    lines = []
    for line in text.splitlines():
        for marker, wanted in (("#@private", caller is not None and caller.private), ("#@team", caller is not None)):
            if line.endswith(marker):
                line = line[:-len(marker)].rstrip() if wanted else MISSING
                break
        if line is not MISSING:
            lines.append(line)
    out = "\n".join(lines) + "\n"

    def uses(m: re.Match[str]) -> str:
        if caller is None:
            return f"./.github/workflows/{m.group(1)}"
        return f"{caller.repository}/.github/workflows/{m.group(1)}@{caller.ref}"

    out = re.sub(r"@uses ([\w.-]+)@", uses, out)
    if caller is not None:
        values = {**values, "repository": caller.repository, "ref": caller.ref, "ref_short": caller.ref[:12],
                  "runner_labels": json.dumps(list(caller.runner_labels)), "runner_class": caller.runner_class,
                  "scenario": scenario}
    out = re.sub(r"@([a-z_]+)@", lambda m: values.get(m.group(1), m.group(0)), out)
    left = re.findall(r"@[a-z_]+@", out)
    if left:
        raise AssertionError(f"template left {left} unrendered")
    return out


def project_files(caller: Caller, scenario: str) -> dict[str, str]:
    """A team project's files (relative path -> text), scenarios aside."""
    return {path: render(template(name), caller, scenario, checks_workflow="pr-checks")
            for path, name in {**OTHER_FILES, **WORKFLOWS}.items()}


def server_repository_files(caller: Caller, flavor: str, scenarios: list[str], phases: list[str]) -> dict[str, str]:
    """The workflows a team's server repository adds for perfci's server-code PR check
    (relative path -> text): the check, its sticky comment, the fork approval."""
    values = {"checks_workflow": "perf-pr-checks", "flavor": flavor, "scenarios": " ".join(scenarios),
              "phases": " ".join(phases)}
    return {path: render(template(name), caller, **values) for path, name in SERVER_WORKFLOWS.items()}


def own_workflows() -> dict[str, str]:
    """perfci's own callers, as the templates render them."""
    return {path: render(template(WORKFLOWS[path]), SELF, checks_workflow="pr-checks") for path in OWN_WORKFLOWS}


@dataclass(frozen=True)
class Pin:
    file: str
    line: int
    repository: str | None
    sha: str


def pins(name: str, text: str) -> list[Pin]:
    """Every perfci pin of one workflow file: its `uses:` references and `perfci-ref:` inputs."""
    named = REPO_PIN_RE.search(text)  # the file's perfci-repository: input, which its perfci-ref: goes with
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        for m in USES_PIN_RE.finditer(line):
            found.append(Pin(name, number, m.group("repo"), m.group("sha")))
        for m in REF_PIN_RE.finditer(line):
            found.append(Pin(name, number, named.group("repo") if named else None, m.group("sha")))
    return found


def pin_disagreements(found: list[Pin]) -> list[str]:
    """One line per pin that is not the project's one perfci commit (none when they agree)."""
    if not found:
        return []
    shas = sorted({p.sha for p in found})
    repos = sorted({p.repository for p in found if p.repository})
    problems = []
    if len(shas) > 1:
        where = "; ".join(f"{sha[:12]} at " + ", ".join(f"{Path(p.file).name}:{p.line}" for p in found if p.sha == sha)
                          for sha in shas)
        problems.append(f"the workflows pin {len(shas)} perfci commits ({where}): "
                        "run `perfci init --upgrade SHA` to pin one")
    problems += [f"{p.file}:{p.line}: {p.sha!r} is not a full commit SHA (a tag or branch can move)"
                 for p in found if not SHA_RE.match(p.sha)]
    if len(repos) > 1:
        problems.append(f"the workflows name {len(repos)} perfci repositories ({', '.join(repos)})")
    return problems


def workflow_texts(project: Path) -> dict[str, str]:
    directory = project / ".github" / "workflows"
    return {f".github/workflows/{p.name}": p.read_text() for p in sorted(directory.glob("*.y*ml"))} if directory.is_dir() else {}


def project_pins(project: Path) -> list[Pin]:
    return [pin for name, text in workflow_texts(project).items() for pin in pins(name, text)]


def upgraded(text: str, ref: str) -> str:
    """A workflow with every perfci pin moved to `ref`."""
    text = USES_PIN_RE.sub(lambda m: m.group("head") + ref, text)
    return REF_PIN_RE.sub(lambda m: m.group("head") + ref, text)


def write_own_workflows(root: Path) -> list[Path]:
    """Render perfci's own callers into `root` (after a template changed)."""
    written = []
    for path, text in own_workflows().items():
        write_atomic(root / path, text)
        written.append(root / path)
    return written
