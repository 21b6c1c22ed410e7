"""Methods: weighted accuracy against the exact posterior expectation (ToyLM, enumeration); configs."""

import numpy as np
import pytest
from _eval_toys import exact_expectation, toy_domain, toy_lm

from genlm_lab.eval import Method, bootstrap_ci, config_hash, run_evaluation

PATTERN = "[abc]{1,3}"
MAX_TOKENS = 4


def _ends_with_b(text: str) -> float:
    return float(text.endswith("b"))


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["smc", "twisted_smc", "awrs_smc"])
async def test_weighted_accuracy_matches_the_exact_posterior_expectation(kind):
    lm = toy_lm()
    exact = await exact_expectation(lm, PATTERN, _ends_with_b, MAX_TOKENS)
    unconstrained = await exact_expectation(lm, ".*", _ends_with_b, MAX_TOKENS)
    assert abs(exact - unconstrained) > 0.05  # the constraint matters for this score
    domain = toy_domain([PATTERN])
    method = Method(kind=kind, n_particles=60, ess_threshold=0.5, max_tokens=MAX_TOKENS)
    results = await run_evaluation(
        domain.dataset,
        method.adaptor(domain, lm),
        domain.evaluator,
        n_replicates=30,
        max_concurrency=30,
    )
    accs = [r["weighted_accuracy"] for r in results["all_instance_results"][0]]
    mean, lo, hi = bootstrap_ci(accs)
    # SMC's self-normalised estimate has O(1/N) bias: allow a little beyond the CI.
    assert lo - 0.02 <= exact <= hi + 0.02, (exact, mean, lo, hi)
    assert not lo - 0.02 <= unconstrained <= hi + 0.02


async def test_base_estimates_the_unconstrained_expectation():
    lm = toy_lm()
    unconstrained = await exact_expectation(lm, ".*", _ends_with_b, MAX_TOKENS)
    domain = toy_domain([PATTERN])
    method = Method(kind="base", n_particles=60, max_tokens=MAX_TOKENS)
    results = await run_evaluation(
        domain.dataset,
        method.adaptor(domain, lm),
        domain.evaluator,
        n_replicates=20,
        max_concurrency=20,
    )
    accs = [r["weighted_accuracy"] for r in results["all_instance_results"][0]]
    assert abs(np.mean(accs) - unconstrained) < 0.05


async def test_lcd_and_constrained_methods_only_answer_inside_the_constraint():
    import regex

    lm = toy_lm()
    domain = toy_domain(["(ab)+c?", "c[ab]"])
    for kind in ("lcd", "smc", "awrs_smc", "sample_rerank", "twisted_smc"):
        method = Method(kind=kind, n_particles=6, max_tokens=6)
        results = await run_evaluation(domain.dataset, method.adaptor(domain, lm), domain.evaluator)
        outputs = results["all_instance_outputs"]
        assert len(outputs) == len(list(domain.dataset)) == 2
        for instance, outs in zip(domain.dataset, outputs, strict=True):
            responses = outs[0].responses
            if kind in ("sample_rerank", "twisted_smc") and not responses:
                continue  # samples drawn without the constraint may all miss it: nothing kept
            assert responses, (kind, instance.pattern)  # the constrained methods always answer
            for r in responses:
                assert regex.fullmatch(instance.pattern, r.response), (kind, r.response)
            assert sum(r.weight for r in responses) == pytest.approx(1.0)


def test_method_parse_and_hash():
    m = Method.parse("awrs_smc:n_particles=5,max_tokens=40")
    assert (m.kind, m.n_particles, m.max_tokens, m.ess_threshold) == ("awrs_smc", 5, 40, 0.5)
    assert Method.parse("lcd").n_particles == 1
    assert config_hash(m.model_dump(mode="json")) != config_hash(
        Method.parse("awrs_smc").model_dump(mode="json")
    )
    for bad in ("beam", "smc:n_particles=0", "smc:bogus=1", "smc:n_particles"):
        with pytest.raises(ValueError):
            Method.parse(bad)


async def test_budgets_are_on_by_default_and_one_key_turns_them_off():
    assert Method(kind="awrs_smc").budget is True
    off = Method.parse("awrs_smc:budget=false,max_tokens=3")
    assert off.budget is False
    assert config_hash(off.model_dump(mode="json")) != config_hash(
        Method.parse("awrs_smc:max_tokens=3").model_dump(mode="json")
    )
    # "(ab)+c" needs at least 3 tokens and EOS: with max_tokens=4 the budget keeps every
    # particle to texts that end in time; without it some are cut at max_tokens
    lm = toy_lm()
    domain = toy_domain(["(ab)+c"])
    cut = {}
    for budget in (True, False):
        method = Method(kind="awrs_smc", n_particles=8, max_tokens=4, budget=budget)
        instance = next(iter(domain.dataset))
        output = await method.adaptor(domain, lm)(instance, None, 0)
        record = output.metadata["smc_record"]
        cut[budget] = sum(
            1 for s in record.steps for e in s.get("extras", []) if e and e.get("cut") and e.get("killed_by")
        )  # fmt: skip
    assert cut[True] == 0 and cut[False] > 0
