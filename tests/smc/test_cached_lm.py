"""CachedCausalLM: LLaMPPL's model interface over a genlm_lab backend."""

import asyncio

import numpy as np

from genlm_lab.smc import CachedCausalLM, LMContext


def test_cached_lm_logprobs_equal_the_backend_async_and_blocking():
    lm = CachedCausalLM.from_pretrained("tiny-random", backend="mock")
    ids = lm.tokenizer.encode("Hello there")
    want = lm.model.next_token_logprobs_sync(ids).numpy()
    got_async = asyncio.run(lm.next_token_logprobs(ids))
    assert isinstance(got_async, np.ndarray)
    np.testing.assert_array_equal(got_async, want)
    np.testing.assert_array_equal(lm.next_token_logprobs_unbatched(ids), want)
    assert lm.backend == "mock" and lm.eos_token_ids == lm.model.eos_token_ids
    assert lm.masks.ALL_TOKENS.sum() == len(lm.byte_vocab)


def test_lm_context_fetches_outside_an_event_loop_as_llamppl_does():
    lm = CachedCausalLM.from_pretrained("tiny-random", backend="mock")
    ctx = LMContext(lm, "Hello")  # no await: read at once, as LLaMPPL code does
    want = lm.next_token_logprobs_unbatched(ctx.tokens).astype(np.float64)
    want -= np.logaddexp.reduce(want)
    np.testing.assert_allclose(ctx.next_token_logprobs, want, atol=1e-5)
