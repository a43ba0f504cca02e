"""Which server options exist for a flavor/version, and how to map the rest.

Two layers, applied in order to every requested option:
1. The capability table below: options we know to be renamed, resized or absent
   per flavor/version (e.g. `innodb_redo_log_capacity` exists only in MySQL
   >= 8.0.30; MariaDB sizes its single redo log with `innodb_log_file_size`).
2. The binary itself: the options `mysqld --verbose --help` lists. A scenario
   option the binary does not know is skipped with a note (scenarios are shared
   across flavors); a user's `--config` option it does not know is an error.
Every map and skip is recorded in the result: never silent.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from perfci.model.flavor import ServerIdentity, Version
from perfci.model.result import ConfigValue

Condition = Callable[[ServerIdentity], bool]


def _mysqlish(s: ServerIdentity) -> bool:
    return s.flavor in ("mysql", "percona")


def _mysql_at_least(v: str) -> Condition:
    floor = Version.parse(v)
    return lambda s: _mysqlish(s) and s.version >= floor


def _mariadb_at_least(v: str) -> Condition:
    floor = Version.parse(v)
    return lambda s: s.flavor == "mariadb" and s.version >= floor


def _mariadb(s: ServerIdentity) -> bool:
    return s.flavor == "mariadb"


def _percona(s: ServerIdentity) -> bool:
    return s.flavor == "percona"


def _not_mysql(s: ServerIdentity) -> bool:
    return s.flavor != "mysql"


def _always(_s: ServerIdentity) -> bool:
    return True


_SIZE_RE = re.compile(r"^\s*(\d+)\s*([KMGT]?)B?\s*$", re.IGNORECASE)


def parse_size(value) -> int:
    """'2G' -> 2147483648; plain integers pass through."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    m = _SIZE_RE.match(str(value))
    if not m:
        raise ValueError(f"not a size: {value!r} (use a number with optional K, M, G or T)")
    scale = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}[m.group(2).upper()]
    return int(m.group(1)) * scale


@dataclass(frozen=True)
class Keep:
    pass


@dataclass(frozen=True)
class MapTo:
    name: str
    convert: Callable[[ConfigValue], ConfigValue] = lambda v: v
    why: str = ""


@dataclass(frozen=True)
class Skip:
    why: str


# option -> rules, first matching condition wins; no match means keep.
CAPABILITIES: dict[str, list[tuple[Condition, object]]] = {
    "innodb_redo_log_capacity": [
        (_mysql_at_least("8.0.30"), Keep()),
        (_mariadb, MapTo("innodb_log_file_size", why="MariaDB has one redo log file; its size is the capacity")),
        (_always, MapTo("innodb_log_file_size", lambda v: parse_size(v) // 2,
                        why="MySQL < 8.0.30: capacity split over innodb_log_files_in_group=2 files")),
    ],
    "innodb_use_fdatasync": [
        (_mysql_at_least("8.0.26"), Keep()),
        (_always, Skip("exists only in MySQL/Percona >= 8.0.26")),
    ],
    "default_authentication_plugin": [
        (_mysql_at_least("8.4.0"), Skip("removed in MySQL 8.4")),
        (_mysqlish, Keep()),
        (_always, Skip("MySQL-only option")),
    ],
    "skip_log_bin": [
        (_mariadb, Skip("MariaDB writes no binary log unless log_bin is set")),
    ],
    "innodb_sync_array_size": [
        (_mariadb_at_least("10.6.0"), Skip("removed in MariaDB 10.6 (new InnoDB locking)")),
    ],
    "innodb_change_buffering": [
        (_mariadb_at_least("11.0.0"), Skip("MariaDB 11.0 removed the change buffer")),
    ],
    # Percona-only (and Percona + MariaDB) options for what the seeds look at: seed 001's
    # compressed-table contention was found on Percona Server, seed 004 ran on Percona
    # 8.0.36. A scenario may ask for them; elsewhere they are skipped with the reason.
    "userstat": [  # per-table / per-index statistics (which index a compressed table thrashes)
        (_not_mysql, Keep()),
        (_always, Skip("Percona Server / MariaDB only (User Statistics)")),
    ],
    "thread_pool_size": [
        (_not_mysql, Keep()),
        (_always, Skip("Percona Server / MariaDB only (MySQL's thread pool is Enterprise-only)")),
    ],
    "innodb_compressed_columns_zip_level": [  # column compression, Percona's alternative to COMPRESSED pages
        (_percona, Keep()),
        (_always, Skip("Percona Server only (compressed columns)")),
    ],
}


def normalize(name: str) -> str:
    """my.cnf treats '-' and '_' alike; compare names in one form."""
    return name.strip().lower().replace("-", "_")


# The prefixes the servers' option parser (my_getopt.cc, handle_options) strips when a
# name is not an option: `loose-` (ignore if unknown), `skip-`/`disable-`/`enable-`
# (booleans), `maximum-` (the bound of SET). After each strip it starts over, so any
# number of them, in any order, comes off until a name matches.
OPTION_PREFIXES = ("loose_", "skip_", "disable_", "enable_", "maximum_")


def option_names(name: str) -> list[str]:
    """Every name the server may look `name` up as, in the order it tries them: the
    name itself, then each name left after stripping one more prefix. The one
    normaliser every check uses (reserved options, known options, trusted overrides)."""
    found = [normalize(name)]
    frontier = [found[0]]
    while frontier:
        current = frontier.pop()
        for prefix in OPTION_PREFIXES:
            rest = current[len(prefix):]
            if current.startswith(prefix) and rest and rest not in found:
                found.append(rest)
                frontier.append(rest)
    return found


@dataclass
class ConfigPlan:
    """The options to write to my.cnf, and what happened to the others."""

    options: dict[str, ConfigValue] = field(default_factory=dict)
    notes: list[dict] = field(default_factory=list)


@dataclass(frozen=True)
class Requested:
    name: str
    value: ConfigValue
    origin: str  # "scenario" (scenario + profile) or "override" (--config / --config-file)


class UnknownOption(Exception):
    pass


class KnownOptions(frozenset[str]):
    """The options a server binary accepts (normalized names), and which of them its
    `--verbose --help` says need a value (`--name=#`, not `--name[=#]` or a flag)."""

    needs_value: frozenset[str]

    def __new__(cls, names=(), needs_value=()) -> KnownOptions:
        known = super().__new__(cls, names)
        known.needs_value = frozenset(needs_value)
        return known


def plan_config(requested: list[Requested], server: ServerIdentity, known: frozenset[str] | set[str] | None) -> ConfigPlan:
    """Apply the capability table, then the binary's option list.

    `known` is the set of normalized option names the binary accepts (None: do not
    check). Raises UnknownOption for an override the server does not know."""
    plan = ConfigPlan()
    for req in requested:
        name = normalize(req.name)
        value = req.value
        action = next((a for cond, a in CAPABILITIES.get(name, []) if cond(server)), Keep())
        if isinstance(action, Skip):
            plan.options.pop(name, None)
            plan.notes.append({"option": name, "value": value, "origin": req.origin,
                               "action": "skipped", "reason": f"{action.why} (server: {server.label})"})
            continue
        if isinstance(action, MapTo):
            new_value = action.convert(value)
            plan.notes.append({"option": name, "value": value, "origin": req.origin, "action": "mapped",
                               "to": {action.name: new_value}, "reason": action.why})
            name, value = action.name, new_value
        if known is not None and not is_known(name, known):
            if req.origin == "override":
                raise UnknownOption(f"server option {req.name!r} is not known to {server.label}")
            plan.notes.append({"option": name, "value": value, "origin": req.origin, "action": "skipped",
                               "reason": f"not an option of {server.label} (checked with --verbose --help)"})
            continue
        if value is None and req.origin == "override" and isinstance(known, KnownOptions) and name in known.needs_value:
            raise UnknownOption(f"server option {req.name!r} needs a value ({server.label}'s --help: "
                                f"--{name.replace('_', '-')}=...): give {req.name}=VALUE")
        if name in plan.options and plan.options[name] != value and req.origin == "override":
            plan.notes.append({"option": name, "value": value, "origin": req.origin, "action": "overridden",
                               "reason": f"--config replaces the scenario's {plan.options[name]!r}"})
        plan.options[name] = value
    return plan


def is_known(name: str, known: frozenset[str] | set[str]) -> bool:
    """Whether the server would take `name` as one of its options. An unknown `loose-`
    name is not: the server would ignore it, and a measurement that sets nothing is
    better said (skipped, or refused as an override) than written to my.cnf."""
    return any(candidate in known for candidate in option_names(name))


# `--name=#` / `--name=name`: a value is required; `--name[=#]`: a number is optional to the
# parser, but a bare name sets no number anyone meant (a forgotten value); `--name[=name]`
# (log-bin) and flags: a bare name is meaningful
_HELP_OPTION_RE = re.compile(r"^\s{2}(?:-\w,\s+)?--([a-zA-Z0-9][a-zA-Z0-9_-]*)(=|\[=#\])?")
_HELP_VARIABLE_RE = re.compile(r"^([a-z0-9][a-z0-9_-]*)\s{2,}\S")


def parse_help_options(help_text: str) -> KnownOptions:
    """Option names from `mysqld --verbose --help` (the option list and the
    variables table that follows it), and those a bare name would leave without the
    value they need (`--innodb-buffer-pool-size=#`: the server refuses it and disables
    InnoDB; `--innodb-flush-log-at-trx-commit[=#]`: a forgotten number)."""
    names: set[str] = set()
    needs_value: set[str] = set()
    in_variables = False
    for line in help_text.splitlines():
        if line.startswith("Variables (--variable-name=value)"):
            in_variables = True
            continue
        m = (_HELP_VARIABLE_RE if in_variables else _HELP_OPTION_RE).match(line)
        if m:
            names.add(normalize(m.group(1)))
            if not in_variables and m.group(2):
                needs_value.add(normalize(m.group(1)))
    return KnownOptions(names, needs_value)


def install_db_options(s: ServerIdentity) -> list[str]:
    """mariadb-install-db's options for this version: root by the unix user's name
    and no `test` database where the script knows how (10.4+ / 10.5+); older scripts
    reject them. What they create instead (anonymous users, the test database) is
    dropped in bootstrap mode before the server first listens (providers/local.py)."""
    options = []
    if s.version < Version.parse("10.2.0"):
        options.append("--force")  # 10.1's script stops when resolveip cannot look the host name up
    if s.version >= Version.parse("10.4.0"):
        options.append("--auth-root-authentication-method=normal")
    if s.version >= Version.parse("10.5.0"):
        options.append("--skip-test-db")
    return options
