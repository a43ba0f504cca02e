"""What quiesce reads from SHOW ENGINE INNODB STATUS, in the servers' own words."""

from __future__ import annotations

from perfci.run.quiesce import checkpoint_age, history_length

# excerpts of the real text: MariaDB 10.11.19 (Debian) and MySQL 8.0.31, LOG and TRANSACTIONS sections
MARIADB = """---
LOG
---
Log sequence number 788610013
Log flushed up to   785098655
Pages flushed up to 444134281
Last checkpoint at  444134281
----------------------
BUFFER POOL AND MEMORY
------------
TRANSACTIONS
------------
Trx id counter 12345
Purge done for trx's n:o < 12340 undo n:o < 0 state: running
History list length 88
"""
MYSQL = """---
LOG
---
Log sequence number          163617947
Log buffer assigned up to    163617947
Log buffer completed up to   163617947
Log written up to            163617947
Log flushed up to            163617947
Added dirty pages up to      163617947
Pages flushed up to          163617720
Last checkpoint at           163617720
History list length 113
"""


def test_the_redo_age_and_the_purge_backlog_are_read_from_both_servers_status():
    assert checkpoint_age(MARIADB) == 788610013 - 444134281 and history_length(MARIADB) == 88
    assert checkpoint_age(MYSQL) == 227 and history_length(MYSQL) == 113
    assert checkpoint_age("no such lines") is None and history_length("") is None
