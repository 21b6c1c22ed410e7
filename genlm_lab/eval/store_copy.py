"""Copies of a results store: its write-ahead log folded in, a single-file export, a merge.

A store runs in SQLite's WAL mode: a committed run sits first in `NAME-wal`
beside the file and reaches the file itself at a checkpoint. A copy of the
main file alone then misses what the log still holds. So the store
checkpoints after every run it writes and when it closes (and a process
exiting with a store open checkpoints it), and `export_store` makes one
self-contained file with SQLite's backup API, safe while another process
writes. `merge_stores` copies another store's runs into one.
"""

from __future__ import annotations

import atexit
import os
import sqlite3
import weakref
from pathlib import Path
from typing import Any

from genlm_lab.eval.store_format import insert_run

__all__ = ["checkpoint", "export_store", "merge_stores", "watch_at_exit"]

_OPEN: weakref.WeakSet = weakref.WeakSet()


def checkpoint(conn: sqlite3.Connection, mode: str = "PASSIVE") -> bool:
    """Copy the write-ahead log's committed pages into the main file.

    Args:
        conn: an open connection to the store.
        mode: "PASSIVE" (never waits: a reader holding an old snapshot keeps
            the pages it needs in the log) or "TRUNCATE" (waits for readers,
            then empties the log file).

    Returns:
        True when every committed page reached the main file.
    """
    try:
        busy, log_pages, copied = conn.execute(f"PRAGMA wal_checkpoint({mode})").fetchone()
    except sqlite3.Error:  # closed, or not in WAL mode (":memory:")
        return False
    return busy == 0 and log_pages == copied


def export_store(conn: sqlite3.Connection, out: str | os.PathLike, records: bool = True) -> Path:
    """Write a single-file copy of the store at `out` (no `-wal` beside it).

    SQLite's online backup reads one consistent snapshot, so another process
    may go on writing runs meanwhile; they are in the next export.
    `records=False` leaves out each run's `SMCRecord` (the particles' steps: most
    of a store's bytes) and compacts the copy: every score, response and cost
    stays, and a view opens no run's particles (a copy small enough to commit).

    Raises:
        ValueError: if `out` exists (an export never overwrites).
    """
    target = Path(out)
    if target.exists():
        raise ValueError(f"{target} exists: an export writes a new file, choose another name")
    target.parent.mkdir(parents=True, exist_ok=True)
    copy = sqlite3.connect(str(target))
    try:
        conn.backup(copy)
        copy.execute("PRAGMA journal_mode = DELETE")  # the copy is one file, no log beside it
        if not records:
            copy.execute("UPDATE runs SET record = NULL")
            copy.commit()
            copy.execute("VACUUM")
    finally:
        copy.close()
    return target


def merge_stores(db: sqlite3.Connection, src: Any, insert_responses: Any) -> int:
    """Copy every method, model, instance and run of `src` (a `ResultsStore`) that `db` lacks.

    Runs already in `db` (by key) are kept; returns how many runs were copied.
    """
    copied = 0
    for table in ("methods", "models", "instances"):
        for r in src._conn.execute(f"SELECT * FROM {table}"):
            marks = ", ".join("?" for _ in r.keys())
            db.execute(
                f"INSERT OR IGNORE INTO {table} ({', '.join(r.keys())}) VALUES ({marks})",
                tuple(r),
            )
    for r in src._conn.execute("SELECT * FROM runs ORDER BY run_id"):
        run = dict(r)
        cur = insert_run(db, run)
        if cur.rowcount == 0:
            continue
        copied += 1
        insert_responses(db, cur.lastrowid, src.responses(run["run_id"]))
    return copied


def watch_at_exit(store: Any) -> None:
    """Checkpoint `store` when the process exits, if it is still open then (a kernel ending)."""
    _OPEN.add(store)


@atexit.register
def _checkpoint_open_stores() -> None:
    for store in list(_OPEN):
        store.checkpoint()
