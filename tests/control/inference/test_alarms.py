"""control.SMC's alarms: a constraint that fights the model, a runaway, a tiny ESS, a slow factor."""

from __future__ import annotations

import asyncio
import math
import warnings

import numpy as np
from _toys import RegexConstraint

from genlm_lab.backend.toy import ToyLM
from genlm_lab.control import SMC, PromptedLLM, direct_token_sampler


def peaked_llm(vocab, favourite: bytes, gap: float = 20.0) -> PromptedLLM:
    """An LM that puts almost all its mass on `favourite`: the others are `gap` nats below."""
    weights = np.array([0.0 if v == favourite else -gap for v in vocab])
    rows = weights - np.logaddexp.reduce(weights)
    return PromptedLLM(ToyLM(list(vocab), logprobs_fn=lambda ids: rows, eos=vocab[-1]))


def kinds(seqs) -> set[str]:
    return {kind for _, kind, _ in seqs.alarms}


def run(smc, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return asyncio.run(smc(*args, **kw))


def test_a_constraint_that_fights_the_model_raises_low_mass():
    llm = peaked_llm([b"a", b"c", b"<eos>"], b"a")
    only_c = RegexConstraint(llm.vocab, rb"c*")
    seqs = run(SMC(direct_token_sampler(llm * only_c)), 4, 0.5, 4, seed=0)
    assert "low_mass" in kinds(seqs)
    step, _, sentence = next(a for a in seqs.alarms if a[1] == "low_mass")
    mass = 2 * math.exp(-20) / (1 + 2 * math.exp(-20))  # "c" and EOS (c* takes "") allowed
    assert step == 1 and f"median mass of {mass:.2g}" in sentence
    assert math.isclose(seqs.record.steps[0]["extras"][0]["logZ"], math.log(mass), abs_tol=1e-5)
    # the same constraint with the model on its side: no alarm
    agreeing = run(SMC(direct_token_sampler(llm * RegexConstraint(llm.vocab, rb"a*"))), 4, 0.5, 4)
    assert "low_mass" not in kinds(agreeing)


def test_a_model_that_pads_forever_raises_a_whitespace_runaway():
    llm = peaked_llm([b" ", b"x", b"<eos>"], b" ", gap=8.0)
    seqs = run(SMC(direct_token_sampler(llm)), 4, 0.5, 40, seed=0)
    assert "runaway" in kinds(seqs)
    sentence = next(s for _, k, s in seqs.alarms if k == "runaway")
    assert "whitespace runaway" in sentence
    assert "max_tokens" in kinds(seqs)  # and the budget ends them
