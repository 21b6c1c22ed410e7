"""The local pool: the runner's tasks run here, named and run as without a pool."""

from _eval_toys import EndsWithB, ToyInstance

from genlm_lab.eval import ModelOutput, ModelResponse
from genlm_lab.eval.identity import adaptor_model_identity, instance_identity, method_identity
from genlm_lab.eval.pool import LocalPool, pool_for
from genlm_lab.eval.task import run_task
from genlm_lab.smc import get_rng


class Adaptor:
    """An adaptor that names itself, counts how often it is asked an instance's identity."""

    config = {"kind": "toy", "k": 2}
    asked = 0

    def instance_identity(self, instance):
        self.asked += 1
        return {"pattern": instance.pattern}

    async def __call__(self, instance, output_dir, replicate):
        text = f"{get_rng().random():.12f}b"
        return ModelOutput(responses=[ModelResponse(response=text, weight=1.0)])


async def test_the_local_pool_names_and_runs_as_the_runner_did_without_one():
    model, evaluator = Adaptor(), EndsWithB()
    instances = [ToyInstance(instance_id=i, pattern=p) for i, p in enumerate(["a", "ab"])]
    pool = await pool_for(None, model, evaluator, instances, "m", None, "toy-model")
    assert isinstance(pool, LocalPool)
    assert (pool.method_name, pool.method_config) == method_identity(model, "m")
    assert pool.model_identity == adaptor_model_identity(model, None, "toy-model")
    assert model.asked == 0  # read on first use, as the runner keys the instances
    assert pool.instance_identities == [instance_identity(model, i) for i in instances]
    assert pool.instance_identities[1] == {"pattern": "ab"}
    assert pool.capacity(3) == 3
    ran = await pool.run(instances[0], 1, 7, None)
    want = await run_task(model, evaluator, instances[0], 1, 7, None)
    assert ran[0].responses == want[0].responses  # the same seeded draw, scored the same
    assert ran[1]["weighted_accuracy"] == want[1]["weighted_accuracy"] == 1.0
    assert ran[2]["seed"] == 7 and ran[2]["status"] == "finished"
    assert pool.postfix() == {}
    pool.postfix()["acc"] = "1.0"  # the runner adds to it: a new dict each time
    assert pool.postfix() == {}
    pool.close()
