"""The results store's file format: its tables, format number, and the migration from format 1.

`ResultsStore` (genlm_lab.eval.store) opens a file through `open_format`,
which creates the tables of an empty file, refuses a newer format and
migrates (or refuses) the first one; `insert_run` is the one INSERT of a run.

Tables (`ResultsStore.to_pandas(name)` returns any of them):

- `methods`: method_hash, name, config (JSON): what was run.
- `models`: model_hash, name, identified (0 for a model that could not be
  read, and for runs migrated from format 1), identity (JSON).
- `instances`: domain, instance_id, instance_hash, data (the instance as
  JSON), identity (JSON: prompt, constraint, ...).
- `runs`: one row per run_key: domain, instance_id, method_hash, model_hash,
  instance_hash, evaluator (JSON), replicate, seed, status ("error", or the
  method's own: "finished", "all_dead", ...), error, weighted_accuracy,
  runtime_seconds, lm_requests, output (the `ModelOutput` as JSON), record
  (the `SMCRecord` as JSON, if any), store_seconds, finished_at, worker,
  provenance (JSON: package versions, CPU, GPU).
- `responses`: run_id, position, response (JSON), weight, score, desc, metadata.

Files written by genlm_lab before runs had keys (format 1: no model in a
run's identity) are migrated when opened: a copy of the old file is kept
next to it, and their runs are shown under the model `UNKNOWN_MODEL`
(`ResultsStore(path, migrate=False)` refuses instead and says how to migrate).
"""

from __future__ import annotations

import json
import sqlite3
import warnings
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from genlm_lab.eval.identity import UNKNOWN_MODEL

__all__ = [
    "FORMAT",
    "RUN_COLUMNS",
    "TABLES",
    "UNKNOWN_MODEL_HASH",
    "insert_run",
    "open_format",
]

TABLES = ("methods", "models", "instances", "runs", "responses")
#: The store format this code writes (SQLite's user_version).
FORMAT = 2
#: model_hash of runs whose model is unknown (migrated from format 1).
UNKNOWN_MODEL_HASH = "unknown"

SCHEMA = """
CREATE TABLE IF NOT EXISTS methods (
    method_hash TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    config TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS models (
    model_hash TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    identified INTEGER NOT NULL,
    identity TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS instances (
    domain TEXT NOT NULL,
    instance_id TEXT NOT NULL,
    instance_hash TEXT NOT NULL,
    data TEXT NOT NULL,
    identity TEXT,
    PRIMARY KEY (domain, instance_id, instance_hash)
);
CREATE TABLE IF NOT EXISTS runs (
    run_id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_key TEXT NOT NULL UNIQUE,
    output_key TEXT NOT NULL,
    domain TEXT NOT NULL,
    instance_id TEXT NOT NULL,
    method_hash TEXT NOT NULL,
    model_hash TEXT NOT NULL,
    instance_hash TEXT NOT NULL,
    evaluator TEXT,
    replicate INTEGER NOT NULL,
    seed INTEGER,
    status TEXT NOT NULL,
    error TEXT,
    weighted_accuracy REAL,
    runtime_seconds REAL,
    lm_requests INTEGER,
    output TEXT,
    record TEXT,
    store_seconds REAL,
    finished_at REAL NOT NULL,
    worker TEXT,
    provenance TEXT
);
CREATE INDEX IF NOT EXISTS runs_output_key ON runs (output_key);
CREATE TABLE IF NOT EXISTS responses (
    run_id INTEGER NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    response TEXT NOT NULL,
    weight REAL NOT NULL,
    score REAL,
    desc TEXT,
    metadata TEXT,
    PRIMARY KEY (run_id, position)
);
"""


RUN_COLUMNS = (
    "run_key",
    "output_key",
    "domain",
    "instance_id",
    "method_hash",
    "model_hash",
    "instance_hash",
    "evaluator",
    "replicate",
    "seed",
    "status",
    "error",
    "weighted_accuracy",
    "runtime_seconds",
    "lm_requests",
    "output",
    "record",
    "store_seconds",
    "finished_at",
    "worker",
    "provenance",
)
_V1_RUN_COLUMNS = RUN_COLUMNS[2:5] + RUN_COLUMNS[8:20]
_UNKNOWN_IDENTITY = {"identified": False, "name": UNKNOWN_MODEL, "migrated_from": "format 1"}


def insert_run(db: sqlite3.Connection, run: dict[str, Any]) -> sqlite3.Cursor:
    """INSERT OR IGNORE one run's `RUN_COLUMNS` values; the cursor's rowcount is 0 if its key exists."""
    return db.execute(
        f"INSERT OR IGNORE INTO runs ({', '.join(RUN_COLUMNS)}) "
        f"VALUES ({', '.join('?' for _ in RUN_COLUMNS)})",
        [run[c] for c in RUN_COLUMNS],
    )


def file_format(conn: sqlite3.Connection) -> int:
    """1 for a file of the first format, FORMAT for this one, 0 for an empty file."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version:
        return int(version)
    cols = {r[1] for r in conn.execute("PRAGMA table_info(runs)")}
    return 0 if not cols else (FORMAT if "run_key" in cols else 1)


def refusal(path: str) -> str:
    """Why a format-1 file is not opened without migrating, and how to migrate it."""
    return (
        f"{path} is a results store of format 1, whose runs do not record their "
        "model: open it with ResultsStore(path, migrate=True) or run "
        f"`genlm-lab eval migrate {path}` (the old file is kept as a .format1.bak "
        f"copy; its runs are shown under '{UNKNOWN_MODEL}', none is lost)"
    )


def open_format(
    conn: sqlite3.Connection,
    path: str,
    migrate: bool,
    write: Callable[[], AbstractContextManager[sqlite3.Connection]],
) -> None:
    """Make the file at `conn` one of this `FORMAT`: create its tables, or migrate format 1.

    Args:
        conn: the open connection.
        path: the file's path (":memory:" too), for messages and the backup.
        migrate: migrate a format-1 file; False refuses it.
        write: the store's write transaction (BEGIN IMMEDIATE ... COMMIT).

    Raises:
        ValueError: for a newer format, or format 1 with `migrate` False.
    """
    with write():
        found = file_format(conn)
        if found > FORMAT:
            raise ValueError(
                f"{path} is a results store of format {found}, newer than this "
                f"genlm_lab reads ({FORMAT}): upgrade genlm_lab to open it"
            )
        if found in (0, FORMAT):
            for statement in SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {FORMAT}")
            return
    if not migrate:
        raise ValueError(refusal(path))
    _migrate_from_1(conn, path, write)


def _migrate_from_1(
    conn: sqlite3.Connection,
    path: str,
    write: Callable[[], AbstractContextManager[sqlite3.Connection]],
) -> None:
    """Format 1 -> 2: runs gain keys and the model `UNKNOWN_MODEL`; the old file is copied first."""
    backup = Path(path + ".format1.bak")
    if path != ":memory:" and not backup.exists():
        with sqlite3.connect(str(backup)) as copy:
            conn.backup(copy)
    conn.execute("PRAGMA foreign_keys = OFF")  # the table is rebuilt under responses
    with write() as db:
        if file_format(conn) != 1:  # another process migrated it meanwhile
            return
        # SQLite's way to change a table's constraints: build the new one, copy, drop, rename.
        statements = [t for t in SCHEMA.split(";") if t.strip()]
        for statement in statements:
            if "TABLE IF NOT EXISTS runs" in statement:
                db.execute(statement.replace("EXISTS runs", "EXISTS runs_new"))
            elif "TABLE IF NOT EXISTS instances" in statement:
                db.execute(statement.replace("EXISTS instances", "EXISTS instances_new"))
            elif "INDEX" not in statement:
                db.execute(statement)
        db.execute(
            "INSERT OR IGNORE INTO models VALUES (?, ?, 0, ?)",
            (UNKNOWN_MODEL_HASH, _UNKNOWN_IDENTITY["name"], json.dumps(_UNKNOWN_IDENTITY)),
        )
        db.execute(
            "INSERT INTO instances_new (domain, instance_id, instance_hash, data) "
            "SELECT domain, instance_id, 'format1', data FROM instances"
        )
        old = ", ".join(_V1_RUN_COLUMNS)
        db.execute(
            f"INSERT INTO runs_new (run_id, run_key, output_key, model_hash, instance_hash, {old}) "
            "SELECT run_id, 'format1:' || run_id, 'format1:' || run_id, ?, 'format1', "
            f"{old} FROM runs",
            (UNKNOWN_MODEL_HASH,),
        )
        db.execute("DROP TABLE runs")
        db.execute("DROP TABLE instances")
        db.execute("ALTER TABLE runs_new RENAME TO runs")
        db.execute("ALTER TABLE instances_new RENAME TO instances")
        for statement in statements:
            if "INDEX" in statement:
                db.execute(statement)
        db.execute(f"PRAGMA user_version = {FORMAT}")
    warnings.warn(
        f"{path}: migrated a format-1 results store (its runs are shown under "
        f"'{UNKNOWN_MODEL}'); the old file is kept as {backup.name}",
        stacklevel=4,
    )
