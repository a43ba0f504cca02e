"""my.cnf: reading a user's config file and `--config NAME=VALUE`, writing ours."""

from __future__ import annotations

import re
from pathlib import Path

from perfci.model.flavor import ServerIdentity, Version
from perfci.providers.capabilities import Requested, normalize, option_names
from perfci.util.errors import BadInput
from perfci.util.text import control_char

# Sections a server reads; others ([client], [mysqldump], ...) are not server options.
SERVER_SECTIONS = {"mysqld", "server", "mariadb", "mariadbd", "mysqld_safe"}
_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")

# Options the harness owns: a scenario or override may not move them.
RESERVED = {
    "datadir", "socket", "port", "bind_address", "pid_file", "log_error", "user",
    "basedir", "tmpdir", "skip_networking", "skip_grant_tables", "innodb_data_home_dir",
    "innodb_log_group_home_dir", "mysqlx", "secure_file_priv", "skip_name_resolve",
}


def loopback_only(identity: ServerIdentity) -> dict:
    """Harness options that keep a server's listeners on the port perfci gave it.
    MySQL (and Percona) 8.0 load the X plugin by default, which listens on *:33060:
    off, so nothing listens beyond 127.0.0.1 and two servers side by side (an A/B)
    cannot collide on that port."""
    if identity.flavor in ("mysql", "percona") and identity.version >= Version(8, 0, 0):
        return {"mysqlx": "OFF"}
    return {}


def modern_innodb_defaults(identity: ServerIdentity) -> dict:
    """What scenarios assume from InnoDB and older servers do not default to (MariaDB
    before 10.2, MySQL before 5.7): the Barracuda file format (ROW_FORMAT=COMPRESSED and
    DYNAMIC exist), large index prefixes, and strict create options — without them
    10.1 made a COMPRESSED table COMPACT with a warning and measured the wrong thing."""
    old = identity.version < (Version(10, 2, 0) if identity.flavor == "mariadb" else Version(5, 7, 0))
    if not old:
        return {}
    return {"innodb_file_format": "Barracuda", "innodb_large_prefix": "ON", "innodb_strict_mode": "ON",
            "innodb_file_per_table": "ON"}


def reserved_option(name: str) -> str | None:
    """The harness-owned option `name` would set, if any: under any of the names the
    server's parser looks it up as (its prefixes stripped, repeatedly), or as the unique
    prefix MariaDB (and MySQL before 8.0) expand an abbreviation to."""
    for candidate in option_names(name):
        if candidate in RESERVED:
            return candidate
        prefix_of = [r for r in RESERVED if r.startswith(candidate)]
        if candidate and prefix_of:
            return prefix_of[0]
    return None


def check_not_reserved(name: str, source: str) -> None:
    owned = reserved_option(name)
    if owned:
        via = "" if normalize(name) == owned else f" (it sets {owned})"
        raise BadInput(f"{source}: option {name!r}{via} is set by the harness and cannot be changed; "
                       f"reserved: {', '.join(sorted(RESERVED))}")


def parse_override(text: str) -> Requested:
    """`NAME=VALUE` (or a bare `NAME` for a flag) from the command line."""
    name, sep, value = text.partition("=")
    name = name.strip()
    if not _NAME_RE.match(name):
        raise BadInput(f"--config {text!r}: expected NAME=VALUE with a server option name, e.g. "
                       "--config innodb_flush_log_at_trx_commit=1")
    found = control_char(value, one_line=True)
    if found:
        raise BadInput(f"--config {name}: control character {found} not allowed in a value "
                       "(a server option is one my.cnf line)")
    check_not_reserved(name, f"--config {text}")
    return Requested(name, value.strip() if sep else None, "override")


# What an override read back from a results branch (a reproduce string: data, not a
# reviewed file) may set: server variables that tune how the server performs. Never a
# path, a plugin, a file the server reads or writes at start, an account or TLS.
TRUSTED_FAMILIES = re.compile(
    r"^(innodb|aria|myisam|key_cache|query_cache|thread|thread_pool|table|optimizer|join|sort|read|tmp|max|binlog"
    r"|sync|performance_schema|temptable|histogram|transaction)_"
    r"|^(key_buffer_size|log_bin|log_slave_updates|log_replica_updates|tx_isolation|character_set_server"
    r"|collation_server|sql_mode|default_storage_engine|gtid_mode|enforce_gtid_consistency"
    r"|eq_range_index_dive_limit|use_stat_tables|big_tables|concurrent_insert|open_files_limit|back_log"
    r"|lock_wait_timeout|stored_program_cache|net_buffer_length|bulk_insert_buffer_size|autocommit"
    r"|host_cache_size|performance_schema|large_pages|flush_time|range_alloc_block_size"
    r"|query_alloc_block_size|query_prealloc_size)$")
UNTRUSTED_WORDS = re.compile(r"(dir|directory|file|filename|path|_index|socket)$|plugin|(^|_)init_|^secure_|^ssl_"
                             r"|^tls_|keyring|audit|password|user|_key$|_cert$|_ca$")
TRUSTED_VALUE = re.compile(r"^[A-Za-z0-9_.,=:+-]*$")  # numbers, sizes, words, optimizer_switch lists; no '/'


def parse_trusted_override(text: str, source: str) -> Requested:
    """`--config NAME=VALUE` from a reproduce string that a results branch or a result
    file gave (confirm's reference and tonight's run): only a performance variable of
    the allowlist, with a plain value; anything else is refused by name (BadInput)."""
    requested = parse_override(text)
    base = option_names(requested.name)[-1]  # what the server sets, its prefixes stripped
    value = str(requested.value or "")
    if not TRUSTED_FAMILIES.search(base) or UNTRUSTED_WORDS.search(base):
        raise BadInput(f"{source}: --config {requested.name} is refused: a reproduce string read from results may set "
                       "only performance variables (innodb_*, buffer and cache sizes, sync_binlog, ...), never "
                       "paths, plugins, init files, accounts or TLS")
    if not TRUSTED_VALUE.match(value):
        raise BadInput(f"{source}: --config {requested.name}={value!r} is refused: a value from results may hold "
                       "letters, digits and _ . , = : + - only (no path)")
    return requested


def parse_config_file(path: Path) -> list[Requested]:
    """Server options from a my.cnf-style file ([mysqld] and friends)."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise BadInput(f"--config-file {path}: cannot read: {exc.strerror}") from None
    section = None
    out: list[Requested] = []
    for lineno, raw in enumerate(text.split("\n"), 1):
        found = control_char(raw.rstrip("\r"))  # splitlines() would also split at \x0b, \x1c..\x1e
        if found:
            raise BadInput(f"{path}:{lineno}: control character {found} not allowed")
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("!"):
            raise BadInput(f"{path}:{lineno}: {line.split()[0]} is not supported; put the options in this file")
        m = re.match(r"^\[([^\]]+)\]$", line)
        if m:
            section = m.group(1).strip().lower()
            continue
        if section is None:
            raise BadInput(f"{path}:{lineno}: option outside a section; put it under [mysqld]")
        if section not in SERVER_SECTIONS:
            continue
        name, sep, raw = line.partition("=")
        name = name.strip()
        value = raw.split(" #")[0].strip().strip("'\"") if sep else None
        if not _NAME_RE.match(name):
            raise BadInput(f"{path}:{lineno}: {name!r} is not an option name")
        check_not_reserved(name, f"{path}:{lineno}")
        out.append(Requested(name, value, "override"))
    return out


def render_value(value) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "ON" if value else "OFF"
    return str(value)


def render(harness: dict, options: dict) -> str:
    """The [mysqld] section: harness-owned settings first, then the planned options."""
    lines = ["# written by perfci; harness-owned settings first", "[mysqld]"]
    for block in (harness, options):
        for name, value in block.items():
            text = render_value(value)
            # last line of defence: every input path refuses these with a better message
            if control_char(name, one_line=True) or (text is not None and control_char(text, one_line=True)):
                raise BadInput(f"server option {name!r}: control characters are not allowed in my.cnf")
            lines.append(name if text is None else f"{name} = {text}")
        lines.append("")
    return "\n".join(lines)
