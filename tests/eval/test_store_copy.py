"""Copies of a store: the main file alone holds every committed run; exports; merge."""

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from genlm_lab.cli import main
from genlm_lab.eval import ResultsStore

ROOT = Path(__file__).parent.parent.parent

WRITER = textwrap.dedent(
    """
    import sys, time
    from genlm_lab.eval import ResultsStore

    store = ResultsStore(sys.argv[1])
    key = store.put_method("m", {"kind": "base"})
    for i in range(10_000):
        run = {"run_key": f"k{i}", "domain": "d", "instance_id": str(i), "method_hash": key,
               "replicate": 0, "status": "ok"}
        store.write_run(run, [{"response": i, "weight": 1.0}])
        print(f"k{i}", flush=True)  # committed
        time.sleep(0.01)
    """
)


def _runs_in(path: Path) -> set[str]:
    """The run keys a bare SQLite read of `path` finds (no store logic, no log beside it)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return {k for (k,) in conn.execute("SELECT run_key FROM runs")}
    finally:
        conn.close()


def _write_runs(store, keys):
    method = store.put_method("m", {"kind": "base"})
    for i, key in enumerate(keys):
        run = {"run_key": key, "domain": "d", "instance_id": str(i), "method_hash": method}
        store.write_run({**run, "replicate": 0, "status": "ok"}, [{"response": i, "weight": 1}])


def test_a_copy_of_the_main_file_alone_holds_every_run_a_killed_writer_committed(tmp_path):
    db = tmp_path / "runs.sqlite"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(db)], env=env, stdout=subprocess.PIPE, text=True
    )
    committed = [writer.stdout.readline().strip() for _ in range(25)]
    writer.send_signal(signal.SIGKILL)  # mid-run: no close, no exit handler
    writer.wait()
    assert Path(f"{db}-wal").exists()  # the log is still there, beside the file
    bare = tmp_path / "copy" / "runs.sqlite"
    bare.parent.mkdir()
    bare.write_bytes(db.read_bytes())  # the main file alone, as a user copies it
    assert set(committed) <= _runs_in(bare)


def test_close_folds_the_log_into_the_file(tmp_path):
    db = tmp_path / "runs.sqlite"
    with ResultsStore(db) as store:
        _write_runs(store, ["a", "b", "c"])
        reader = ResultsStore(db)  # a view's connection, left open: the log stays in use
    wal = Path(f"{db}-wal")
    assert not wal.exists() or wal.stat().st_size == 0
    assert _runs_in(db) == {"a", "b", "c"}
    reader.close()


def test_an_export_is_one_file_and_safe_while_another_process_writes(tmp_path):
    db, out = tmp_path / "runs.sqlite", tmp_path / "export" / "runs-copy.sqlite"
    writer, exporter = ResultsStore(db), ResultsStore(db)
    _write_runs(writer, ["a", "b"])
    writer._conn.execute("BEGIN IMMEDIATE")  # another writer mid-transaction
    writer._conn.execute("UPDATE runs SET status = 'changing' WHERE run_key = 'a'")
    exporter.export(out)
    writer._conn.execute("ROLLBACK")
    assert not Path(f"{out}-wal").exists()
    assert _runs_in(out) == {"a", "b"}
    conn = sqlite3.connect(out)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    assert {s for (s,) in conn.execute("SELECT status FROM runs")} == {"ok"}  # committed only
    conn.close()
    with pytest.raises(ValueError, match="exists"):
        exporter.export(out)
    writer.close()
    exporter.close()


def test_eval_export_writes_the_copy_and_says_what_it_holds(tmp_path, capsys):
    db, out = tmp_path / "runs.sqlite", tmp_path / "copy.sqlite"
    with ResultsStore(db) as store:
        _write_runs(store, ["a", "b", "c"])
    assert main(["eval", "export", str(db), str(out)]) == 0
    assert f"{out}: 3 runs in one file" in capsys.readouterr().out
    assert _runs_in(out) == {"a", "b", "c"}
    assert main(["eval", "export", str(tmp_path / "missing.sqlite"), str(out)]) != 0
    assert "no results store at" in capsys.readouterr().err


def test_an_export_without_records_keeps_every_score_and_drops_the_particles(tmp_path):
    db, full, slim = tmp_path / "runs.sqlite", tmp_path / "full.sqlite", tmp_path / "slim.sqlite"
    with ResultsStore(db) as store:
        method = store.put_method("m", {"kind": "base"})
        for i in range(20):
            run = {"run_key": f"k{i}", "domain": "d", "instance_id": str(i), "method_hash": method}
            run |= {"replicate": 0, "status": "ok", "weighted_accuracy": i / 20}
            run["record"] = "x" * 50_000  # the particles' steps, as a stored SMCRecord's JSON
            store.write_run(run, [{"response": i, "weight": 1.0, "score": i / 20}])
        store.export(full)
        store.export(slim, records=False)
    assert os.path.getsize(slim) * 10 < os.path.getsize(full)
    with ResultsStore(full) as a, ResultsStore(slim) as b:
        kept = ["run_id", "instance_id", "weighted_accuracy", "status"]
        assert a.runs_frame()[kept].equals(b.runs_frame()[kept])
        assert a.to_pandas("responses").equals(b.to_pandas("responses"))
        assert b.to_pandas("runs")["record"].isna().all()
        assert a.to_pandas("runs")["record"].notna().all()
