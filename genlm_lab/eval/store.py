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

The tables, the format number and the migration of older files are in
`genlm_lab.eval.store_format`.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterable, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from genlm_lab.eval.identity import UNKNOWN_MODEL, identity_hash
from genlm_lab.eval.labels import instance_label
from genlm_lab.eval.store_copy import checkpoint, export_store, merge_stores, watch_at_exit
from genlm_lab.eval.store_format import (
    FORMAT,
    RUN_COLUMNS,
    TABLES,
    UNKNOWN_MODEL_HASH,
    file_format,
    insert_run,
    open_format,
    refusal,
)

__all__ = [
    "FORMAT",
    "TABLES",
    "UNKNOWN_MODEL_HASH",
    "ResultsStore",
    "config_hash",
    "instance_label",
]

#: `identity_hash` under the name the store has always used for it: a method's,
#: model's or instance's key.
config_hash = identity_hash


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
            if not migrate and file_format(self._conn) == 1:  # refused before any write
                raise ValueError(refusal(self.path))
            self._conn.execute("PRAGMA journal_mode = WAL")
            # WAL + NORMAL: a committed transaction survives the process being
            # killed (only a power loss can drop the last ones).
            self._conn.execute("PRAGMA synchronous = NORMAL")
            open_format(self._conn, self.path, migrate, self._write)
            self._conn.execute("PRAGMA foreign_keys = ON")
            watch_at_exit(self)
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            raise ValueError(f"{self.path} is not a usable results store: {exc}") from exc
        except ValueError:
            self._conn.close()
            raise

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
        row = {c: run.get(c) for c in RUN_COLUMNS}
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
            cur = insert_run(db, row)
            if cur.rowcount == 0:
                return None
            run_id = cur.lastrowid
            self._insert_responses(db, run_id, responses)
            db.execute(
                "UPDATE runs SET store_seconds = ? WHERE run_id = ?",
                (time.perf_counter() - started, run_id),
            )
        checkpoint(self._conn)  # the main file alone holds the run: a bare copy keeps it
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
            "COALESCE(mo.name, ?) AS model, r.model_hash, "
            "COALESCE(mo.identified, 0) AS model_identified, r.replicate, "
            "r.seed, r.status, r.error, r.weighted_accuracy, r.runtime_seconds, r.lm_requests, "
            "r.store_seconds, r.finished_at, r.worker, r.record IS NOT NULL AS has_record, "
            "i.data AS instance_data "
            "FROM runs r JOIN methods m USING (method_hash) "
            "LEFT JOIN models mo USING (model_hash) "
            "LEFT JOIN instances i USING (domain, instance_id, instance_hash) ORDER BY r.run_id",
            self._conn,
            params=(UNKNOWN_MODEL,),
        )
        frame["instance"] = [instance_label(d) for d in frame.pop("instance_data")]
        frame["model_identified"] = frame["model_identified"].astype(bool)
        return frame

    # ------------------------------------------------------------ copying
    def merge(self, other: str | os.PathLike | ResultsStore) -> int:
        """Copy every method, model, instance and run of another store that this one lacks.

        Returns:
            The number of runs copied (runs already here, by key, are kept).
        """
        src = other if isinstance(other, ResultsStore) else ResultsStore(other)
        try:
            with self._write() as db:
                return merge_stores(db, src, self._insert_responses)
        finally:
            if src is not other:
                src.close()

    def checkpoint(self) -> bool:
        """Fold the write-ahead log into the main file (see `genlm_lab.eval.store_copy`)."""
        return checkpoint(self._conn, "TRUNCATE")

    def export(self, out: str | os.PathLike, records: bool = True) -> Path:
        """A single-file copy at `out`, safe while another process writes (`eval export`);
        `records=False` leaves the runs' particle records out (see `export_store`)."""
        return export_store(self._conn, out, records=records)

    def close(self) -> None:
        """Fold the log into the file, then close the connection (the file stays)."""
        checkpoint(self._conn, "TRUNCATE")
        self._conn.close()

    def __enter__(self) -> ResultsStore:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        n = self._conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
        return f"ResultsStore({self.path!r}, {n} runs)"
