"""The certified interval [logZ, logZ_upper] against exact enumeration on toy vocabularies."""

from __future__ import annotations

import asyncio
import math
import warnings

import pytest
from bytes_oracle import log, make_oracle
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_beam import EOS_TOKEN, toy_cases

from genlm_lab.bytes import BeamParams, ByteBeamState, EmptyBeamError
from genlm_lab.bytes.interval import IntervalWarning, keep_for_width

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


async def read_all(beam: ByteBeamState, text: bytes, with_logp: bool) -> ByteBeamState:
    for b in text:
        beam = beam.prune()
        if with_logp:
            await beam.logp_next()
        beam = await (beam << b)
    return beam


@SETTINGS
@given(
    toy_cases(prefix_closed=True),
    st.integers(1, 4),
    st.sampled_from([0.0, 0.05, 0.3]),
    st.sampled_from([0.0, 0.01, 0.2]),
    st.booleans(),
)
def test_exact_log_probability_lies_in_the_certified_interval(case, K, prune, extend, with_logp):
    lm, text = case
    eos_id = len(lm.byte_vocab) - 1
    prefix_prob, _ = make_oracle(lm, eos_ids=(eos_id,))
    params = BeamParams(
        K=K, prune_threshold=prune, extend_threshold=extend, eos_byte_strings=[EOS_TOKEN]
    )

    async def go():
        beam = await ByteBeamState.initial(lm, params)
        try:
            return await read_all(beam, text, with_logp)
        except EmptyBeamError:
            return None

    beam = asyncio.run(go())
    exact = log(prefix_prob((), text))
    if beam is None:
        return
    assert beam.logZ <= exact + 1e-6
    assert exact <= beam.logZ_upper + 1e-6
    # every step's record holds the interval of its own prefix
    for step in beam.history[1:]:
        want = log(prefix_prob((), text[: step.position]))
        assert step.logZ <= want + 1e-6 <= step.logZ_upper + 2e-6


@SETTINGS
@given(toy_cases(prefix_closed=True), st.integers(1, 3))
def test_prefill_interval_holds_with_eos_tokens_read_as_ordinary_tokens(case, K):
    lm, text = case
    prefix_prob, _ = make_oracle(lm, eos_ids=())

    async def go():
        beam = await ByteBeamState.initial(lm, BeamParams(K=K, eos_byte_strings=[EOS_TOKEN]))
        return await beam.prefill(text)

    beam = asyncio.run(go())
    exact = log(prefix_prob((), text))
    assert beam.logZ <= exact + 1e-6 <= beam.logZ_upper + 2e-6


@SETTINGS
@given(toy_cases())
def test_without_dropping_the_interval_is_a_point(case):
    lm, text = case

    async def go():
        beam = await ByteBeamState.initial(lm, BeamParams(K=10_000, eos_byte_strings=[EOS_TOKEN]))
        return await read_all(beam, text, with_logp=True)

    beam = asyncio.run(go())
    assert beam.width == 0.0
    assert beam.logZ_upper == beam.logZ
    assert all(step.logZ_upper == step.logZ for step in beam.history)


@SETTINGS
@given(toy_cases(prefix_closed=True), st.sampled_from([0.05, 0.5, 2.0]))
def test_widen_keeps_the_interval_within_max_width_up_to_four_times_k(case, max_width):
    lm, text = case
    params = BeamParams(K=1, max_width=max_width, on_wide="widen", eos_byte_strings=[EOS_TOKEN])
    prefix_prob, _ = make_oracle(lm, eos_ids=(len(lm.byte_vocab) - 1,))

    async def go():
        beam = await ByteBeamState.initial(lm, params)
        widths = []
        for b in text:
            before = len(beam)
            beam = beam.prune()
            if len(beam) < min(before, 4):  # below the cap of 4K candidates
                widths.append(beam.width)
            await beam.logp_next()
            beam = await (beam << b)
        return beam, widths

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IntervalWarning)
        beam, widths = asyncio.run(go())
    assert max(widths, default=0.0) <= max_width + 1e-6
    assert beam.logZ <= log(prefix_prob((), text)) + 1e-6 <= beam.logZ_upper + 2e-6


async def test_a_wide_interval_warns_once_naming_the_width():
    from genlm_lab.backend.toy import ToyLM

    lm = ToyLM([b"a", b"aa", b"b", b"ab"], seed=5)
    beam = await ByteBeamState.initial(lm, BeamParams(K=1, max_width=1e-6))
    with pytest.warns(IntervalWarning, match="nats wide") as caught:
        await read_all(beam, b"aaba", with_logp=True)
    assert len(caught) == 1


def test_keep_for_width_adds_back_the_heaviest_until_the_width_fits():
    weights = [math.log(0.5), math.log(0.3), math.log(0.2)]
    # keeping only the first: width log(1/0.5) = 0.69 > 0.4, so 0.3 comes back
    assert keep_for_width(weights, [0], -math.inf, 0.4) == [0, 1]
    assert keep_for_width(weights, [0], -math.inf, 1.0) == [0]
    assert keep_for_width(weights, [0], math.log(10.0), 0.1) == [0, 1, 2]  # cannot fit: all


@pytest.mark.parametrize(
    "kwargs", [{"max_width": 0}, {"max_width": -1.0}, {"max_width": "1"}, {"on_wide": "x"}]
)
def test_bad_width_options_raise_value_error(kwargs):
    with pytest.raises(ValueError, match="max_width|on_wide"):
        BeamParams(K=2, **kwargs)
