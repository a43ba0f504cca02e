"""Finding 1 of the third hardening round: the servers' option parser strips `loose-`,
`skip-`, `enable-`, `disable-` and `maximum-` again and again, in any order, until a
name matches; perfci's one normaliser (providers/capabilities.py option_names) does the
same, and every check (reserved options, known options, trusted overrides) uses it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from perfci.providers.capabilities import option_names
from perfci.providers.mycnf import RESERVED, reserved_option

from conftest import run_perfci, write_tiny

HOSTILE = [
    ("loose-loose-skip-grant-tables", None, "skip_grant_tables", "TRUE"),
    ("loose-skip-loose-bind-address", "0.0.0.0", "bind_address", "0.0.0.0"),
    ("skip-loose-skip-name-resolve", None, "skip_name_resolve", "TRUE"),
    ("enable-loose-maximum-loose-port", "5", "port", "5"),
]


def test_every_name_the_parser_may_try_is_listed_in_its_order():
    assert option_names("loose-skip-loose-bind-address") == [
        "loose_skip_loose_bind_address", "skip_loose_bind_address", "loose_bind_address", "bind_address"]
    assert option_names("innodb_buffer_pool_size") == ["innodb_buffer_pool_size"]
    assert option_names("skip-") == ["skip_"]  # nothing left after the prefix: the name itself


@pytest.mark.parametrize("name, value, owned, shown", HOSTILE)
def test_a_chain_of_prefixes_is_refused_before_anything_starts(tmp_path, name, value, owned, shown):
    """`perfci run --config` with the chain: exit 2, one line, no server started (no
    lock taken, no datadir: the check runs on the command line alone)."""
    assert reserved_option(name) == owned
    config = f"{name}={value or 1}"
    proc = run_perfci("run", "rebuild-after-delete", "--profile", "smoke", "--server", "local", "--config", config,
                      "--out", str(tmp_path / "results"), env={"TMPDIR": str(tmp_path)}, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert f"it sets {owned}" in proc.stderr and proc.stderr.count("\n") == 1
    assert not (tmp_path / "results").exists() and not list(tmp_path.glob("perfci-*"))


def server_settings(binary: str, *args: str) -> dict[str, str]:
    """The variables a real server would start with, as its own --verbose --help prints them."""
    proc = subprocess.run([binary, "--no-defaults", "--user=root", *args, "--verbose", "--help"],
                          capture_output=True, text=True, timeout=60)
    table = proc.stdout.split("Variables (--variable-name=value)", 1)[-1]
    found = {}
    for line in table.splitlines():
        m = re.match(r"^([a-z0-9][a-z0-9_-]*)\s{2,}(\S.*)$", line)
        if m:
            found[m.group(1).replace("-", "_")] = m.group(2).strip()
    return found


@pytest.mark.e2e
def test_the_normaliser_agrees_with_the_real_servers_parser(real_server_tools):
    """Each chain, given to the distribution's mariadbd: the harness option it really sets
    is the one perfci names (the test fails if the server took the chain for something
    else, or perfci missed it)."""
    binary = shutil.which("mariadbd", path=os.environ.get("PATH", "") + ":/usr/sbin")
    if binary is None:
        pytest.skip("needs the distribution's mariadbd (apt-get install mariadb-server; .ci/run does)")
    default = server_settings(binary)
    for name, value, owned, shown in HOSTILE:
        changed = {k: v for k, v in server_settings(binary, f"--{name}" + (f"={value}" if value else "")).items()
                   if default.get(k) != v and k in RESERVED}
        assert changed == {owned: shown}, name
        assert reserved_option(name) == owned


def test_a_bare_name_of_an_option_that_needs_a_value_is_exit_2_before_anything_starts(real_server_tools, tmp_path):
    """The distribution's mariadbd says which options need a value (its --help); a bare
    `--config innodb_flush_log_at_trx_commit` is a forgotten value: one line, exit 2,
    no server started (it used to reach the server start and fail there, exit 3)."""
    scenario = write_tiny(tmp_path)
    for name in ("innodb_flush_log_at_trx_commit", "innodb_buffer_pool_size"):
        proc = run_perfci("run", str(scenario), "--config", name, "--out", str(tmp_path / "out"),
                          "--workdir", str(tmp_path / "work"))
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
        assert f"'{name}' needs a value" in proc.stderr and f"give {name}=VALUE" in proc.stderr
        assert not (tmp_path / "out").exists() and not list((tmp_path / "work").glob("*"))
