"""Conditional SMC and particle Gibbs on toys: the kernel built exactly, and checked against pi.

pi is the target restricted to max_tokens (times the critic), enumerated
with `exact_completions`. The particle-Gibbs kernel K(z, y) (retain z, run
one sweep, pick y by weight) is built exactly by walking every random
choice of a sweep through the samplers' `draw=` hook (`_enumerate.py`):
the free particles' tokens, the resampled ancestors and the final pick.
Then pi K = pi to rounding, K > 0 everywhere (so pi is its only stationary
law), while plain SMC's pick and a kernel with a wrongly weighed retained
token miss pi by far more than rounding. A seeded chain without the hook
then matches the enumerated K within a bound set by its sample size.
"""

from __future__ import annotations

import asyncio
import math
import warnings

import numpy as np
import pytest
from _enumerate import enumerate_runs
from _toys import (
    LengthCritic,
    RegexConstraint,
    exact_completions,
    normalise,
    toy_llm,
    tv_distance,
)

import genlm_lab.control.inference.gibbs as gibbs_module
import genlm_lab.smc.csmc as csmc_module
import genlm_lab.smc.inference as smc_module
from genlm_lab.control import (
    AWRS,
    EOS,
    SMC,
    BoolFSA,
    DirectTokenSampler,
    ParticleGibbs,
    RetainedTokenSampler,
    Tempered,
    direct_token_sampler,
)
from genlm_lab.control.core.tokens import draw_index

VOCAB = [b"a", b"b", b"c", b"<eos>"]
PATTERN = rb"(ab|b|c)*"  # after a, only b: a particle that writes "ba" and is cut dies
MAX_TOKENS = 3
_DRAW: dict = {}  # the enumerator's draw for the run being walked


def run(coro):
    return asyncio.run(coro)


class Scripted(DirectTokenSampler):
    """The direct sampler with each free draw made by the enumerator (the retained one is forced)."""

    async def sample_with_info(self, context, draw=None):
        return await super().sample_with_info(context, draw if draw is not None else _DRAW["draw"])


class WrongForce(Scripted):
    """A deliberate bug: the retained token weighed by its own weight, not as a draw would be."""

    async def sample_with_info(self, context, draw=None):
        token, logw, logp, info = await super().sample_with_info(context, draw)
        if draw is not None:
            logw = float((await self.target.logw_next(list(context)))[token])
        return token, logw, logp, info


def scripted_resample(log_weights, n, method="multinomial", rng=None):
    """Multinomial resampling as n independent draws through the enumerator."""
    assert method == "multinomial"
    log_weights = np.asarray(log_weights, dtype=float)
    keys = list(range(len(log_weights)))
    return np.array([draw_index(log_weights, keys, rng, _DRAW["draw"]) for _ in range(n)])


@pytest.fixture
def enumerated(monkeypatch):
    """Route every resampling (csmc's, plain SMC's, the chain's pick) through the enumerator."""
    for module in (csmc_module, smc_module, gibbs_module):
        monkeypatch.setattr(module, "resample", scripted_resample)


def _toy(critic: bool, budget: bool):
    llm = toy_llm(vocab=VOCAB)
    tempered = Tempered(llm, 0.3)  # a flat pi, so a wrong kernel shows
    if budget:  # an automaton can finish: the run's budget wraps the retained sampler
        condition = BoolFSA.from_regex(PATTERN.decode()).coerce(llm, f=b"".join)
    else:
        condition = RegexConstraint(llm.vocab, PATTERN)
    return llm, tempered * condition, LengthCritic(llm.vocab, -1.0) if critic else None


async def _kernel_row(pg: ParticleGibbs, z, ess: float, budget: bool) -> dict:
    """K(z, .) exactly: every outcome of one sweep around z, with its probability."""
    rng = np.random.default_rng(0)  # only seeds the sweep; every choice goes through `draw`

    async def one(draw):
        _DRAW["draw"] = draw
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # plain SMC's all-dead runs warn
                path, _, _ = await pg.step(z, 2, ess, MAX_TOKENS, rng, budget=budget)
        except ValueError:  # plain SMC only: every particle died, nothing to pick
            return None
        return tuple(path)

    row: dict = {}
    for prob, path in await enumerate_runs(one):
        row[path] = row.get(path, 0.0) + prob
    return row


async def _kernel(sampler, critic, ess, budget):
    """pi, and K's rows {z: K(z, .)} over pi's support."""
    target = sampler.target if critic is None else sampler.target * critic
    pi = normalise(await exact_completions(target, MAX_TOKENS))
    pg = ParticleGibbs(sampler, critic)
    return pi, {z: await _kernel_row(pg, list(z), ess, budget) for z in pi}


_KERNELS: dict = {}  # the first configuration's K, which the seeded chain is checked against


def _kernel_of(ess, critic, budget, proposal):
    key = (ess, critic, budget, proposal)
    if key not in _KERNELS:
        llm, target, crit = _toy(critic, budget)
        sampler = Scripted(target, proposal=llm if proposal else None)
        _KERNELS[key] = run(_kernel(sampler, crit, ess, budget))
    return _KERNELS[key]


def _pi_k(pi: dict, rows: dict) -> dict:
    out: dict = {}
    for z, pz in pi.items():
        for y, k in rows[z].items():
            out[y] = out.get(y, 0.0) + pz * k
    return out


@pytest.mark.parametrize(
    "ess, critic, budget, proposal",
    [(1.0, True, False, False), (0.8, False, True, True)],
    ids=["resampling-always-critic", "adaptive-budget-proposal"],
)
def test_particle_gibbs_kernel_leaves_the_exact_posterior_invariant(
    enumerated, ess, critic, budget, proposal
):
    pi, rows = _kernel_of(ess, critic, budget, proposal)
    assert len(pi) == 8
    states = list(pi)
    matrix = np.array([[rows[z].get(y, 0.0) for y in states] for z in states])
    assert np.allclose(matrix.sum(axis=1), 1.0, atol=1e-12)  # no mass outside pi's support
    pi_vec = np.array([pi[y] for y in states])
    assert np.abs(pi_vec @ matrix - pi_vec).max() < 1e-12  # pi K = pi
    assert (matrix > 0).all()  # irreducible and aperiodic: pi is its only stationary law
    values, vectors = np.linalg.eig(matrix.T)
    stationary = np.real(vectors[:, np.argmin(np.abs(values - 1))])
    assert np.abs(stationary / stationary.sum() - pi_vec).max() < 1e-9
    # the same check catches one plain run's pick (no retained path; 2 particles, no
    # resampling, as enumerating resampling with two free particles takes seconds): biased
    llm, target, crit = _toy(critic, budget)
    sampler = Scripted(target, proposal=llm if proposal else None)
    plain = run(_kernel_row(ParticleGibbs(sampler, crit), None, 0.0, budget))
    assert abs(sum(plain.values()) - 1) < 1e-12
    assert tv_distance(plain, pi) > 0.2  # 0.31 or 0.49 here; pi K is pi to 1e-16


def test_a_wrongly_weighed_retained_token_breaks_the_invariance(enumerated):
    llm, target, critic = _toy(True, False)
    # no resampling (ESS threshold 0), which keeps the walk short: the pick alone shows it
    pi, rows = run(_kernel(WrongForce(target), critic, 0.0, False))
    assert tv_distance(_pi_k(pi, rows), pi) > 0.1  # 0.19; 1e-16 when weighed as a draw
    assert abs(sum(_pi_k(pi, rows).values()) - 1) < 1e-12


def _tv_bound(law: dict, n: int, delta: float = 1e-4) -> float:
    """TV(empirical of n draws, law) stays below this with probability 1 - delta.

    E[TV] <= sum_y sqrt(p_y (1 - p_y) / n) / 2 (Jensen), and TV moves by at
    most 1/n when one draw changes, so McDiarmid adds sqrt(log(1/delta) / (2n)).
    """
    mean = 0.5 * sum(math.sqrt(p * (1 - p) / n) for p in law.values())
    return mean + math.sqrt(math.log(1 / delta) / (2 * n))


def test_a_seeded_chain_follows_the_enumerated_kernel(monkeypatch):
    llm, target, critic = _toy(True, False)
    with monkeypatch.context() as patched:  # K exactly, with the enumerator
        for module in (csmc_module, smc_module, gibbs_module):
            patched.setattr(module, "resample", scripted_resample)
        pi, rows = _kernel_of(1.0, True, False, False)
    z0 = min(pi, key=pi.get)  # the least likely path: two sweeps do not forget it
    two = {}
    for y, k in rows[z0].items():
        for x, k2 in rows[y].items():
            two[x] = two.get(x, 0.0) + k * k2
    pg = ParticleGibbs(direct_token_sampler(target), critic)

    async def chains(n):
        ends = []
        for seed in range(n):
            chain = await pg(2, 1.0, MAX_TOKENS, 2, initial=list(z0), seed=seed, budget=False)
            ends.append(tuple(chain.paths[-1]))
        return ends

    n = 250
    ends = run(chains(n))
    seen = {y: ends.count(y) / n for y in set(ends)}
    bound = _tv_bound(two, n)  # 0.18 here; the seeded chains' TV is about 0.02
    assert tv_distance(seen, two) < bound, (tv_distance(seen, two), bound)
    assert tv_distance(two, pi) > 0.02  # after two sweeps the start still shows
    assert tv_distance({z0: 1.0}, two) > bound  # a chain that never moved would fail


def test_the_retained_particle_survives_every_resampling():
    llm, target, critic = _toy(True, False)
    pi = normalise(run(exact_completions(target * critic, MAX_TOKENS)))
    z = list(min(pi, key=pi.get))
    smc = SMC(direct_token_sampler(target), critic)
    resampled = 0
    for seed in range(6):
        seqs = run(smc(4, 1.0, MAX_TOKENS, retained_sequence=z, seed=seed))
        assert seqs.contexts[0] == z
        steps = seqs.record.steps
        assert [s["retained"] for s in steps] == [0] * len(steps)
        assert all(s["ancestors"][0] == 0 for s in steps if s["resampled"])
        resampled += sum(s["resampled"] for s in steps)
        texts = [s["contents"][0] for s in steps]
        assert texts == [b"".join(z[: t + 1][: len(z) - 1]).decode() for t in range(len(steps))]
    assert resampled >= 6  # resampling did happen, and slot 0 came through each time


def test_bad_retained_paths_get_one_clear_error():
    llm, target, critic = _toy(True, False)
    smc = SMC(direct_token_sampler(target), critic)
    a, b, c = llm.vocab[:3]
    with pytest.raises(ValueError, match="weight zero"):  # "ba" is no match of the pattern
        run(smc(2, 0.5, MAX_TOKENS, retained_sequence=[b, a, EOS]))
    with pytest.raises(ValueError, match="more than max_tokens=3"):
        run(smc(2, 0.5, MAX_TOKENS, retained_sequence=[b, b, b, EOS]))
    with pytest.raises(ValueError, match="not in the vocabulary"):
        run(smc(2, 0.5, MAX_TOKENS, retained_sequence=[b"zz", EOS]))
    with pytest.raises(ValueError, match="not the last"):
        run(smc(2, 0.5, MAX_TOKENS, retained_sequence=[EOS, b]))
    with pytest.raises(ValueError, match="multinomially"):
        run(smc(2, 0.5, MAX_TOKENS, retained_sequence=[c, EOS], resampling_method="systematic"))
    pg = ParticleGibbs(direct_token_sampler(target), critic)
    with pytest.raises(ValueError, match="n_particles >= 2"):
        run(pg(1, 0.5, MAX_TOKENS, 3, initial=[c, EOS]))
    with pytest.raises(ValueError, match="ending with EOS"):
        run(pg(2, 0.5, MAX_TOKENS, 3, initial=[c]))
    with pytest.raises(ValueError, match="n_iterations must be >= 1"):
        run(pg(2, 0.5, MAX_TOKENS, 0, initial=[c, EOS]))
    with pytest.raises(ValueError, match="cannot force"):
        RetainedTokenSampler(AWRS(llm, RegexConstraint(llm.vocab, PATTERN)), [c, EOS])


def test_a_chain_starts_from_plain_smc_and_reports_its_moves():
    llm, target, critic = _toy(True, False)
    pg = ParticleGibbs(direct_token_sampler(target), critic)
    chain = run(pg(3, 0.5, MAX_TOKENS, 20, seed=1))
    support = set(run(exact_completions(target * critic, MAX_TOKENS)))
    assert len(chain.paths) == len(chain.picked) == 20
    assert {tuple(p) for p in chain.paths} <= support
    assert 0 < chain.moved <= 1
    assert abs(sum(chain.posterior(burn_in=5).values()) - 1) < 1e-12
    assert chain.last.record.steps[-1]["retained"] == 0
    assert chain.paths == run(pg(3, 0.5, MAX_TOKENS, 20, seed=1)).paths  # seeded


def test_a_forced_token_is_weighed_as_a_free_draw_of_it_and_zero_stays_zero():
    llm, target, _ = _toy(False, False)
    a, b = llm.vocab[:2]

    def sampler(seed=None):  # proposing from the LM: a weight that depends on the token
        return direct_token_sampler(target, seed=seed, proposal=llm)

    async def go():
        free = {}
        for seed in range(20):  # free draws after "c": each token's weight, by the base alone
            token, logw, _ = await sampler(seed).sample([llm.vocab[2]])
            free[token] = logw
        c = llm.vocab[2]
        wrapper = RetainedTokenSampler(sampler(), [c, b, a])
        forced = await wrapper.sample_with_info([c], draw=wrapper.retained_draw([c]))
        wrong = RetainedTokenSampler(sampler(), [a, a])  # after "a" only "b" can match
        dead = await wrong.sample_with_info([a], draw=wrong.retained_draw([a]))
        return free, forced, dead, wrapper.retained_draw([a, b, a])

    free, forced, dead, past = run(go())
    assert len(free) >= 2 and len(set(free.values())) >= 2  # the weights differ by token
    assert forced[0] == b and forced[1] == pytest.approx(free[b])
    assert dead[0] == a and dead[1] == -math.inf
    assert past is None  # past the path's end the draws are free
