"""The perfci loader: sysbench-shaped tables created in their final row format,
filled with a seeded payload in batched multi-row INSERTs.

Why not `sysbench prepare`: it creates tables in the server's default row format,
so a compressed layout would need a rebuild, and seed 001/002 measure the load
*into* the format. And its payload is random digit groups; seed 003 shows that
what compression achieves depends on data that compresses like real text.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator

from perfci.model.scenario import Dataset

BATCH_ROWS = 1000

# Common English words, most frequent first; drawn with Zipf-like weights so rows
# repeat words the way prose does (zlib finds matches across rows of a page).
# Changing WORDS, Payload or the batch layout changes loaded data: bump snapshots.DATA_FORMAT.
WORDS = """
the of and to in a is that for it as was with be by on not he this are or his from
at which but have an they you were her she there one all we their has been if more
when will would who so no out up into do than its time only new some could these two
may first then other any about over such our after most also made many did before
must through back years where much your way well down should because each just those
people how too little state good very make world still own see men work long get here
between both life being under never day same another know while last might us great
old year off come since against go came right used take three states himself few house
use during without again place around however home small found thought went say part
once general high upon school every united left number course war until always away
something fact though water less public put think almost hand enough far took head yet
government system better set told nothing night end why called didn find going look
asked later point knew city next program business give group toward young days let room
president side social present given several order national possible rather second face
per among form important often things looked early white case john become large big need
four within felt children along saw best church ever least power development light thing
seemed family interest want members mind country area others although turned done open
god service certain kind problem began different door thus help sense means whole matter
perhaps itself york times human law line above name example action company hands local
show whether five history gave today either act feet across taken past quite anything
having seen death experience body word half really week field car words already themselves
information tell together college shall money period held keep sure probably free seems
real behind cannot miss political air question making office brought whose special major
heard problems ago became federal moment study available known result street economic boy
""".split()
_WEIGHTS = [1.0 / (rank + 1) for rank in range(len(WORDS))]


class Payload:
    """Seeded values for one table: k, c (<= 120 chars) and pad (<= 60 chars)."""

    def __init__(self, kind: str, seed: int, table_size: int):
        self.rng = random.Random(seed)
        self.kind = kind
        self.table_size = table_size
        self._cum = list(_cumulative(_WEIGHTS))

    def _digits(self, groups: int) -> str:  # sysbench's '###########-###########...'
        return "-".join(f"{self.rng.randrange(10**11):011d}" for _ in range(groups))

    def _text(self, limit: int) -> str:
        words = self.rng.choices(WORDS, cum_weights=self._cum, k=limit // 3)
        text = " ".join(words)
        return text[:limit].rsplit(" ", 1)[0] if len(text) > limit else text

    def row(self, row_id: int) -> tuple:
        k = self.rng.randint(1, self.table_size)
        if self.kind == "text":
            return (row_id, k, self._text(120), self._text(60))
        return (row_id, k, self._digits(10), self._digits(5))


def _cumulative(weights: list[float]) -> Iterator[float]:
    total = 0.0
    for w in weights:
        total += w
        yield total


def create_table_sql(table: str, ds: Dataset) -> str:
    """sysbench's table definition (oltp_common.lua), PK only, in the dataset's format."""
    options = ["ENGINE=InnoDB"]
    if ds.row_format:
        options.append(f"ROW_FORMAT={ds.row_format}")
    if ds.key_block_size:
        options.append(f"KEY_BLOCK_SIZE={ds.key_block_size}")
    return (f"CREATE TABLE {table} (id INTEGER NOT NULL AUTO_INCREMENT, k INTEGER DEFAULT '0' NOT NULL, "
            f"c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL, PRIMARY KEY (id)) "
            + " ".join(options))


def load_table(conn, table: str, ds: Dataset, seed: int, on_progress: Callable[[int], None]) -> int:
    """Create `table` and insert ds.rows rows in id order; returns rows inserted."""
    payload = Payload(ds.payload, seed, ds.rows)
    with conn.cursor() as cur:
        cur.execute(f"DROP TABLE IF EXISTS {table}")
        cur.execute(create_table_sql(table, ds))
        sql = f"INSERT INTO {table} (id, k, c, pad) VALUES (%s, %s, %s, %s)"
        for start in range(1, ds.rows + 1, BATCH_ROWS):
            end = min(start + BATCH_ROWS, ds.rows + 1)
            cur.executemany(sql, [payload.row(i) for i in range(start, end)])  # one multi-row INSERT
            on_progress(end - 1)
    return ds.rows
