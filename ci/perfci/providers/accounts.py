"""The account sysbench connects with: least privilege, a fresh password per run,
and the password never on a command line (where `ps` and /proc show it to every
user of the host): sysbench reads it from a 0600 file (`--config-file`)."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from perfci.model.connection import Connection
from perfci.model.flavor import ServerIdentity

BENCH_USER = "perfci"


def create_clause(identity: ServerIdentity) -> str:
    """How to set a password sysbench's client library can use: MySQL 8.0's default
    caching_sha2_password wants TLS or an RSA exchange for a first login over TCP."""
    if identity.flavor != "mariadb" and (identity.version.major, identity.version.minor) < (8, 4):
        return "IDENTIFIED WITH mysql_native_password BY %s"
    return "IDENTIFIED BY %s"


def write_auth_file(workdir: Path, password: str) -> Path:
    """sysbench options holding the password: readable by this user only."""
    path = Path(workdir) / "sysbench-auth.cnf"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(f"mysql-password={password}\n")
    return path


def bench_account(cur, identity: ServerIdentity, account_host: str, connect_host: str, port: int, database: str,
                  workdir: Path, user: str = BENCH_USER) -> Connection:
    """(Re)create `user`@`account_host` with a random password and rights on `database`
    only (a snapshot may carry an older account: it is dropped first)."""
    password = secrets.token_urlsafe(18)
    cur.execute("DROP USER IF EXISTS %s@%s", (user, account_host))
    cur.execute(f"CREATE USER %s@%s {create_clause(identity)}", (user, account_host, password))
    cur.execute(f"GRANT ALL ON `{database}`.* TO %s@%s", (user, account_host))
    return Connection(connect_host, port, user, database, str(write_auth_file(workdir, password)))
