"""Statement digests and wait events from performance_schema, for the explain pass only.

performance_schema itself is a startup option (on by default in MySQL 5.7+/8.0, off in
MariaDB): perfci never turns it on for a verdict. When it is on, the explain pass
enables the statement and wait instruments and their consumers (they cost time: the
verdict's bursts are all done by then, and the servers are stopped after the pass, so
nothing is restored), empties the summaries before each burst and reads them after:
the digests of the benchmark's schema, the waits of the benchmark's account."""

from __future__ import annotations

from perfci.model.explain import DigestRow

DATABASE = "sbtest"
TEXT_CHARS = 160

ENABLE = [
    "UPDATE performance_schema.setup_instruments SET ENABLED = 'YES', TIMED = 'YES' "
    "WHERE NAME LIKE 'wait/%' OR NAME LIKE 'statement/%'",
    "UPDATE performance_schema.setup_consumers SET ENABLED = 'YES' "
    "WHERE NAME IN ('global_instrumentation', 'thread_instrumentation', 'statements_digest')",
]
RESET = ["TRUNCATE TABLE performance_schema.events_statements_summary_by_digest",
         "TRUNCATE TABLE performance_schema.events_waits_summary_by_user_by_event_name"]


def enabled(cur) -> bool:
    cur.execute("SELECT @@global.performance_schema")
    row = cur.fetchone()
    return bool(row and int(row[0]))


def enable_instruments(cur) -> None:
    for statement in ENABLE:
        cur.execute(statement)


def reset(cur) -> None:
    for statement in RESET:
        cur.execute(statement)


def read_digests(cur) -> list[DigestRow]:
    """The benchmark's statements since the last reset, one row per digest."""
    cur.execute("SELECT DIGEST, DIGEST_TEXT, COUNT_STAR, SUM_TIMER_WAIT, SUM_ROWS_EXAMINED, SUM_ROWS_SENT, "
                "SUM_CREATED_TMP_TABLES, SUM_CREATED_TMP_DISK_TABLES, SUM_SORT_MERGE_PASSES, SUM_NO_INDEX_USED "
                "FROM performance_schema.events_statements_summary_by_digest "
                "WHERE SCHEMA_NAME = %s AND COUNT_STAR > 0", (DATABASE,))
    return [DigestRow(digest=str(r[0] or ""), text=str(r[1] or "")[:TEXT_CHARS], calls=int(r[2]),
                      latency_ps=int(r[3] or 0), rows_examined=int(r[4] or 0), rows_sent=int(r[5] or 0),
                      tmp_tables=int(r[6] or 0), tmp_disk_tables=int(r[7] or 0), sort_passes=int(r[8] or 0),
                      no_index_used=int(r[9] or 0))
            for r in cur.fetchall()]


def read_waits(cur, user: str) -> dict[str, int]:
    """What the benchmark's connections (its account, `user`) waited for since the last
    reset: event -> picoseconds (idle excluded). The server's background threads are not
    in it: their timers and condition waits are idle time, not the statements' cost."""
    cur.execute("SELECT EVENT_NAME, SUM_TIMER_WAIT FROM performance_schema.events_waits_summary_by_user_by_event_name "
                "WHERE USER = %s AND SUM_TIMER_WAIT > 0 AND EVENT_NAME <> 'idle'", (user,))
    return {str(name): int(ps) for name, ps in cur.fetchall()}
