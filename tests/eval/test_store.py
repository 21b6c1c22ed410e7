"""The SQLite results store: tables, resume after SIGKILL, two writers on one file, merge."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _eval_toys import EndsWithB, ToyDataset

from genlm_lab.eval import (
    TABLES,
    ModelOutput,
    ModelResponse,
    ResultsStore,
    config_hash,
    run_evaluation,
)

HERE = Path(__file__).parent
ROOT = HERE.parent.parent


def _spawn(*args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{HERE}", "OMP_NUM_THREADS": "1"}
    return subprocess.Popen(
        [sys.executable, str(HERE / "_slow_eval.py"), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _count(db: Path) -> int:
    with ResultsStore(db) as store:
        return len(store.to_pandas("runs"))


def test_every_table_reads_as_a_dataframe(tmp_path):
    with ResultsStore(tmp_path / "r.sqlite") as store:
        key = store.put_method("m", {"kind": "base", "n": 1})
        assert key == config_hash({"n": 1, "kind": "base"})  # key order does not matter
        store.write_run(
            {
                "run_key": "k0",
                "domain": "d",
                "instance_id": "0",
                "method_hash": key,
                "replicate": 0,
                "status": "ok",
                "weighted_accuracy": 0.5,
            },
            [{"response": "x", "weight": 1.0, "score": 0.5, "desc": "half"}],
        )
        frames = {table: store.to_pandas(table) for table in TABLES}
        rows = {table: len(frame) for table, frame in frames.items()}
        assert rows == {"methods": 1, "models": 0, "instances": 0, "runs": 1, "responses": 1}
        assert frames["runs"].loc[0, "run_key"] == "k0"
        assert frames["methods"].loc[0, "method_hash"] == key
        assert store.to_pandas("responses")["score"].tolist() == [0.5]
        with pytest.raises(ValueError, match="unknown table"):
            store.to_pandas("nope")


def test_a_second_write_of_the_same_run_is_dropped(tmp_path):
    with ResultsStore(tmp_path / "r.sqlite") as store:
        key = store.put_method("m", {"kind": "base"})
        run = {
            "run_key": "k0",
            "domain": "d",
            "instance_id": "0",
            "method_hash": key,
            "replicate": 0,
            "status": "ok",
        }
        first = store.write_run(run, [{"response": 1, "weight": 1.0}])
        assert store.write_run(run, [{"response": 2, "weight": 1.0}]) is None
        assert len(store.to_pandas("runs")) == 1
        assert [r["response"] for r in store.responses(first)] == [1]
        second = store.write_run(run, [{"response": 3, "weight": 1.0}], replace=True)
        assert [r["response"] for r in store.responses(second)] == [3]
        assert len(store.to_pandas("responses")) == 1  # the old responses went with the old run


def test_not_a_store_is_one_clear_error(tmp_path):
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(ValueError, match="not a usable results store"):
        ResultsStore(bad)


@pytest.mark.integration
def test_resume_after_sigkill_loses_and_duplicates_nothing(tmp_path):
    db = tmp_path / "runs.sqlite"
    proc = _spawn(str(db), "slow", "24", "0.15")
    deadline = time.time() + 60
    while time.time() < deadline:
        if db.exists() and _count(db) >= 5:
            break
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    with ResultsStore(db) as store:
        before = store.to_pandas("runs").set_index("instance_id")
        responses = store.to_pandas("responses")
    assert 5 <= len(before) < 24, "the kill came too late to test a resume"
    assert set(responses["run_id"]) == set(before["run_id"])  # every stored run is whole

    proc = _spawn(str(db), "slow", "24", "0.01")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    with ResultsStore(db) as store:
        after = store.to_pandas("runs").set_index("instance_id")
    assert len(after) == 24 and after.index.is_unique
    # The runs finished before the kill are the same rows, not re-run.
    assert (after.loc[before.index, "run_id"] == before["run_id"]).all()
    assert (after.loc[before.index, "finished_at"] == before["finished_at"]).all()
    assert (
        after["weighted_accuracy"] == [0.0 if int(i) % 3 == 0 else 1.0 for i in after.index]
    ).all()


@pytest.mark.integration
def test_two_writers_share_one_file(tmp_path):
    db = tmp_path / "shared.sqlite"
    procs = [_spawn(str(db), name, "30", "0.002") for name in ("writer_a", "writer_b")]
    # A third process runs writer_a's method again at the same time: its runs are already there or
    # land once.
    procs.append(_spawn(str(db), "writer_a", "30", "0.002"))
    for p in procs:
        _, err = p.communicate(timeout=180)
        assert p.returncode == 0, err
    with ResultsStore(db) as store:
        runs = store.runs_frame()
    assert sorted(runs["method"].value_counts().to_dict().items()) == [
        ("writer_a", 30),
        ("writer_b", 30),
    ]
    assert not runs.duplicated(["method", "instance_id", "replicate"]).any()
    assert (runs["status"] == "finished").all()


async def test_shards_merge_into_the_whole(tmp_path):
    async def model(instance, output_dir, replicate):
        return ModelOutput(responses=[ModelResponse(response=f"{instance.pattern}b", weight=1.0)])

    dataset = ToyDataset([f"p{i}" for i in range(10)])
    parts = [tmp_path / f"shard{i}.sqlite" for i in range(3)]
    for i, part in enumerate(parts):
        await run_evaluation(
            dataset, model, EndsWithB(), store=part, method="m", shard=f"{i}/3", model_id="m"
        )
    assert [_count(p) for p in parts] == [4, 3, 3]
    merged = tmp_path / "all.sqlite"
    with ResultsStore(merged) as store:
        assert sum(store.merge(p) for p in parts) == 10
        assert store.merge(parts[0]) == 0  # merging again copies nothing
        runs = store.to_pandas("runs")
        assert sorted(runs["instance_id"].astype(int)) == list(range(10))
        assert len(store.to_pandas("responses")) == 10
        assert len(store.to_pandas("instances")) == 10
