"""The `dsn` provider: an existing server that perfci neither starts nor stops.

What a scenario asks of the server config is applied with SET GLOBAL where the
variable is dynamic and restored afterwards; an option that would need a restart
is refused before any work (we cannot restart someone else's server). perfci
creates its own database and drops only that; it refuses to touch one it did not
create. Every change is listed in the result (`server.dsn_actions`).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from pathlib import Path

import pymysql

from perfci.model.connection import Connection
from perfci.model.flavor import ServerIdentity, identify
from perfci.providers.accounts import bench_account, write_auth_file
from perfci.providers.capabilities import normalize, parse_size
from perfci.providers.spec import ServerSpec
from perfci.util.errors import BadInput, InfraFailure

PASSWORD_ENV = "PERFCI_DSN_PASSWORD"
DATABASE = "sbtest"
# Settings perfci starts servers with that an existing server simply has.
HARNESS_OWNED = {"innodb_monitor_enable"}
# Upper bounds the OS may cap (a started server adjusts them too): noted, not refused.
BEST_EFFORT = {"open_files_limit"}


def _same(current, wanted) -> bool:
    if current is None:
        return False
    a, b = str(current).strip().lower(), str(wanted).strip().lower()
    aliases = {"on": "1", "off": "0", "true": "1", "false": "0"}
    if aliases.get(a, a) == aliases.get(b, b):
        return True
    try:  # sizes: 512M vs 536870912
        return parse_size(current) == parse_size(wanted)
    except ValueError:
        return False


class DsnServer:
    kind = "dsn"
    supports_snapshots = False  # not our datadir

    def __init__(self, spec: ServerSpec, workdir):
        self.spec = spec
        self.workdir = Path(workdir)
        self.port = spec.port
        self.host = spec.host
        self.password = os.environ.get(PASSWORD_ENV, "")
        self.pid = None  # another host's process (or not ours to watch)
        self.actions: list[dict] = []
        self._restore: dict[str, object] = {}
        self._created_db = False
        self._bench_account: tuple[str, str] | None = None
        try:
            with self.connect() as conn, conn.cursor() as cur:
                cur.execute("SELECT VERSION(), @@version_comment")
                row = cur.fetchone()
                assert row is not None
                version, comment = row
                cur.execute("SHOW GLOBAL VARIABLES")
                self.variables = {normalize(k): v for k, v in cur.fetchall()}
        except pymysql.err.MySQLError as exc:
            raise InfraFailure(f"--server {spec.text!r}: cannot connect: {exc.args[-1] if exc.args else exc}") from None
        self.identity: ServerIdentity = identify(version, comment)

    @property
    def datadir(self):
        """Not ours to copy (supports_snapshots is False): a path that is never used."""
        return self.workdir / "data"

    @property
    def where(self) -> str:
        return f"{self.spec.user}@{self.host}:{self.port}"

    def known_options(self) -> set[str]:
        return set(self.variables)

    def describe(self) -> dict:
        return {"provider": self.kind, "dsn": self.spec.text, "dsn_actions": self.actions}

    def connect(self, database: str | None = None, **kw) -> pymysql.connections.Connection:
        return pymysql.connect(host=self.host, port=self.port, user=self.spec.user, password=self.password,
                               database=database, autocommit=True, connect_timeout=5, **kw)

    def bench_connection(self, cur, database: str):
        """A temporary account for sysbench (rights on our database only, a random
        password in a 0600 file), dropped in stop(); a user who may not create accounts
        lends its own, its password likewise kept off the command line."""
        cur.execute("SELECT SUBSTRING_INDEX(USER(), '@', -1)")  # where the server sees us come from
        row = cur.fetchone()
        client_host = str(row[0]) if row else "%"
        user = f"perfci_{secrets.token_hex(4)}"
        try:
            conn = bench_account(cur, self.identity, client_host, self.host, self.port, database, self.workdir, user)
        except pymysql.err.MySQLError as exc:
            # CREATE USER may have worked where GRANT did not (no grant option): leave no account behind
            with contextlib.suppress(pymysql.err.MySQLError):
                cur.execute("DROP USER IF EXISTS %s@%s", (user, client_host))
            self.actions.append({"action": "own_account_for_sysbench", "user": self.spec.user,
                                 "reason": f"cannot create an account: {exc.args[-1] if exc.args else exc}"})
            return Connection(self.host, self.port, self.spec.user, database,
                              str(write_auth_file(self.workdir, self.password)))
        self._bench_account = (user, client_host)
        self.actions.append({"action": "created_account", "user": user, "host": client_host,
                             "grants": f"ALL ON {database}.*"})
        return conn

    # -------------------------------------------------------- lifecycle

    def start(self, options: dict, restore_from=None) -> None:
        """Apply the config with SET GLOBAL and create our database; refuse (and undo)
        if an option would need a restart, or the database exists already."""
        if restore_from is not None:
            raise AssertionError("dsn servers have no snapshots")
        with self.connect() as conn, conn.cursor() as cur:
            cur.execute("SELECT 1 FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = %s", (DATABASE,))
            if cur.fetchone():
                raise BadInput(f"--server {self.spec.text!r}: database {DATABASE!r} exists and perfci did not create it; "
                               "it drops only what it created - drop or rename it first")
            refused = []
            for name, value in options.items():
                key = normalize(name)
                if key in HARNESS_OWNED or value is None or _same(self.variables.get(key), value):
                    continue
                if key in BEST_EFFORT:
                    self.actions.append({"action": "not_applied", "variable": key, "value": value,
                                         "kept": self.variables.get(key), "reason": "an OS-capped limit"})
                    continue
                try:
                    cur.execute(f"SET GLOBAL {key} = %s", (_sql_value(value),))
                except pymysql.err.MySQLError as exc:
                    refused.append(f"{key}={value} (the server has {self.variables.get(key)!r}: {exc.args[-1]})")
                    continue
                self._restore[key] = self.variables[key]
                self.actions.append({"action": "set_global", "variable": key, "value": value,
                                     "previous": self.variables[key]})
            if refused:
                self.stop()
                raise BadInput(f"--server {self.spec.text!r}: needs a restart to apply: {'; '.join(refused)}. "
                               "Set these on the server, or use a server perfci starts (local, docker, tarball)")
            cur.execute(f"CREATE DATABASE {DATABASE}")
            self._created_db = True
            self.actions.append({"action": "created_database", "database": DATABASE})

    def stop(self, slow: bool = False) -> bool:
        """Undo what start did: drop our database, restore changed variables."""
        try:
            with self.connect() as conn, conn.cursor() as cur:
                if self._created_db:
                    cur.execute(f"DROP DATABASE IF EXISTS {DATABASE}")
                    self._created_db = False
                    self.actions.append({"action": "dropped_database", "database": DATABASE})
                if self._bench_account:
                    cur.execute("DROP USER IF EXISTS %s@%s", self._bench_account)
                    self.actions.append({"action": "dropped_account", "user": self._bench_account[0]})
                    self._bench_account = None
                for key, previous in self._restore.items():
                    cur.execute(f"SET GLOBAL {key} = %s", (_sql_value(previous),))
                    self.actions.append({"action": "restored_global", "variable": key, "value": previous})
                self._restore = {}
        except pymysql.err.MySQLError as exc:
            raise InfraFailure(f"--server {self.spec.text!r}: could not undo perfci's changes: {exc}") from None
        return False  # never a snapshot source

    def abandon(self) -> None:
        self.stop()  # not ours to kill: undoing what start did is quick

    def death(self) -> tuple[str, str] | None:
        return None  # someone else's server: its health is not ours to judge

    def cleanup(self, keep_workdir: bool = False) -> None:
        if not keep_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)


def _sql_value(value):
    """SET GLOBAL takes numbers as numbers and ON/OFF as words; sizes as bytes."""
    if isinstance(value, bool):
        return "ON" if value else "OFF"
    if isinstance(value, (int, float)):
        return value
    text = str(value)
    try:
        return parse_size(text)
    except ValueError:
        return text
