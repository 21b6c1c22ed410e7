"""`ResultsStore`: one SQLite file holds an experiment (methods, models, instances, runs, responses).

Why SQLite and not a JSON file per instance: a run is written in one
transaction when it finishes, so a process killed at any moment leaves every
finished run whole and no half-written one (nothing lost, nothing to repair);
a run's key is UNIQUE, so a run that two processes both finish counts once;
WAL mode lets two writers and any number of readers (a notebook's
`ResultsView`) share the file. Writes take `BEGIN IMMEDIATE` with a long busy
timeout, so a second writer waits its turn instead of failing.

A run's key (`run_key`) hashes everything that decides its output and score:
the method config, the model's identity (weights fingerprint, dtype,
backend, adapter, temperature: see `genlm_lab.eval.identity`), the instance
as the domain builds it (data, prompt, constraint), the evaluator (class
and version), the domain, the replicate and the seed. `output_key` is the
same without the evaluator: outputs can be re-scored by a new evaluator.

Tables (`to_pandas(name)` returns any of them):

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
next to it, and their runs are shown under the model "model unknown"
(`ResultsStore(path, migrate=False)` refuses instead and says how to migrate).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
import warnings
from collections.abc import Iterable, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["FORMAT", "TABLES", "UNKNOWN_MODEL_HASH", "ResultsStore", "config_hash"]

TABLES = ("methods", "models", "instances", "runs", "responses")
#: The store format this code writes (SQLite's user_version).
FORMAT = 2
#: model_hash of runs whose model is unknown (migrated from format 1).
UNKNOWN_MODEL_HASH = "unknown"

_SCHEMA = """
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

_RUN_COLUMNS = (
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
_V1_RUN_COLUMNS = _RUN_COLUMNS[2:5] + _RUN_COLUMNS[8:20]
_UNKNOWN_IDENTITY = {"identified": False, "name": "model unknown", "migrated_from": "format 1"}


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
        migrate: migrate a file of an older format (its old copy is kept as
            `<name>.format1.bak`); False refuses it with a message that says how.

    Raises:
        ValueError: if the file exists but is not a results store, is of a
            newer format, or of an older one and `migrate` is False.
    """

    def __init__(
        self, path: str | os.PathLike, timeout: float = 120.0, migrate: bool = True
    ) -> None:
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(self.path, timeout=timeout, isolation_level=None)
        self._conn.row_factory = sqlite3.Row
        try:
            self._conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
            if not migrate and self._format() == 1:  # refused before anything is written
                raise ValueError(self._refusal())
            self._conn.execute("PRAGMA journal_mode = WAL")
            # WAL + NORMAL: a committed transaction survives the process being
            # killed (only a power loss can drop the last ones).
            self._conn.execute("PRAGMA synchronous = NORMAL")
            self._open(migrate)
            self._conn.execute("PRAGMA foreign_keys = ON")
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            raise ValueError(f"{self.path} is not a usable results store: {exc}") from exc
        except ValueError:
            self._conn.close()
            raise

    def _format(self) -> int:
        """1 for a file of the first format, FORMAT for this one, 0 for an empty file."""
        version = self._conn.execute("PRAGMA user_version").fetchone()[0]
        if version:
            return int(version)
        cols = {r[1] for r in self._conn.execute("PRAGMA table_info(runs)")}
        return 0 if not cols else (FORMAT if "run_key" in cols else 1)

    def _open(self, migrate: bool) -> None:
        with self._write():
            found = self._format()
            if found > FORMAT:
                raise ValueError(
                    f"{self.path} is a results store of format {found}, newer than this "
                    f"genlm_lab reads ({FORMAT}): upgrade genlm_lab to open it"
                )
            if found in (0, FORMAT):
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        self._conn.execute(statement)
                self._conn.execute(f"PRAGMA user_version = {FORMAT}")
                return
        if not migrate:
            raise ValueError(self._refusal())
        self._migrate_from_1()

    def _refusal(self) -> str:
        return (
            f"{self.path} is a results store of format 1, whose runs do not record their "
            "model: open it with ResultsStore(path, migrate=True) or run "
            f"`genlm-lab eval migrate {self.path}` (the old file is kept as a .format1.bak "
            "copy; its runs are shown under 'model unknown', none is lost)"
        )

    def _migrate_from_1(self) -> None:
        """Format 1 -> 2: runs gain keys and a model ("model unknown"); the old file is copied first."""
        backup = Path(self.path + ".format1.bak")
        if self.path != ":memory:" and not backup.exists():
            with sqlite3.connect(str(backup)) as copy:
                self._conn.backup(copy)
        self._conn.execute("PRAGMA foreign_keys = OFF")  # the table is rebuilt under responses
        with self._write() as db:
            if self._format() != 1:  # another process migrated it meanwhile
                return
            # SQLite's way to change a table's constraints: build the new one, copy, drop, rename.
            statements = [t for t in _SCHEMA.split(";") if t.strip()]
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
            f"{self.path}: migrated a format-1 results store (its runs are shown under "
            f"'model unknown'); the old file is kept as {backup.name}",
            stacklevel=4,
        )

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

    def put_model(self, identity: dict[str, Any]) -> str:
        """Store a model identity (`genlm_lab.eval.identity.model_identity`) and return its hash."""
        key = config_hash(identity)
        with self._write() as db:
            db.execute(
                "INSERT OR IGNORE INTO models (model_hash, name, identified, identity) "
                "VALUES (?, ?, ?, ?)",
                (
                    key,
                    str(identity.get("name") or "model"),
                    int(bool(identity.get("identified"))),
                    json.dumps(identity, sort_keys=True, default=str),
                ),
            )
        return key

    def put_instances(
        self, domain: str, instances: Iterable[Any], identities: Sequence[dict] | None = None
    ) -> list[str]:
        """Store instances (pydantic models with `instance_id`) with their identities.

        Args:
            domain: the domain's name.
            instances: the instances.
            identities: one dict per instance (what decides its runs); default: its data.

        Returns:
            Each instance's hash (the hash of its identity), in order.
        """
        instances = list(instances)
        if identities is None:
            identities = [{"instance": i.model_dump(mode="json")} for i in instances]
        hashes = [config_hash(ident) for ident in identities]
        rows = [
            (domain, str(i.instance_id), h, i.model_dump_json(), _dumps(ident))
            for i, h, ident in zip(instances, hashes, identities, strict=True)
        ]
        with self._write() as db:
            db.executemany(
                "INSERT OR IGNORE INTO instances (domain, instance_id, instance_hash, data, identity) "
                "VALUES (?, ?, ?, ?, ?)",
                rows,
            )
        return hashes

    def write_run(
        self, run: dict[str, Any], responses: Sequence[dict[str, Any]], replace: bool = False
    ) -> int | None:
        """Store one finished run and its scored responses in one transaction.

        Args:
            run: values for the `runs` columns (missing ones are NULL; run_key is
                required, output_key defaults to it, model_hash to "unknown").
            responses: dicts with response, weight, score, desc, metadata.
            replace: overwrite an existing run with the same key; otherwise
                a run already stored (by another writer) is kept and this one dropped.

        Returns:
            The new run_id, or None when an existing run was kept.

        Raises:
            ValueError: if the run has no run_key.
        """
        started = time.perf_counter()
        row = {c: run.get(c) for c in _RUN_COLUMNS}
        if not row["run_key"]:
            raise ValueError("a run needs a run_key (what identifies it); got none")
        row["output_key"] = row["output_key"] or row["run_key"]
        row["model_hash"] = row["model_hash"] or UNKNOWN_MODEL_HASH
        row["instance_hash"] = row["instance_hash"] or ""
        row["finished_at"] = row["finished_at"] or time.time()
        for key in ("evaluator", "provenance"):
            if row[key] is not None and not isinstance(row[key], str):
                row[key] = _dumps(row[key])
        with self._write() as db:
            if replace:
                db.execute("DELETE FROM runs WHERE run_key = ?", (row["run_key"],))
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
        status: str = "finished",
        error: str | None = None,
    ) -> None:
        """Replace a run's scores (same output, same evaluator identity, e.g. after a fix)."""
        with self._write() as db:
            db.execute("DELETE FROM responses WHERE run_id = ?", (run_id,))
            self._insert_responses(db, run_id, responses)
            db.execute(
                "UPDATE runs SET weighted_accuracy = ?, status = ?, error = ? WHERE run_id = ?",
                (weighted_accuracy, status, error, run_id),
            )

    # ------------------------------------------------------------ reading
    def get_run(self, run_key: str) -> dict[str, Any] | None:
        """The stored run with that key, as a dict, or None."""
        row = self._conn.execute("SELECT * FROM runs WHERE run_key = ?", (run_key,)).fetchone()
        return None if row is None else dict(row)

    def get_output(self, output_key: str) -> dict[str, Any] | None:
        """The newest run with that output key (any evaluator) that has an output, or None."""
        row = self._conn.execute(
            "SELECT * FROM runs WHERE output_key = ? AND output IS NOT NULL "
            "ORDER BY run_id DESC LIMIT 1",
            (output_key,),
        ).fetchone()
        return None if row is None else dict(row)

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

    def run(self, run_id: int) -> dict[str, Any]:
        """One run with its method, model and instance (JSON columns decoded).

        Raises:
            KeyError: if there is no run with that id.
        """
        row = self._conn.execute(
            "SELECT r.*, m.name AS method, mo.name AS model, mo.identity AS model_identity, "
            "i.data AS instance, i.identity AS instance_identity "
            "FROM runs r JOIN methods m USING (method_hash) "
            "LEFT JOIN models mo USING (model_hash) "
            "LEFT JOIN instances i USING (domain, instance_id, instance_hash) WHERE r.run_id = ?",
            (int(run_id),),
        ).fetchone()
        if row is None:
            raise KeyError(f"no run with run_id {run_id} in {self.path}")
        out = dict(row)
        for key in ("evaluator", "provenance", "model_identity", "instance", "instance_identity"):
            out[key] = None if out[key] is None else json.loads(out[key])
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
        """The runs with their method and model names and a short instance label.

        Without the bulky output/record columns; `model_identified` is False for
        runs whose model could not be read (or was not recorded: format 1).
        """
        import pandas as pd

        frame = pd.read_sql_query(
            "SELECT r.run_id, r.domain, r.instance_id, m.name AS method, r.method_hash, "
            "COALESCE(mo.name, 'model unknown') AS model, r.model_hash, "
            "COALESCE(mo.identified, 0) AS model_identified, r.replicate, "
            "r.seed, r.status, r.error, r.weighted_accuracy, r.runtime_seconds, r.lm_requests, "
            "r.store_seconds, r.finished_at, r.worker, r.record IS NOT NULL AS has_record, "
            "i.data AS instance_data "
            "FROM runs r JOIN methods m USING (method_hash) "
            "LEFT JOIN models mo USING (model_hash) "
            "LEFT JOIN instances i USING (domain, instance_id, instance_hash) ORDER BY r.run_id",
            self._conn,
        )
        frame["instance"] = [instance_label(d) for d in frame.pop("instance_data")]
        frame["model_identified"] = frame["model_identified"].astype(bool)
        return frame

    # ------------------------------------------------------------ merging
    def merge(self, other: str | os.PathLike | ResultsStore) -> int:
        """Copy every method, model, instance and run of another store that this one lacks.

        Returns:
            The number of runs copied (runs already here, by key, are kept).
        """
        src = other if isinstance(other, ResultsStore) else ResultsStore(other)
        try:
            copied = 0
            with self._write() as db:
                for table in ("methods", "models", "instances"):
                    for r in src._conn.execute(f"SELECT * FROM {table}"):
                        marks = ", ".join("?" for _ in r.keys())
                        db.execute(
                            f"INSERT OR IGNORE INTO {table} ({', '.join(r.keys())}) VALUES ({marks})",
                            tuple(r),
                        )
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


#: Instance fields shown first, in this order, when an instance is labelled.
_LABEL_FIELDS = ("name", "pattern", "question", "title", "text")


def instance_label(data: str | dict | None, width: int = 48) -> str:
    """A short label of an instance's content: its name, pattern, question, ... (JSON or dict)."""
    if data is None:
        return ""
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except ValueError:
            return data[:width]
    fields = [k for k in _LABEL_FIELDS if isinstance(data.get(k), str)]
    fields += [k for k, v in data.items() if isinstance(v, dict)]  # a schema, say
    fields += [k for k, v in data.items() if k != "instance_id" and isinstance(v, str)]
    if not fields:
        text = json.dumps({k: v for k, v in data.items() if k != "instance_id"}, default=str)
    else:
        value = data[fields[0]]
        text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"
