"""ByteEnsembleTokenSampler: properly weighted for the ensemble, checked by exact enumeration."""

from __future__ import annotations

import asyncio
import math

import pytest

from genlm_lab.control import EOS, direct_token_sampler
from genlm_lab.control.inference.ensemble import EnsembleSMC
from genlm_lab.control.lm import ByteEnsemble
from genlm_lab.control.sampler.byte_ensemble import ByteEnsembleTokenSampler
from tests.control._byte_pair import K, cut_target, exact_target, log, oracles, toy_pair
from tests.control._enumerate import enumerate_runs

MAX_TOKENS = 4  # texts of at most 3 bytes, then EOS (forced at the 4th token)


def run(coro):
    return asyncio.run(coro)


async def _enumerated(sampler: ByteEnsembleTokenSampler) -> list[tuple[float, object]]:
    """Every one-particle EnsembleSMC run (no resampling) over every sequence of draws."""
    base = sampler.sample_with_info

    async def one_run(draw):
        sampler.sample_with_info = lambda context, _=None: base(context, draw)
        try:
            return await EnsembleSMC(sampler, record_factors=False)(1, 0.0, MAX_TOKENS, seed=0)
        finally:
            del sampler.sample_with_info

    return await enumerate_runs(one_run)


@pytest.mark.parametrize(("op", "a"), [("sum", 0.3), ("prod", 0.3), ("harmonic", 0.6)])
def test_weights_are_proper_for_the_exact_ensemble_target(op, a):
    """E[w 1{run returns x}] = op(P_1(x EOS), P_2(x EOS)) for every text x of at most 3 bytes,
    summed exactly over every run; each model's score of x is its exact probability."""
    lm1, lm2 = toy_pair()
    exact = exact_target(lm1, lm2, op, a, MAX_TOKENS - 1)
    (_, end1), (_, end2) = oracles(lm1, lm2)

    async def main():
        ens = await ByteEnsemble.create(lm1, lm2, op, a=a, K=K)
        outcomes = await _enumerated(ByteEnsembleTokenSampler(ens, n_particles=1))
        await ens.cleanup()
        return outcomes

    outcomes = run(main())
    mass: dict[bytes, float] = {}
    for prob, sequences in outcomes:
        (context, logw) = sequences[0]
        assert context[-1] is EOS
        text = bytes(context[:-1])
        mass[text] = mass.get(text, 0.0) + prob * math.exp(logw)
        assert sequences.log_prefix_weights_1[0] == pytest.approx(log(end1(text)), abs=1e-6)
        assert sequences.log_prefix_weights_2[0] == pytest.approx(log(end2(text)), abs=1e-6)
    assert len(outcomes) == len(exact) == 15  # one run per text: a path of draws is a text
    assert sum(p for p, _ in outcomes) == pytest.approx(1.0, abs=1e-12)
    for text, weight in exact.items():
        assert mass[text] == pytest.approx(weight, rel=1e-5), text
    # the check can fail: without the forced EOS's weight the masses would be these
    wrong = cut_target(lm1, lm2, op, a, MAX_TOKENS - 1)
    assert max(abs(wrong[x] - exact[x]) / exact[x] for x in exact) > 1e-2


def test_a_draw_matches_the_direct_sampler_and_says_how_each_model_saw_it():
    """Same weight as a direct sampler on the ensemble; shares from the exact conditionals."""
    lm1, lm2 = toy_pair()
    (pre1, _), (pre2, _) = oracles(lm1, lm2)

    async def main():
        ens = await ByteEnsemble.create(lm1, lm2, "sum", a=0.3, K=K)
        sampler = ByteEnsembleTokenSampler(ens, n_particles=2, seed=7)
        direct = direct_token_sampler(ens)
        seen = 0
        for context in ([], list(b"a"), list(b"ba")):
            token, logw, logp, info = await sampler.sample_with_info(context)
            _, direct_logw, _, _ = await direct.sample_with_info(context)
            assert logw == pytest.approx(direct_logw, abs=1e-9)
            if token is EOS:
                continue
            x, y = bytes(context), bytes([token])
            p1, p2 = pre1(x + y) / pre1(x), pre2(x + y) / pre2(x)
            shares = info["ensemble"]
            assert shares["p1"] == pytest.approx(p1, rel=1e-5)
            assert shares["p2"] == pytest.approx(p2, rel=1e-5)
            assert shares["share1"] == pytest.approx(p1 / (p1 + p2), rel=1e-5)
            key = (*context, token)
            assert sampler.prefix_cache_1[key] == pytest.approx(math.log(pre1(x + y)), abs=1e-6)
            assert x + y in ens.data_dict_1 and x + y in ens.data_dict_2  # both read it
            seen += 1
        assert seen >= 1
        assert sampler.prefix_cache_1[()] == 0.0 and await sampler.start_weight() == 0.0

    run(main())


def test_bad_input_is_one_clear_value_error():
    async def main():
        ens = await ByteEnsemble.create(*toy_pair(), "prod", K=4)
        with pytest.raises(ValueError, match="needs a ByteEnsemble"):
            ByteEnsembleTokenSampler(ens.p1)
        with pytest.raises(ValueError, match="only 'linear'"):
            ByteEnsembleTokenSampler(ens, proposal="square")
        with pytest.raises(ValueError, match=r"eos_tokens \[b'</s>'\] are not EOS"):
            ByteEnsembleTokenSampler(ens, eos_tokens=[b"</s>"])
        with pytest.raises(ValueError, match="n_particles must be a positive int"):
            ByteEnsembleTokenSampler(ens, n_particles=0)
        sampler = ByteEnsembleTokenSampler(ens, eos_tokens=[b"<e>"])
        assert sampler.eos_tokens == [b"<e>"]

    run(main())
