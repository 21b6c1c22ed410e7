"""`ResultsStore`: one SQLite file holds an experiment (methods, instances, runs, scored responses).

Why SQLite and not a JSON file per instance: a run is written in one
transaction when it finishes, so a process killed at any moment leaves every
finished run whole and no half-written one (nothing lost, nothing to repair);
`UNIQUE(domain, instance_id, method_hash, replicate)` makes a run that two
processes both finish count once; WAL mode lets two writers and any number of
readers (a notebook's `ResultsView`) share the file. Writes take
`BEGIN IMMEDIATE` with a long busy timeout, so a second writer waits its turn
instead of failing.

Tables (`to_pandas(name)` returns any of them):

- `methods`: method_hash, name, config (JSON): what was run.
- `instances`: domain, instance_id, data (the instance as JSON).
- `runs`: one row per (domain, instance, method, replicate): status ("ok" or
  "error"), error, weighted_accuracy, runtime_seconds, lm_requests, seed,
  output (the `ModelOutput` as JSON), record (the `SMCRecord` as JSON, if
  any), store_seconds (time spent writing the row), finished_at, worker.
- `responses`: run_id, position, response (JSON), weight, score, desc, metadata.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Iterable, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["TABLES", "ResultsStore", "config_hash"]

TABLES = ("methods", "instances", "runs", "responses")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS methods (
    method_hash TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    config TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS instances (
    domain TEXT NOT NULL,
    instance_id TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (domain, instance_id)
);
CREATE TABLE IF NOT EXISTS runs (
    run_id INTEGER PRIMARY KEY AUTOINCREMENT,
    domain TEXT NOT NULL,
    instance_id TEXT NOT NULL,
    method_hash TEXT NOT NULL,
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
    UNIQUE (domain, instance_id, method_hash, replicate)
);
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

_RUN_COLUMNS = (
    "domain",
    "instance_id",
    "method_hash",
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
)


def config_hash(config: dict[str, Any]) -> str:
    """A short stable hash of a JSON-able config (sorted keys): the method's identity in the store."""
    text = json.dumps(config, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _dumps(value: Any) -> str:
    return json.dumps(value, default=str)


class ResultsStore:
    """An experiment's results in one SQLite file (created if missing).

    Args:
        path: the file; ":memory:" for a throwaway store.
        timeout: seconds a writer waits for another one's transaction.

    Raises:
        ValueError: if the file exists but is not a results store.
    """

    def __init__(self, path: str | os.PathLike, timeout: float = 120.0) -> None:
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(self.path, timeout=timeout, isolation_level=None)
        self._conn.row_factory = sqlite3.Row
        try:
            self._conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
            self._conn.execute("PRAGMA journal_mode = WAL")
            # WAL + NORMAL: a committed transaction survives the process being
            # killed (only a power loss can drop the last ones).
            self._conn.execute("PRAGMA synchronous = NORMAL")
            self._conn.execute("PRAGMA foreign_keys = ON")
            with self._write():
                self._create()
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            raise ValueError(f"{self.path} is not a usable results store: {exc}") from exc

    def _create(self) -> None:
        for statement in _SCHEMA.split(";"):
            if statement.strip():
                self._conn.execute(statement)

    @contextmanager
    def _write(self):
        """One write transaction, taken at once (BEGIN IMMEDIATE) so writers queue instead of deadlocking."""
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield self._conn
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    # ------------------------------------------------------------ writing
    def put_method(self, name: str, config: dict[str, Any]) -> str:
        """Store a method config (idempotent) and return its hash."""
        key = config_hash(config)
        with self._write() as db:
            db.execute(
                "INSERT OR IGNORE INTO methods (method_hash, name, config) VALUES (?, ?, ?)",
                (key, name, json.dumps(config, sort_keys=True, default=str)),
            )
        return key

    def put_instances(self, domain: str, instances: Iterable[Any]) -> None:
        """Store instances (pydantic models with `instance_id`); existing ones are kept."""
        rows = [(domain, str(i.instance_id), i.model_dump_json()) for i in instances]
        with self._write() as db:
            db.executemany(
                "INSERT OR IGNORE INTO instances (domain, instance_id, data) VALUES (?, ?, ?)", rows
            )

    def write_run(
        self, run: dict[str, Any], responses: Sequence[dict[str, Any]], replace: bool = False
    ) -> int | None:
        """Store one finished run and its scored responses in one transaction.

        Args:
            run: values for the `runs` columns (missing ones are NULL).
            responses: dicts with response, weight, score, desc, metadata.
            replace: overwrite an existing run with the same key; otherwise
                a run already stored (by another writer) is kept and this one dropped.

        Returns:
            The new run_id, or None when an existing run was kept.
        """
        started = time.perf_counter()
        row = {c: run.get(c) for c in _RUN_COLUMNS}
        row["finished_at"] = row["finished_at"] or time.time()
        with self._write() as db:
            if replace:
                db.execute(
                    "DELETE FROM runs WHERE domain=? AND instance_id=? AND method_hash=? AND replicate=?",
                    (row["domain"], row["instance_id"], row["method_hash"], row["replicate"]),
                )
            cur = db.execute(
                f"INSERT OR IGNORE INTO runs ({', '.join(_RUN_COLUMNS)}) "
                f"VALUES ({', '.join('?' for _ in _RUN_COLUMNS)})",
                [row[c] for c in _RUN_COLUMNS],
            )
            if cur.rowcount == 0:
                return None
            run_id = cur.lastrowid
            self._insert_responses(db, run_id, responses)
            db.execute(
                "UPDATE runs SET store_seconds = ? WHERE run_id = ?",
                (time.perf_counter() - started, run_id),
            )
        return run_id

    @staticmethod
    def _insert_responses(db: sqlite3.Connection, run_id: int, responses: Sequence[dict]) -> None:
        db.executemany(
            "INSERT INTO responses (run_id, position, response, weight, score, desc, metadata) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    run_id,
                    i,
                    _dumps(r.get("response")),
                    float(r["weight"]),
                    r.get("score"),
                    r.get("desc"),
                    _dumps(r.get("metadata") or {}),
                )
                for i, r in enumerate(responses)
            ],
        )

    def rescore(
        self,
        run_id: int,
        weighted_accuracy: float | None,
        responses: Sequence[dict],
        status: str = "ok",
        error: str | None = None,
    ) -> None:
        """Replace a run's scores (same output, new evaluator)."""
        with self._write() as db:
            db.execute("DELETE FROM responses WHERE run_id = ?", (run_id,))
            self._insert_responses(db, run_id, responses)
            db.execute(
                "UPDATE runs SET weighted_accuracy = ?, status = ?, error = ? WHERE run_id = ?",
                (weighted_accuracy, status, error, run_id),
            )

    # ------------------------------------------------------------ reading
    def get_run(
        self, domain: str, instance_id: Any, method_hash: str, replicate: int
    ) -> dict[str, Any] | None:
        """The stored run with that key, as a dict, or None."""
        row = self._conn.execute(
            "SELECT * FROM runs WHERE domain=? AND instance_id=? AND method_hash=? AND replicate=?",
            (domain, str(instance_id), method_hash, int(replicate)),
        ).fetchone()
        return None if row is None else dict(row)

    def done(self, domain: str, method_hash: str) -> set[tuple[str, int]]:
        """(instance_id, replicate) of every stored run of a method on a domain."""
        rows = self._conn.execute(
            "SELECT instance_id, replicate FROM runs WHERE domain=? AND method_hash=?",
            (domain, method_hash),
        )
        return {(r[0], int(r[1])) for r in rows}

    def responses(self, run_id: int) -> list[dict[str, Any]]:
        """A run's scored responses in order (response decoded from JSON)."""
        rows = self._conn.execute(
            "SELECT * FROM responses WHERE run_id = ? ORDER BY position", (run_id,)
        )
        out = []
        for r in rows:
            d = dict(r)
            d["response"] = json.loads(d["response"])
            d["metadata"] = json.loads(d["metadata"] or "{}")
            out.append(d)
        return out

    def record(self, run_id: int) -> Any:
        """The `SMCRecord` stored with a run (None if the method kept none).

        Raises:
            KeyError: if there is no run with that id.
        """
        row = self._conn.execute("SELECT record FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            raise KeyError(f"no run with run_id {run_id} in {self.path}")
        if row[0] is None:
            return None
        from genlm_lab.smc.record import SMCRecord

        return SMCRecord.from_json(row[0])

    def to_pandas(self, table: str = "runs") -> Any:
        """One table as a pandas DataFrame (`TABLES` lists them).

        Raises:
            ValueError: for an unknown table name.
        """
        import pandas as pd

        if table not in TABLES:
            raise ValueError(f"unknown table {table!r}; the store has {', '.join(TABLES)}")
        return pd.read_sql_query(f"SELECT * FROM {table}", self._conn)

    def runs_frame(self) -> Any:
        """The runs joined with their method names, without the bulky output/record columns."""
        import pandas as pd

        return pd.read_sql_query(
            "SELECT r.run_id, r.domain, r.instance_id, m.name AS method, r.method_hash, r.replicate, "
            "r.seed, r.status, r.error, r.weighted_accuracy, r.runtime_seconds, r.lm_requests, "
            "r.store_seconds, r.finished_at, r.worker, r.record IS NOT NULL AS has_record "
            "FROM runs r JOIN methods m USING (method_hash) ORDER BY r.run_id",
            self._conn,
        )

    # ------------------------------------------------------------ merging
    def merge(self, other: str | os.PathLike | ResultsStore) -> int:
        """Copy every method, instance and run of another store that this one lacks.

        Returns:
            The number of runs copied (runs already here, by key, are kept).
        """
        src = other if isinstance(other, ResultsStore) else ResultsStore(other)
        try:
            copied = 0
            with self._write() as db:
                for r in src._conn.execute("SELECT * FROM methods"):
                    db.execute("INSERT OR IGNORE INTO methods VALUES (?, ?, ?)", tuple(r))
                for r in src._conn.execute("SELECT * FROM instances"):
                    db.execute("INSERT OR IGNORE INTO instances VALUES (?, ?, ?)", tuple(r))
                for r in src._conn.execute("SELECT * FROM runs ORDER BY run_id"):
                    run = dict(r)
                    cur = db.execute(
                        f"INSERT OR IGNORE INTO runs ({', '.join(_RUN_COLUMNS)}) "
                        f"VALUES ({', '.join('?' for _ in _RUN_COLUMNS)})",
                        [run[c] for c in _RUN_COLUMNS],
                    )
                    if cur.rowcount == 0:
                        continue
                    copied += 1
                    self._insert_responses(db, cur.lastrowid, src.responses(run["run_id"]))
            return copied
        finally:
            if src is not other:
                src.close()

    def close(self) -> None:
        """Close the connection (the file stays)."""
        self._conn.close()

    def __enter__(self) -> ResultsStore:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        n = self._conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
        return f"ResultsStore({self.path!r}, {n} runs)"
