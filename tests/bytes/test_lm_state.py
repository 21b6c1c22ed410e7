"""StatefulTokenizedLM: an immutable token context over an AsyncLM."""

from __future__ import annotations

import asyncio

import pytest
import torch

from genlm_lab.backend.toy import ToyLM
from genlm_lab.bytes import StatefulTokenizedLM


def test_shift_appends_and_logp_next_is_the_models():
    lm = ToyLM([b"<s>", b"a", b"b"], seed=1, bos=b"<s>")
    s0 = StatefulTokenizedLM.initial(lm)
    assert s0.context == (0,)
    s2 = s0 << 1 << 2
    assert s2.context == (0, 1, 2) and s0.context == (0,)
    got = asyncio.run(s2.logp_next())
    assert torch.equal(got, lm.next_token_logprobs_sync([0, 1, 2]))
    assert s2.n_calls == 1
    assert s2.tokens == (b"<s>", b"a", b"b")


def test_without_bos_the_initial_context_is_empty():
    lm = ToyLM([b"a", b"b"], seed=1)
    assert StatefulTokenizedLM.initial(lm).context == ()


def test_max_context_length_keeps_the_first_token_and_the_newest():
    lm = ToyLM([b"<s>", b"a", b"b"], seed=1, bos=b"<s>")
    s = StatefulTokenizedLM.initial(lm, max_context_length=3)
    for t in [1, 2, 1, 2]:
        s = s << t
        assert len(s.context) <= 3
    assert s.context == (0, 1, 2)


@pytest.mark.parametrize("bad", [-1, 3, "a", 1.5])
def test_bad_token_raises_value_error(bad):
    lm = ToyLM([b"a", b"b", b"c"], seed=1)
    with pytest.raises(ValueError, match="token"):
        StatefulTokenizedLM.initial(lm) << bad
