"""The AsyncLM contract on ToyLM and MockAsyncLM: validation, normalisation, sampling."""

import asyncio
import itertools
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from genlm_lab.backend import MockAsyncLM, ToyLM

VOCAB = [b"a", b"b", b"ab", b" ", b"<eos>"]


def toy(**kwargs):
    return ToyLM(VOCAB, eos=b"<eos>", **kwargs)


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 10_000))
def test_toy_sequence_probabilities_sum_to_one_by_exact_enumeration(seed):
    lm = toy(seed=seed)
    total = 0.0
    for seq in itertools.product(range(len(VOCAB)), repeat=3):
        logp = sum(float(lm.next_token_logprobs_sync(seq[:i])[t]) for i, t in enumerate(seq))
        total += math.exp(logp)
    assert abs(total - 1.0) < 1e-5


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(-20, 20), min_size=len(VOCAB), max_size=len(VOCAB)))
def test_toy_normalises_logprobs_fn(values):
    lm = toy(logprobs_fn=lambda ctx: values)
    got = lm.next_token_logprobs_sync([0, 1]).double()
    ref = torch.tensor(values, dtype=torch.float64)
    assert torch.allclose(got, ref - torch.logsumexp(ref, 0), atol=1e-5)


async def test_forbidden_tokens_are_never_sampled():
    lm = toy(logprobs_fn=lambda ctx: [0.0, float("-inf"), 1.0, float("-inf"), 0.5])
    for seed in range(20):
        out = await lm.sample([], max_tokens=5, seed=seed)
        assert not {1, 3} & set(out)


async def test_sample_frequencies_match_the_distribution():
    probs = torch.tensor([0.1, 0.2, 0.3, 0.15, 0.25])
    lm = toy(logprobs_fn=lambda ctx: probs.log().tolist())
    n = 3000
    counts = torch.zeros(len(VOCAB))
    for seed in range(n):
        counts[(await lm.sample([0], max_tokens=1, seed=seed))[0]] += 1
    # Each frequency within 4 standard errors of its probability.
    assert torch.all((counts / n - probs).abs() <= 4 * (probs * (1 - probs) / n).sqrt())


async def test_sample_is_reproducible_stops_at_eos_and_checks_arguments():
    lm = toy(seed=3)
    a = await lm.sample([0], max_tokens=20, seed=7)
    assert a == await lm.sample([0], max_tokens=20, seed=7)
    eos = lm.eos_token_ids[0]
    assert eos not in a[:-1] and (len(a) == 20 or a[-1] == eos)
    assert await lm.sample([0], max_tokens=0) == []
    with pytest.raises(ValueError, match="temperature"):
        await lm.sample([0], max_tokens=3, temperature=0)
    with pytest.raises(ValueError, match="max_tokens"):
        await lm.sample([0], max_tokens=-1)


def test_empty_context_is_valid_without_bos():
    lm = ToyLM(VOCAB)
    assert lm.bos_token_id is None
    lp = lm.next_token_logprobs_sync([])
    assert abs(torch.logsumexp(lp.double(), 0).item()) < 1e-6


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ([0, 5], "outside the vocabulary"),
        ([0, -1], "outside the vocabulary"),
        ([0, 1.0], "not an int"),
        ([0, True], "not an int"),
        ("ab", "sequence of int"),
        (3, "sequence of int"),
    ],
)
@pytest.mark.parametrize("make", [toy, lambda: MockAsyncLM(byte_vocab=VOCAB)])
def test_bad_contexts_raise_one_clear_value_error(make, context, message):
    with pytest.raises(ValueError, match=message):
        make().next_token_logprobs_sync(context)


def test_context_validation_accepts_tensors_and_numpy_ints():
    import numpy as np

    lm = toy()
    assert lm.validate_context(torch.tensor([0, 1])) == (0, 1)
    assert lm.validate_context([np.int64(2)]) == (2,)


def test_context_longer_than_the_model_allows_is_rejected():
    lm = toy()
    lm.max_context_length = 3
    lm.validate_context([0, 1, 2])
    with pytest.raises(ValueError, match="longer than the model allows"):
        lm.validate_context([0, 1, 2, 3])


def test_empty_vocabulary_and_unknown_special_tokens_are_rejected():
    with pytest.raises(ValueError):
        ToyLM([])
    with pytest.raises(ValueError, match="not in the toy vocabulary"):
        ToyLM(VOCAB, eos=b"zzz")
    with pytest.raises(ValueError, match="shape"):
        toy(logprobs_fn=lambda ctx: [0.0]).next_token_logprobs_sync([])


def test_mock_is_a_deterministic_function_of_context_and_seed():
    a, b = MockAsyncLM(byte_vocab=VOCAB), MockAsyncLM(byte_vocab=VOCAB)
    assert torch.equal(a.next_token_logprobs_sync([1, 2]), b.next_token_logprobs_sync([1, 2]))
    assert not torch.equal(a.next_token_logprobs_sync([1, 2]), a.next_token_logprobs_sync([2, 1]))
    c = MockAsyncLM(byte_vocab=VOCAB, seed=1)
    assert not torch.equal(a.next_token_logprobs_sync([1]), c.next_token_logprobs_sync([1]))


def test_mock_over_a_real_tokenizer_has_its_vocabulary(smollm2_tokenizer):
    lm = MockAsyncLM(tokenizer=smollm2_tokenizer)
    assert lm.vocab_size == len(smollm2_tokenizer)
    lp = lm.next_token_logprobs_sync([lm.bos_token_id, 5])
    assert lp.shape == (lm.vocab_size,)
    assert abs(torch.logsumexp(lp.double(), 0).item()) < 1e-4


@pytest.mark.parametrize("make", [toy, lambda: MockAsyncLM(byte_vocab=VOCAB)])
async def test_batch_apis_equal_single_calls(make):
    lm = make()
    contexts = [[0], [1, 2], [0, 4, 3]]
    singles = torch.stack([lm.next_token_logprobs_sync(c) for c in contexts])
    assert torch.equal(lm.batch_next_token_logprobs_sync(contexts), singles)
    assert torch.equal(await lm.batch_next_token_logprobs(contexts), singles)


@pytest.mark.parametrize("make", [toy, lambda: MockAsyncLM(byte_vocab=VOCAB)])
async def test_each_query_scores_one_position_and_reset_stats_zeroes_every_counter(make):
    lm = make()
    lm.next_token_logprobs_sync([0])
    await lm.next_token_logprobs([0, 1])
    lm.batch_next_token_logprobs_sync([[1], [2]])
    assert lm.stats == {"queries": 4, "batches": 4, "cache_hits": 0, "tokens_computed": 4}
    lm.reset_stats()
    assert all(v == 0 for v in lm.stats.values())


def test_toy_tokenizer_round_trips_and_rejects_uncovered_bytes():
    lm = toy()
    ids = lm.tokenizer.encode("ab a b")
    assert b"".join(lm.byte_vocab[i] for i in ids) == b"ab a b"
    assert lm.tokenizer.decode(ids) == "ab a b"
    assert ids[0] == VOCAB.index(b"ab")  # longest match first
    with pytest.raises(ValueError, match="not covered"):
        lm.tokenizer.encode("abc")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(-2, len(VOCAB) + 1), st.booleans()), max_size=8))
def test_validate_context_accepts_exactly_in_vocabulary_ints_of_any_int_type(items):
    lm = toy()
    ids = [np.int64(t) if as_numpy else t for t, as_numpy in items]
    values = [t for t, _ in items]
    if all(0 <= t < len(VOCAB) for t in values):
        got = lm.validate_context(ids)
        assert got == tuple(values) and all(type(t) is int for t in got)
    else:
        with pytest.raises(ValueError, match="outside the vocabulary"):
            lm.validate_context(ids)


# -- bad input gives one clear ValueError (bug hunt) ------------------------------


@pytest.mark.parametrize(
    "context",
    [
        np.array([[0], [1]]),  # 2-D: numpy's own TypeError before
        np.array([[0, 1], [1, 0]]),
        torch.tensor([[0, 1]]),
        np.array([True, False]),
        {0: 1, 1: 0},  # a dict iterates its keys: silently taken as a context before
        {1, 0},  # a set has no order
        [torch.tensor(1.7)],  # a float tensor was truncated to id 1 before
        [np.array([1])],  # a 1-element array was unwrapped before
    ],
)
def test_malformed_contexts_are_one_clear_value_error(context):
    lm = toy()
    with pytest.raises(ValueError, match="token"):
        lm.next_token_logprobs_sync(context)


def test_integer_arrays_and_tensors_are_valid_contexts():
    lm = toy()
    want = lm.next_token_logprobs_sync([0, 1])
    for context in (np.array([0, 1]), torch.tensor([0, 1]), [np.int32(0), torch.tensor(1)]):
        assert torch.equal(lm.next_token_logprobs_sync(context), want)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"temperature": float("nan")},  # torch's 'probability tensor contains nan' before
        {"temperature": float("inf")},  # -inf / inf: NaN for every forbidden token
        {"eos_token_ids": 4},  # TypeError: 'int' object is not iterable
        {"temperature": "1"},
        {"temperature": True},
        {"max_tokens": 2.5},
        {"max_tokens": "3"},
        {"max_tokens": True},
    ],
)
def test_bad_sampling_arguments_are_one_clear_value_error(kwargs):
    lm = toy()
    args = {"max_tokens": 3, "temperature": 1.0, **kwargs}
    with pytest.raises(ValueError, match="temperature|max_tokens|eos_token_ids"):
        asyncio.run(lm.sample([0], **args))


async def test_a_tiny_temperature_samples_the_likeliest_token():
    # every log-prob / 1e-310 overflowed to -inf: torch's 'probability tensor contains nan'
    lm = ToyLM([b"a", b"b", b"c"], logprobs_fn=lambda ctx: [-1.0, -0.5, -math.inf])
    best = int(lm.next_token_logprobs_sync([]).argmax())
    assert await lm.sample([], max_tokens=4, temperature=1e-310, seed=0) == [best] * 4


def test_sample_stops_at_max_context_length_and_keeps_its_tokens():
    lm = toy()
    lm.max_context_length = 5
    for prompt in ([0], [0, 1, 2, 0, 1]):
        out = asyncio.run(lm.sample(prompt, max_tokens=100, eos_token_ids=[], seed=0))
        assert len(out) == 5 + 1 - len(prompt)  # the last query's context is 5 tokens long


def test_batch_of_no_contexts_is_an_empty_matrix():
    for lm in (toy(), MockAsyncLM(byte_vocab=[b"a", b"b", b"c"])):
        assert lm.batch_next_token_logprobs_sync([]).shape == (0, lm.vocab_size)
        assert asyncio.run(lm.batch_next_token_logprobs([])).shape == (0, lm.vocab_size)


def test_toy_logprobs_fn_giving_plus_inf_is_rejected_not_nan():
    lm = ToyLM([b"a", b"b"], logprobs_fn=lambda ctx: [math.inf, 0.0])
    with pytest.raises(ValueError, match=r"\+inf"):
        lm.next_token_logprobs_sync([])


@pytest.mark.parametrize("vocab", [b"ab", "ab", ["a", "b"], [b"a", 3]])
def test_toy_vocab_that_is_not_a_list_of_bytes_is_rejected(vocab):
    # b"ab" was taken as two tokens of 97 and 98 zero bytes before
    with pytest.raises(ValueError, match="vocab"):
        ToyLM(vocab)


@pytest.mark.parametrize("vocab", [b"ab", "ab", ["a", "b"], [b"a", 3]])
def test_mock_vocab_that_is_not_a_list_of_bytes_is_rejected(vocab):
    # a TypeError from deep inside Token that named no vocab entry before
    with pytest.raises(ValueError, match="vocab"):
        MockAsyncLM(byte_vocab=vocab)


def test_a_vocab_given_as_an_iterator_is_read_once_and_whole():
    # ToyLM's check consumed the iterator, leaving an empty vocabulary
    for make in (ToyLM, lambda v: MockAsyncLM(byte_vocab=v)):
        lm = make(iter(VOCAB))
        assert [bytes(t) for t in lm.byte_vocab] == VOCAB


@pytest.mark.parametrize("make", [toy, lambda: MockAsyncLM(byte_vocab=VOCAB)])
def test_deepcopy_of_an_lm_is_the_lm_itself(make):
    import copy

    lm = make()
    holder = {"lm": lm, "tokens": [1, 2]}
    copied = copy.deepcopy(holder)
    assert copied["lm"] is lm
    assert copied["tokens"] == holder["tokens"] and copied["tokens"] is not holder["tokens"]


async def test_batch_sample_equals_seeded_samples_one_by_one():
    # genlm-backend's batch_sample: one continuation per prompt, each as `sample` with the seed
    lm = toy(seed=5)
    prompts = [[0], [1, 2], [3]]
    got = await lm.batch_sample(prompts, max_tokens=6, eos_token_ids=[], temperature=0.7, seed=11)
    want = [await lm.sample(p, 6, [], 0.7, 11) for p in prompts]
    assert got == want and all(len(ids) == 6 for ids in got)
    with pytest.raises(ValueError, match="temperature"):
        await lm.batch_sample(prompts, max_tokens=3, temperature=0)
