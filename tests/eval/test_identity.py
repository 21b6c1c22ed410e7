"""Run identity: a stored run is reused only when model, method, instance as built, evaluator and seed match."""

import json
import sqlite3

import pytest
from _eval_toys import EndsWithB, ToyDataset, ToyDomain, toy_domain, toy_lm

from genlm_lab.control import PromptedLLM
from genlm_lab.eval import (
    Method,
    ModelOutput,
    ModelResponse,
    ResultsStore,
    model_identity,
    run_evaluation,
    summarize,
)

PATTERNS = ["a+b", "(ab)+", "[ab]{2}"]
METHOD = Method(kind="awrs_smc", n_particles=3, max_tokens=4)


async def _run(domain, lm, db, **kw):
    return await run_evaluation(
        domain.dataset, METHOD.adaptor(domain, lm), domain.evaluator, store=db, **kw
    )


def _texts(results):
    return [[r.response for r in outs[0].responses] for outs in results["all_instance_outputs"]]


async def test_a_second_model_makes_new_runs_and_a_second_summary_row(tmp_path):
    db = tmp_path / "two.sqlite"
    domain = toy_domain(PATTERNS)
    first = await _run(domain, toy_lm(seed=3), db)
    second = await _run(domain, toy_lm(seed=4), db)
    again = await _run(domain, toy_lm(seed=3), db)
    with ResultsStore(db) as store:
        runs = store.runs_frame()
        summary = summarize(store, n_bootstrap=200)
    assert len(runs) == 2 * len(PATTERNS)
    assert runs.groupby("instance_id")["model"].nunique().eq(2).all()
    assert _texts(first) != _texts(second)  # the second model answered, not the store
    assert _texts(again) == _texts(first)  # the first model's runs are reused
    assert sorted(summary["model"]) == ["ToyLM(seed=3)", "ToyLM(seed=4)"]


class _Prompted(ToyDomain):
    prefix = ""

    def prompt(self, instance):
        return self.prefix


class _Stricter(ToyDomain):
    def constraint(self, instance):
        return super().constraint(instance.model_copy(update={"pattern": "a" + instance.pattern}))


async def test_editing_a_prompt_or_a_constraint_reruns_only_what_changed(tmp_path):
    db = tmp_path / "edit.sqlite"
    lm = toy_lm()
    domain = _Prompted(ToyDataset(PATTERNS), EndsWithB())
    await _run(domain, lm, db)
    await _run(domain, lm, db)  # nothing changed: nothing new
    with ResultsStore(db) as store:
        assert len(store.runs_frame()) == 3
    domain.prefix = "ab"  # an edited prompt
    await _run(domain, lm, db)
    with ResultsStore(db) as store:
        assert len(store.runs_frame()) == 6
    stricter = _Stricter(ToyDataset(PATTERNS), EndsWithB())
    await _run(stricter, lm, db)
    with ResultsStore(db) as store:
        runs = store.runs_frame()
        ident = store.run(int(runs["run_id"].iloc[-1]))["instance_identity"]
    assert len(runs) == 9
    assert ident["constraint"]["source"].startswith("a")  # the constraint as built is recorded


async def test_a_new_evaluator_version_or_seed_makes_new_runs(tmp_path):
    db = tmp_path / "ev.sqlite"
    domain = toy_domain(PATTERNS[:2])
    lm = toy_lm()
    await _run(domain, lm, db)

    class EndsWithB2(EndsWithB):
        version = "2"

    await run_evaluation(
        domain.dataset, METHOD.adaptor(domain, lm), EndsWithB2(), store=db, domain="toy"
    )
    await _run(domain, lm, db, seed=1)
    with ResultsStore(db) as store:
        runs = store.to_pandas("runs")
    assert len(runs) == 6 and runs["run_key"].is_unique
    assert {json.loads(e)["version"] for e in runs["evaluator"]} == {"1", "2"}


async def test_an_unidentified_adaptor_is_rerun_unless_reuse_is_asked_for(tmp_path):
    calls = []

    async def model(instance, output_dir, replicate):
        calls.append(instance.instance_id)
        return ModelOutput(responses=[ModelResponse(response="ab", weight=1.0)])

    db = tmp_path / "u.sqlite"
    dataset = ToyDataset(["x", "y"])
    with pytest.warns(UserWarning, match="cannot be identified"):
        await run_evaluation(dataset, model, EndsWithB(), store=db)
    with pytest.warns(UserWarning, match="cannot be identified"):
        await run_evaluation(dataset, model, EndsWithB(), store=db)
    assert len(calls) == 4
    await run_evaluation(dataset, model, EndsWithB(), store=db, reuse_unidentified=True)
    assert len(calls) == 4
    with ResultsStore(db) as store:
        runs = store.runs_frame()
    assert len(runs) == 2 and not runs["model_identified"].any()
    assert runs["model"].str.startswith("model unknown").all()


def test_model_identity_follows_weights_dtype_and_temperature():
    import torch

    from genlm_lab.backend import load_model_by_name

    a, b = load_model_by_name("tiny-random"), load_model_by_name("tiny-random")
    ia = model_identity(a, name="tiny")
    assert ia == model_identity(b, name="tiny") and ia["identified"]
    assert ia["weights"].startswith("tensors:")
    half = load_model_by_name("tiny-random", llm_opts={"dtype": "bfloat16"})
    assert model_identity(half, name="tiny")["dtype"] == "torch.bfloat16"
    assert model_identity(half, name="tiny")["weights"] != ia["weights"]
    hot = PromptedLLM(a, temperature=0.5)
    assert model_identity(hot, name="tiny")["temperature"] == 0.5
    with torch.no_grad():
        next(b.model.parameters())[0, 0] += 1.0  # an in-place edit of one weight
    assert model_identity(b, name="tiny")["weights"] != ia["weights"]
    assert not model_identity(object())["identified"]


async def test_each_run_records_its_provenance_and_model(tmp_path):
    db = tmp_path / "p.sqlite"
    domain = toy_domain(PATTERNS[:1])
    await _run(domain, toy_lm(), db)
    with ResultsStore(db) as store:
        run = store.run(1)
    prov = run["provenance"]
    for key in ("genlm_lab", "torch", "transformers", "llguidance", "cpu", "gpu", "python"):
        assert key in prov
    assert run["seed"] is not None and run["model"] == "ToyLM(seed=3)"
    assert run["model_identity"]["seed"] == 3


# The format written by genlm_lab before runs had keys (store format 1).
_FORMAT_1 = """
CREATE TABLE methods (method_hash TEXT PRIMARY KEY, name TEXT NOT NULL, config TEXT NOT NULL);
CREATE TABLE instances (domain TEXT NOT NULL, instance_id TEXT NOT NULL, data TEXT NOT NULL,
    PRIMARY KEY (domain, instance_id));
CREATE TABLE runs (run_id INTEGER PRIMARY KEY AUTOINCREMENT, domain TEXT NOT NULL,
    instance_id TEXT NOT NULL, method_hash TEXT NOT NULL, replicate INTEGER NOT NULL, seed INTEGER,
    status TEXT NOT NULL, error TEXT, weighted_accuracy REAL, runtime_seconds REAL,
    lm_requests INTEGER, output TEXT, record TEXT, store_seconds REAL, finished_at REAL NOT NULL,
    worker TEXT, UNIQUE (domain, instance_id, method_hash, replicate));
CREATE TABLE responses (run_id INTEGER NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
    position INTEGER NOT NULL, response TEXT NOT NULL, weight REAL NOT NULL, score REAL,
    desc TEXT, metadata TEXT, PRIMARY KEY (run_id, position));
"""


def _format_1_store(path, n=3):
    with sqlite3.connect(path) as db:
        db.executescript(_FORMAT_1)
        db.execute("INSERT INTO methods VALUES ('h', 'smc', '{}')")
        for i in range(n):
            db.execute(
                "INSERT INTO instances VALUES ('toy', ?, ?)", (str(i), f'{{"pattern": "p{i}"}}')
            )
            db.execute(
                "INSERT INTO runs (domain, instance_id, method_hash, replicate, status, "
                "weighted_accuracy, finished_at) VALUES ('toy', ?, 'h', 0, 'ok', ?, 1.0)",
                (str(i), i / n),
            )
            db.execute(
                "INSERT INTO responses VALUES (?, 0, '\"ab\"', 1.0, 1.0, 'b', '{}')", (i + 1,)
            )


def test_an_old_store_is_refused_with_how_to_migrate_and_nothing_changes(tmp_path):
    path = tmp_path / "old.sqlite"
    _format_1_store(path)
    before = path.read_bytes()
    with pytest.raises(ValueError, match="genlm-lab eval migrate"):
        ResultsStore(path, migrate=False)
    assert path.read_bytes() == before


def test_an_old_store_is_migrated_with_its_runs_under_model_unknown(tmp_path):
    path = tmp_path / "old.sqlite"
    _format_1_store(path)
    with pytest.warns(UserWarning, match="migrated"):
        store = ResultsStore(path)
    with store:
        runs = store.runs_frame()
        assert len(runs) == 3 and set(runs["model"]) == {"model unknown"}
        assert runs["weighted_accuracy"].tolist() == [0, 1 / 3, 2 / 3]
        assert [store.responses(r)[0]["response"] for r in runs["run_id"]] == ["ab"] * 3
        assert runs["instance"].tolist() == ["p0", "p1", "p2"]
        assert summarize(store, n_bootstrap=100)["n_runs"].tolist() == [3]
    with sqlite3.connect(str(path) + ".format1.bak") as db:  # the old file, as it was
        assert db.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 3
    with ResultsStore(path) as store:  # opening again changes nothing
        assert len(store.runs_frame()) == 3


def test_the_active_lora_adapter_and_its_weights_are_part_of_the_identity(tmp_path):
    import copy

    import torch
    from peft import LoraConfig, get_peft_model

    from genlm_lab.backend import AsyncTransformer, load_hf_model

    model, tokenizer = load_hf_model("tiny-random", device="cpu")
    paths = {}
    for name, seed in (("a", 1), ("b", 2)):
        torch.manual_seed(seed)
        config = LoraConfig(r=4, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
        get_peft_model(copy.deepcopy(model), config).save_pretrained(tmp_path / name)
        paths[name] = str(tmp_path / name)
    lm = AsyncTransformer(model, tokenizer)
    base = model_identity(lm, name="tiny")
    lm.add_new_lora(paths["a"], "x")
    lm.set_lora(lora_name="x")
    with_a = model_identity(lm, name="tiny")
    lm.add_new_lora(paths["b"], "x")  # another adapter under the same name
    lm.set_lora(lora_name="x")
    with_b = model_identity(lm, name="tiny")
    assert with_a["lora"] == with_b["lora"] == "x" and base["lora"] is None
    assert len({base["weights"], with_a["weights"], with_b["weights"]}) == 3


def test_run_keys_split_the_output_from_its_evaluator():
    from genlm_lab.eval import run_keys

    args = ("m", "h", "i")
    first = run_keys(*args, {"class": "E", "version": "1"}, "toy", 0, 7)
    rescored = run_keys(*args, {"class": "E", "version": "2"}, "toy", 0, 7)
    assert first[1] == rescored[1] and first[0] != rescored[0]  # same output, another score
    others = {
        run_keys(*args, {"class": "E", "version": "1"}, "toy", r, s)[1]
        for r, s in [(0, 7), (1, 7), (0, 8)]
    }
    assert len(others) == 3


def test_an_adaptor_is_identified_by_what_it_says_or_what_it_is_given():
    from genlm_lab.eval.identity import UNKNOWN_MODEL, adaptor_model_identity, method_identity

    async def plain(instance, output_dir, replicate):
        return None

    unknown = adaptor_model_identity(plain, None, None)
    assert unknown["identified"] is False and unknown["name"].startswith(UNKNOWN_MODEL)
    named = adaptor_model_identity(plain, "my-model@v2", None)
    assert named == {"identified": True, "name": "my-model@v2", "id": "my-model@v2"}
    assert method_identity(plain, "greedy") == ("greedy", {"name": "greedy"})
    name, config = method_identity(plain, METHOD)
    assert name == "awrs_smc" and config == METHOD.model_dump(mode="json")
