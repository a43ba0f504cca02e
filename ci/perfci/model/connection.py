"""How a client reaches a benchmark server: what providers hand out and sysbench and
perfci's own SQL connect with."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Connection:
    host: str
    port: int
    user: str
    database: str
    auth_file: str = ""   # sysbench --config-file holding mysql-password (never on the command line)
    socket: str = ""      # a unix socket, instead of host and port (a sandboxed server's loopback is its own)
