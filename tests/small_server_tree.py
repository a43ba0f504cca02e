"""The small "server source" the build tests use: a git repository whose cmake build
(scripts/build-server: configure, build, install, cached per commit) is the
distribution's MariaDB run with the options the source names (`server-options`). No
compiler is needed: its cmake project is `NONE`. Used by the commit bisect and the
nightly's own bisect (tests/e2e/test_e2e_bisect_commits.py) and the server-code PR check
under act (tests/e2e/test_e2e_act.py)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

CMAKE_LISTS = """\
cmake_minimum_required(VERSION 3.16)
project(tiny_server NONE)
file(READ "${CMAKE_SOURCE_DIR}/server-options" OPTIONS)
string(STRIP "${OPTIONS}" OPTIONS)
configure_file(mariadbd.in mariadbd @ONLY)
install(PROGRAMS "${CMAKE_BINARY_DIR}/mariadbd" DESTINATION sbin)  # where its install-db looks
install(CODE "file(MAKE_DIRECTORY \\"\\${CMAKE_INSTALL_PREFIX}/bin\\")")
foreach(link IN LISTS LINKS)
  string(REPLACE "=" ";" pair "${link}")
  list(GET pair 0 name)
  list(GET pair 1 target)
  install(CODE "file(CREATE_LINK \\"${target}\\" \\"\\${CMAKE_INSTALL_PREFIX}/${name}\\" SYMBOLIC)")
endforeach()
"""


def real_server() -> Path:
    return Path(shutil.which("mariadbd", path="/usr/sbin:/usr/bin") or "/usr/sbin/mariadbd")


def basedir_links() -> list[str]:
    """NAME=TARGET links that make a basedir of the distribution's MariaDB around a wrapper."""
    real = real_server()
    links = [f"share={real.parent.parent / 'share'}", f"lib={real.parent.parent / 'lib'}"]
    for program in ("mariadb-install-db", "my_print_defaults", "resolveip", "mariadb"):
        found = shutil.which(program, path="/usr/bin:/usr/sbin")
        if found:
            links.append(f"bin/{program}={found}")
    return links


def server_tree(root: Path) -> Path:
    """The repository at its first commit, "server: as released" (tag `good`), on main."""
    real, links = real_server(), basedir_links()
    repo = root / "server-src"
    repo.mkdir()
    (repo / "CMakeLists.txt").write_text(f'set(LINKS "{";".join(links)}")\n' + CMAKE_LISTS)
    (repo / "mariadbd.in").write_text(f'#!/bin/sh\nexec {real} "$@" @OPTIONS@\n')
    (repo / "server-options").write_text("\n")

    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "server: as released")
    git(repo, "tag", "good")
    return repo


def make_every_commit_durable(repo: Path) -> str:
    """The commit that slows the server: its build runs it with a flush at every commit."""
    (repo / "server-options").write_text("--innodb-flush-log-at-trx-commit=1\n")
    git(repo, "commit", "-q", "-am", "log: flush at every commit")
    return git(repo, "rev-parse", "HEAD")


SLEEPER = "31170917"  # the escaping build's sleeper: `cc1plus 31170917` in /proc/*/cmdline

ESCAPE = """\
#!/bin/sh
# a pull request's build that tries to get out: each attempt says how it went (the build log)
try() { what=$1; shift; if "$@" 2>/dev/null; then echo "escape: $what: done"; else echo "escape: $what: failed"; fi; }
try gitconfig sh -c 'mkdir -p "$1" && printf "[core]\\n\\thooksPath = /x\\n" >> "$1/.gitconfig"' - "@HOME@"
try trusted-cache sh -c 'mkdir -p "$1" && echo poison > "$1/poison"' - "@TRUSTED@"
try cargo-bin sh -c 'mkdir -p "$1/.cargo/bin" && printf "#!/bin/sh\\n" > "$1/.cargo/bin/inferno-flamegraph"' - "@HOME@"
try network python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 3)' @PORT@
try sleeper sh -c 'setsid -f bash -c "exec -a cc1plus sleep @SLEEPER@" </dev/null >/dev/null 2>&1'
"""


def escape_script(home: Path, trusted_cache: Path, port: int) -> str:
    return (ESCAPE.replace("@HOME@", str(home)).replace("@TRUSTED@", str(trusted_cache))
            .replace("@PORT@", str(port)).replace("@SLEEPER@", SLEEPER))


def escaping_server(escape: str, real: str) -> str:
    """A wrapper of a server's program that tries every escape each time it starts (for
    the server: its version, its help, its datadir's initialisation, the server), saying
    how on stderr, then runs `real`."""
    body = "\n".join(line for line in escape.splitlines() if not line.startswith("#"))
    return f'#!/bin/sh\n{{\n{body}\n}} >&2\nexec {real} "$@"'


def plant_escapes(repo: Path, home: Path, trusted_cache: Path, port: int) -> str:
    """A commit whose configure step and whose server, each time it starts, try to write
    the runner user's git config, a trusted cache and ~/.cargo/bin, to reach a listener on
    the host's loopback, and to leave a renamed `setsid` sleeper behind; what the server
    does is unchanged."""
    script = escape_script(home, trusted_cache, port)
    (repo / "escape.sh").write_text(script)
    cmake = repo / "CMakeLists.txt"
    cmake.write_text(cmake.read_text() + 'execute_process(COMMAND sh "${CMAKE_SOURCE_DIR}/escape.sh")\n')
    wrapper = repo / "mariadbd.in"
    real = wrapper.read_text().split("exec ", 1)[1].split(" ", 1)[0]
    wrapper.write_text(escaping_server(script, real) + " @OPTIONS@\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "build: a step of our own")
    return git(repo, "rev-parse", "HEAD")


def sleepers() -> list[str]:
    """Pids whose command line names the escaping build's sleeper."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if SLEEPER.encode() in cmdline.read_bytes():
                found.append(cmdline.parent.name)
        except OSError:
            continue
    return found


def server_source(root: Path) -> tuple[Path, list[str]]:
    """The repository and its three commits, oldest first (tag `good` on the first): the
    middle one makes every commit durable, the last only adds a README."""
    repo = server_tree(root)
    make_every_commit_durable(repo)
    (repo / "README").write_text("the tiny server\n")
    git(repo, "add", "README")
    git(repo, "commit", "-q", "-m", "docs: a README")
    return repo, git(repo, "log", "--reverse", "--format=%H").split()


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=dev", "-c", "user.email=dev@example.invalid",
                           *args], check=True, capture_output=True, text=True).stdout.strip()


def escaping_basedir(root: Path, home: Path, trusted_cache: Path, port: int) -> Path:
    """An installed server (the distribution's MariaDB, as the small tree installs it) whose
    datadir initialisation (its own mariadb-install-db, as a source build installs it) tries
    every escape first; its server binary is the real one (callgrind finds its symbols)."""
    basedir = root / "escaping-server"
    (basedir / "sbin").mkdir(parents=True)
    (basedir / "sbin" / "mariadbd").symlink_to(real_server())
    for link in basedir_links():
        name, target = link.split("=", 1)
        (basedir / name).parent.mkdir(parents=True, exist_ok=True)
        if name == "bin/mariadb-install-db":
            (basedir / name).write_text(escaping_server(escape_script(home, trusted_cache, port), target) + "\n")
            (basedir / name).chmod(0o755)
        else:
            (basedir / name).symlink_to(target)
    return basedir
