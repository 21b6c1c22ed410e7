"""The two-model scenario of issue 30 on the real default model: one store, two models, two rows."""

import pytest

from genlm_lab.backend import load_model_by_name
from genlm_lab.eval import Method, ResultsStore, load_domain, run_evaluation, summarize

pytestmark = pytest.mark.slow


async def test_default_then_tiny_random_into_one_store_gives_two_runs_per_instance(tmp_path):
    db = tmp_path / "stale.sqlite"
    domain = load_domain("pattern_matching", patterns=["[a-z]{3}[0-9]{2}", "(ab)+c"])
    method = Method.parse("awrs_smc:n_particles=3", max_tokens=8)
    outputs = {}
    for name in ("default", "tiny-random"):
        llm = load_model_by_name(name)
        results = await run_evaluation(
            domain.dataset,
            method.adaptor(domain, llm, model_name=name),
            domain.evaluator,
            store=db,
            domain=domain.name,
        )
        outputs[name] = [
            sorted(r.response for r in outs[0].responses)
            for outs in results["all_instance_outputs"]
        ]
    with ResultsStore(db) as store:
        runs = store.runs_frame()
        summary = summarize(store, n_bootstrap=200)
    assert len(runs) == 4 and runs.groupby("instance_id")["model"].nunique().eq(2).all()
    assert outputs["default"] != outputs["tiny-random"]
    assert sorted(summary["model"]) == ["default", "tiny-random"] and len(summary) == 2
    ids = runs.groupby("model")["run_id"].apply(list).to_dict()
    with ResultsStore(db) as store:
        texts = {m: [store.responses(r) for r in ids[m]] for m in ids}
    assert texts["default"] != texts["tiny-random"]
