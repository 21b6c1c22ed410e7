"""Distributions: normalised log-probs, sample frequencies matching them."""

import math

import numpy as np
import pytest

from genlm_lab.backend import ToyLM
from genlm_lab.smc import Bernoulli, Geometric, LogCategorical, TokenCategorical, Transformer
from genlm_lab.smc.rng import using_rng


async def _frequencies(dist, n, key=lambda x: x):
    counts = {}
    with using_rng(np.random.default_rng(0)):
        for _ in range(n):
            x, log_p = await dist.sample()
            assert log_p == pytest.approx(await dist.log_prob(x))
            counts[key(x)] = counts.get(key(x), 0) + 1
    return {k: v / n for k, v in counts.items()}


async def test_bernoulli_log_probs_and_frequencies():
    d = Bernoulli(0.3)
    assert math.exp(await d.log_prob(True)) + math.exp(await d.log_prob(False)) == pytest.approx(1)
    freq = await _frequencies(d, 4000)
    assert freq[True] == pytest.approx(0.3, abs=0.03)
    assert await Bernoulli(0.0).log_prob(True) == -math.inf


async def test_geometric_counts_failures_before_success():
    d = Geometric(0.4)
    total = sum([math.exp(await d.log_prob(k)) for k in range(200)])
    assert total == pytest.approx(1.0)
    assert math.exp(await d.log_prob(2)) == pytest.approx(0.4 * 0.6**2)
    assert await d.log_prob(-1) == -math.inf
    freq = await _frequencies(d, 4000)
    assert freq[0] == pytest.approx(0.4, abs=0.03)
    assert freq[1] == pytest.approx(0.24, abs=0.03)


async def test_log_categorical_normalises_and_ranks():
    d = LogCategorical([0.0, math.log(3.0), -math.inf])
    assert [math.exp(await d.log_prob(i)) for i in range(3)] == pytest.approx([0.25, 0.75, 0])
    assert (await d.argmax(0))[0] == 1
    freq = await _frequencies(d, 4000)
    assert freq[1] == pytest.approx(0.75, abs=0.03) and 2 not in freq


async def test_token_categorical_and_transformer_on_a_toy_lm():
    lm = ToyLM([b"a", b"b", b"c"], logprobs_fn=lambda ctx: [0.0, 1.0, 2.0])
    d = TokenCategorical(lm, [0.0, 0.0, math.log(2.0)])
    assert math.exp(await d.log_prob(2)) == pytest.approx(0.5)
    token, _ = await d.sample()
    assert bytes(token) in {b"a", b"b", b"c"}
    t = Transformer(lm, [0], temp=0.5)
    want = np.exp(np.array([0.0, 2.0, 4.0]) - np.logaddexp.reduce([0.0, 2.0, 4.0]))
    got = [math.exp(await t.log_prob(i)) for i in range(3)]
    assert got == pytest.approx(want.tolist())
    freq = await _frequencies(t, 3000, key=lambda tok: tok.token_id)
    assert freq[2] == pytest.approx(want[2], abs=0.03)


def test_invalid_parameters_raise_value_error():
    with pytest.raises(ValueError, match="Bernoulli"):
        Bernoulli(1.5)
    with pytest.raises(ValueError, match="Geometric"):
        Geometric(0.0)
    with pytest.raises(ValueError, match="temperature"):
        Transformer(ToyLM([b"a"]), [0], temp=0)


def test_sample_weighted_follows_weights_and_skips_zeros():
    from scipy import stats

    from genlm_lab.smc.distributions import sample_weighted

    rng = np.random.default_rng(0)
    weights = np.zeros(700, dtype=np.float32)  # blocks of 256: two full, one partial
    picks = [3, 255, 256, 511, 600, 699]
    weights[picks] = [1.0, 2.0, 0.5, 3.0, 1e-3, 1.5]
    counts = np.zeros(700)
    for _ in range(8000):
        counts[sample_weighted(weights, rng)] += 1
    assert counts[weights == 0].sum() == 0
    p = weights[picks].astype(np.float64) / weights[picks].astype(np.float64).sum()
    assert stats.chisquare(counts[picks], p * 8000).pvalue > 1e-3
    with pytest.raises(ValueError, match="summing to 0"):
        sample_weighted(np.zeros(10, dtype=np.float32), rng)


@pytest.mark.parametrize("x", [0.5, "no", "", None, [1], 2])
async def test_bernoulli_gives_values_other_than_true_and_false_probability_zero(x):
    # Truthiness read "no" and 0.5 as True and None as False.
    assert await Bernoulli(0.3).log_prob(x) == -math.inf


async def test_bernoulli_reads_one_and_zero_as_true_and_false():
    d = Bernoulli(0.3)
    assert await d.log_prob(1) == await d.log_prob(True) == await d.log_prob(np.True_)
    assert await d.log_prob(0.0) == await d.log_prob(False) == pytest.approx(math.log(0.7))


@pytest.mark.parametrize("x", [1.7, "1", None, True])
async def test_log_categorical_gives_non_indices_probability_zero(x):
    # int(x) read 1.7, "1" and True as the index 1 (and None raised TypeError).
    assert await LogCategorical([0.0, 1.0]).log_prob(x) == -math.inf


async def test_log_categorical_reads_integral_values_of_any_int_type():
    d = LogCategorical([0.0, 1.0])
    want = 1.0 - np.logaddexp(0.0, 1.0)
    for x in (1, np.int64(1), 1.0):
        assert await d.log_prob(x) == pytest.approx(want)


@pytest.mark.parametrize(
    ("logits", "match"),
    [
        ([], "no logits"),
        ([math.nan, 0.0], "logit 0 is nan"),
        ([0.0, math.inf], "logit 1 is inf"),
        ([-math.inf, -math.inf], "no finite value"),
    ],
)
def test_bad_logits_raise_one_value_error_naming_the_problem(logits, match):
    with pytest.raises(ValueError, match=match):
        LogCategorical(logits)


@pytest.mark.parametrize("temp", [math.inf, math.nan, -1.0])
async def test_transformer_refuses_a_temperature_that_is_not_finite_and_positive(temp):
    # temp=inf divided every log-prob to 0: a silent uniform distribution.
    with pytest.raises(ValueError, match="temperature"):
        Transformer(ToyLM([b"a", b"b"]), [0], temp=temp)


def test_transformer_reads_prompts_like_lm_context():
    """Text, ids and Tokens name the same context; an empty prompt gets BOS where needed."""
    from genlm_lab.backend import load_model_by_name
    from genlm_lab.smc import LMContext

    lm = load_model_by_name("tiny-random", backend="hf")
    ids = list(lm.tokenizer.encode("hello world"))
    tokens = [lm.byte_vocab[i] for i in ids]
    for prompt in ("hello world", ids, tokens, []):
        assert Transformer(lm, prompt).prompt == LMContext(lm, prompt).tokens
    assert Transformer(lm, []).prompt == [lm.bos_token_id]
