"""eval/store_format.py: the format of a file, the one INSERT of a run, a newer format refused."""

from __future__ import annotations

import sqlite3
from contextlib import contextmanager

import pytest

from genlm_lab.eval.store_format import (
    FORMAT,
    RUN_COLUMNS,
    TABLES,
    file_format,
    insert_run,
    open_format,
)


@contextmanager
def _transaction(conn):
    conn.execute("BEGIN IMMEDIATE")
    yield conn
    conn.execute("COMMIT")


def _conn() -> sqlite3.Connection:
    return sqlite3.connect(":memory:", isolation_level=None)


def test_an_empty_file_gets_every_table_and_this_format():
    conn = _conn()
    assert file_format(conn) == 0
    open_format(conn, ":memory:", True, lambda: _transaction(conn))
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert set(TABLES) <= names
    assert file_format(conn) == FORMAT


def test_insert_run_ignores_a_second_run_with_the_same_key():
    conn = _conn()
    open_format(conn, ":memory:", True, lambda: _transaction(conn))
    run = dict.fromkeys(RUN_COLUMNS)
    run.update(run_key="k", output_key="k", domain="d", instance_id="0", method_hash="m")
    run.update(model_hash="x", instance_hash="", replicate=0, status="finished", finished_at=1.0)
    assert insert_run(conn, run).rowcount == 1
    assert insert_run(conn, {**run, "status": "error"}).rowcount == 0
    assert conn.execute("SELECT status FROM runs").fetchall() == [("finished",)]


def test_a_newer_format_is_refused():
    conn = _conn()
    conn.execute(f"PRAGMA user_version = {FORMAT + 1}")
    with pytest.raises(ValueError, match="newer than this"):
        open_format(conn, "x.sqlite", True, lambda: _transaction(conn))
