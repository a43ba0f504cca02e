#!/usr/bin/env python3
"""Put a line of twelve commits on top of the Debian MariaDB 10.11.18 tree that
scripts/debian-source-repo made, one of which (the sixth) makes InnoDB's row conversion
slower (it recomputes each row's field offsets, which its caller had computed): written
for the build-from-source finding, to show that `perfci bisect` over build: specs names
it by itself. The other eleven change comments, help texts and docs (real edits that
rebuild the files they touch, not the hot path).

    plant-line.py REPO   # creates branch perfci/planted-line from the current HEAD

A second line (2026-11-28, issue #54, counted work): the same eleven edits around a
commit that costs ~1 % of the full scan's instructions (it records the last converted
record's heap number and delete mark in two globals, per row), the eighth of twelve:

    plant-line.py REPO --one-percent   # creates branch perfci/planted-1pct from the current HEAD
"""
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(sys.argv[1])
ONE_PERCENT = sys.argv[2:] == ["--one-percent"]
PLANTED = "InnoDB: row_sel_store_mysql_rec() computes the record's offsets itself"
PLANTED_1PCT = "InnoDB: remember the last record a scan converted, for the crash report"

# where both planted commits add code: row_sel_store_mysql_rec() before its loop over the columns
BLOB_HEAP_FREED = ("\tif (UNIV_LIKELY_NULL(prebuilt->blob_heap)) {\n"
                   "\t\trow_mysql_prebuilt_free_blob_heap(prebuilt);\n\t}\n\n")
ROW_LOOP_HEAD = ("\tfor (ulint i = 0; i < prebuilt->n_template; i++) {\n"
                 "\t\tconst mysql_row_templ_t*templ = &prebuilt->mysql_template[i];\n\n"
                 "\t\tif (templ->is_virtual && dict_index_is_clust(index)) {")

# (subject, file, old text, new text): each old text occurs exactly once in its file;
# old None appends new; old a list of (old, new) pairs makes them all in one commit
EDITS = [
    ("InnoDB: say which latch the record must hold in row_sel_store_mysql_rec()",
     "storage/innobase/row/row0sel.cc",
     "\t\t\t\tmust be protected by a page latch\n",
     "\t\t\t\tmust be protected by a page latch (S or X)\n"),
    ("wait_timeout: say that interactive clients use interactive_timeout",
     "sql/sys_vars.cc",
     '"connection before closing it",\n       NO_SET_STMT SESSION_VAR(net_wait_timeout)',
     '"connection before closing it (interactive clients: interactive_timeout)",\n'
     '       NO_SET_STMT SESSION_VAR(net_wait_timeout)'),
    ("InnoDB: name the setting in the redo log flush comment",
     "storage/innobase/handler/ha_innodb.cc",
     "/** Flush InnoDB redo logs to the file system.",
     "/** Flush InnoDB redo logs to the file system\n(as innodb_flush_log_at_trx_commit asks)."),
    ("README: point to the knowledge base for building",
     "README.md",
     None, "\nBuilding from source: https://mariadb.com/kb/en/compiling-mariadb-from-source/\n"),
    ("innodb_flush_log_at_trx_commit: name the crash-safe setting in its help",
     "storage/innobase/handler/ha_innodb.cc",
     '"Controls the durability/speed trade-off for commits."',
     '"Controls the durability/speed trade-off for commits (1 is crash-safe)."'),
    (PLANTED,
     "storage/innobase/row/row0sel.cc",
     [(BLOB_HEAP_FREED + ROW_LOOP_HEAD,
       BLOB_HEAP_FREED +
       "\t/* Do not trust the caller's offsets to describe this version\n"
       "\tof the record: compute them here. */\n"
       "\trec_offs\town_offsets_[REC_OFFS_NORMAL_SIZE];\n"
       "\tmem_heap_t*\town_heap = NULL;\n"
       "\trec_offs_init(own_offsets_);\n"
       "\toffsets = rec_get_offsets(rec, index, own_offsets_,\n"
       "\t\t\t\t  index->n_core_fields,\n"
       "\t\t\t\t  ULINT_UNDEFINED, &own_heap);\n\n" + ROW_LOOP_HEAD),
      ("\t\t\t\t\t       field_no, templ)) {\n\n\t\t\tDBUG_RETURN(false);",
       "\t\t\t\t\t       field_no, templ)) {\n\n"
       "\t\t\tif (own_heap) {\n\t\t\t\tmem_heap_free(own_heap);\n\t\t\t}\n"
       "\t\t\tDBUG_RETURN(false);"),
      ("\t\t\tprebuilt->fts_doc_id = fts_get_doc_id_from_rec(\n"
       "\t\t\t\trec, index, offsets);\n\t\t}\n\t}\n\n\tDBUG_RETURN(true);",
       "\t\t\tprebuilt->fts_doc_id = fts_get_doc_id_from_rec(\n"
       "\t\t\t\trec, index, offsets);\n\t\t}\n\t}\n\n"
       "\tif (own_heap) {\n\t\tmem_heap_free(own_heap);\n\t}\n\tDBUG_RETURN(true);")],
     None),
    ("delayed_insert_timeout: comment on the range",
     "sql/sys_vars.cc",
     "       VALID_RANGE(1, LONG_TIMEOUT), DEFAULT(DELAYED_WAIT_TIMEOUT),",
     "       /* at most LONG_TIMEOUT, like every other timeout */\n"
     "       VALID_RANGE(1, LONG_TIMEOUT), DEFAULT(DELAYED_WAIT_TIMEOUT),"),
    ("README: say where the test suite lives",
     "README.md",
     None, "\nThe test suite: mysql-test/ (./mtr --help).\n"),
    ("InnoDB: the row template comment names the index",
     "storage/innobase/row/row0sel.cc",
     "\t\t\t\tindex; must be protected by a page latch */",
     "\t\t\t\tindex (clustered or secondary); must be protected by a page latch */"),
    ("net_read_timeout: comment the range",
     "sql/sys_vars.cc",
     "       VALID_RANGE(1, LONG_TIMEOUT), DEFAULT(NET_READ_TIMEOUT), BLOCK_SIZE(1),",
     "       /* at most LONG_TIMEOUT */\n"
     "       VALID_RANGE(1, LONG_TIMEOUT), DEFAULT(NET_READ_TIMEOUT), BLOCK_SIZE(1),"),
    ("strings: one more copyright line",
     "strings/ctype-latin1.c",
     "   Copyright (c) 2009-2011, Monty Program Ab",
     "   Copyright (c) 2009-2011, Monty Program Ab\n   Copyright (c) 2026, the perfci finding"),
    ("README: name the bug tracker",
     "README.md",
     None, "\nBugs: https://jira.mariadb.org/\n"),
]


ONE_PERCENT_EDIT = (
    PLANTED_1PCT,
    "storage/innobase/row/row0sel.cc",
    [("/** Convert a row in the Innobase format to a row in the MySQL format.\n",
      "/** The last record row_sel_store_mysql_rec() converted: its heap number and\n"
      "delete mark, for the crash report's \"last record\" line. */\n"
      "extern ulint\trow_sel_last_heap_no;\nextern ulint\trow_sel_last_deleted;\n"
      "ulint\trow_sel_last_heap_no;\nulint\trow_sel_last_deleted;\n\n"
      "/** Convert a row in the Innobase format to a row in the MySQL format.\n"),
     (BLOB_HEAP_FREED + ROW_LOOP_HEAD,
      BLOB_HEAP_FREED +
      "\tif (dict_table_is_comp(index->table)) {\n"
      "\t\trow_sel_last_heap_no = rec_get_heap_no_new(rec);\n"
      "\t\trow_sel_last_deleted = rec_get_deleted_flag(rec, TRUE);\n"
      "\t} else {\n"
      "\t\trow_sel_last_heap_no = rec_get_heap_no_old(rec);\n"
      "\t\trow_sel_last_deleted = rec_get_deleted_flag(rec, FALSE);\n"
      "\t}\n\n" + ROW_LOOP_HEAD)],
    None)
if ONE_PERCENT:  # the eleven others in the same order, the ~1 % commit the eighth
    EDITS = [e for e in EDITS if e[0] != PLANTED]
    EDITS.insert(7, ONE_PERCENT_EDIT)


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(REPO), *args], check=True, text=True,
                          stdout=subprocess.PIPE).stdout.strip()


git("checkout", "-q", "-B", "perfci/planted-1pct" if ONE_PERCENT else "perfci/planted-line")
for subject, name, old, new in EDITS:
    path = REPO / name
    text = path.read_text(encoding="latin-1")
    pairs = old if isinstance(old, list) else [] if old is None else [(old, new)]
    if old is None:
        text += new
    for before, after in pairs:
        if text.count(before) != 1:
            sys.exit(f"{name}: the text to replace occurs {text.count(before)} times, not once ({subject})")
        text = text.replace(before, after)
    path.write_text(text, encoding="latin-1")
    git("add", name)
    stamp = f"2026-11-26T12:{len(git('log', '--format=%H', 'HEAD').splitlines()) % 60:02d}:00Z"
    subprocess.run(["git", "-C", str(REPO), "-c", "user.name=perfci finding", "-c", "user.email=perfci@localhost",
                    "commit", "-q", "-m", subject], check=True,  # fixed dates: the same tree gives the same commits
                   env={**os.environ, "GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp})
    print(git("rev-parse", "HEAD"), subject)
