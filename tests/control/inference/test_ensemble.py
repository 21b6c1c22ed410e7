"""EnsembleSMC and SequencesExt: an unbiased normaliser, and each model's own scores."""

from __future__ import annotations

import asyncio
import math

import numpy as np
import pytest

from genlm_lab.control import EOS, direct_token_sampler
from genlm_lab.control.errors import SequencesLengthError
from genlm_lab.control.inference.ensemble import EnsembleSMC, SequencesExt
from genlm_lab.control.lm import ByteEnsemble
from genlm_lab.control.sampler.byte_ensemble import ByteEnsembleTokenSampler
from tests.control._byte_pair import K, cut_target, exact_target, log, oracles, toy_pair

MAX_TOKENS = 4
RUNS = 300


def run(coro):
    return asyncio.run(coro)


@pytest.mark.parametrize(("op", "a"), [("prod", 0.3), ("harmonic", 0.6)])
def test_the_normaliser_estimate_is_unbiased(op, a):
    """The mean of exp(log_ml) over 300 seeded runs (4 particles, resampling below ESS 0.9)
    is within 4 standard errors of the exact Z = sum of op(P_1(x EOS), P_2(x EOS)) over the
    texts of at most 3 bytes.

    Why 4 standard errors bound it: each run's estimate lies in [0, 1] (for a power mean with
    p <= 1, Hölder's inequality keeps every step's weight, the next-byte mass of the mean, at
    most 1), so the mean of 300 is close to normal and a 4-sigma deviation has probability
    about 6e-5; the seeds are fixed, so the outcome does not change from run to run. The
    target of a run that forgets the forced EOS's weight lies tens of errors away.
    """
    lm1, lm2 = toy_pair()
    exact = sum(exact_target(lm1, lm2, op, a, MAX_TOKENS - 1).values())
    wrong = sum(cut_target(lm1, lm2, op, a, MAX_TOKENS - 1).values())

    async def main():
        ens = await ByteEnsemble.create(lm1, lm2, op, a=a, K=K)
        smc = EnsembleSMC(ByteEnsembleTokenSampler(ens, n_particles=4))
        z, resampled = [], 0
        for seed in range(RUNS):
            sequences = await smc(4, 0.9, MAX_TOKENS, seed=seed)
            z.append(math.exp(sequences.log_ml))
            resampled += any(step["resampled"] for step in sequences.record.steps)
        return np.array(z), resampled

    z, resampled = run(main())
    assert resampled > RUNS // 3  # the runs did resample
    assert np.all((z >= 0) & (z <= 1 + 1e-9))
    se = z.std(ddof=1) / math.sqrt(RUNS)
    assert abs(z.mean() - exact) <= 4 * se, (z.mean(), exact, se)
    assert abs(wrong - exact) > 8 * se  # the bound is tight enough to catch a wrong target


def test_results_carry_each_models_exact_score_and_a_mixture_needs_no_reweighting():
    """log_prefix_weights_k is model k's exact log-probability of each text; for a mixture
    ("sum") every drawn byte's weight is exactly 1 (the mixture is normalised), so only the
    EOS forced at max_tokens moves the weights."""
    lm1, lm2 = toy_pair()
    (_, end1), (_, end2) = oracles(lm1, lm2)

    async def main():
        ens = await ByteEnsemble.create(lm1, lm2, "sum", a=0.3, K=K)
        return await ByteEnsembleTokenSampler(ens, n_particles=6).smc(6, 0.5, MAX_TOKENS, seed=3)

    sequences = run(main())
    assert isinstance(sequences, SequencesExt) and len(sequences) == 6
    for i, (context, _) in enumerate(sequences):
        assert context[-1] is EOS
        text = bytes(context[:-1])
        assert sequences.log_prefix_weights_1[i] == pytest.approx(log(end1(text)), abs=1e-6)
        assert sequences.log_prefix_weights_2[i] == pytest.approx(log(end2(text)), abs=1e-6)
    drawn = [
        extra["logw"]
        for step in sequences.record.steps
        for extra in step["extras"]
        if extra is not None and not extra.get("cut")
    ]
    assert len(drawn) >= 6
    assert max(abs(w) for w in drawn) < 1e-6


def test_bad_input_is_one_clear_error():
    async def main():
        ens = await ByteEnsemble.create(*toy_pair(), "prod", K=4)
        with pytest.raises(ValueError, match="particle_prefix_log_prob_1, .* missing"):
            EnsembleSMC(direct_token_sampler(ens))

    run(main())
    with pytest.raises(SequencesLengthError, match="2 contexts but 1 values"):
        SequencesExt([[1], [2]], [0.0, 0.0], log_prefix_weights_1=[0.0])
    plain = SequencesExt([[1]], [0.0])
    assert plain.log_prefix_weights_1 is None and plain.log_prefix_weights_2 is None
