"""KL metrics against the exact KL of small distributions written out by hand."""

from __future__ import annotations

import asyncio
import math

import numpy as np
import pytest

from genlm_lab.control import (
    EOS,
    Potential,
    Sequences,
    effective_sample_size,
    kl_divergence_direct,
    kl_divergence_potentials,
    kl_divergence_sequences,
    perplexity_from_kl,
)

P = {"w": 0.5, "x": 0.25, "y": 0.125, "z": 0.125}
Q = {"w": 0.1, "x": 0.2, "y": 0.3, "z": 0.4}


def run(coro):
    return asyncio.run(coro)


def _kl(p: dict, q: dict) -> float:
    return sum(pv * math.log(pv / q[k]) for k, pv in p.items() if pv > 0)


class Table:
    """A model over a finite set: `log_prob(batch)` looks each sample up."""

    def __init__(self, probs: dict) -> None:
        self.probs = probs

    def log_prob(self, batch):
        return [math.log(self.probs[x]) if self.probs.get(x, 0) > 0 else -math.inf for x in batch]


def test_direct_equals_the_exact_kl_on_samples_in_exact_proportion():
    samples = ["w"] * 4 + ["x"] * 2 + ["y", "z"]  # P's probabilities, exactly (eighths)
    for batch_size in (1, 3, 32):
        assert kl_divergence_direct(Table(P), Table(Q), samples, batch_size) == pytest.approx(
            _kl(P, Q)
        )
    assert kl_divergence_direct(Table(P), Table(P), samples) == 0.0
    assert perplexity_from_kl(_kl(P, Q)) == pytest.approx(math.exp(_kl(P, Q)))


def test_direct_on_random_samples_from_p_is_within_four_standard_errors():
    rng = np.random.default_rng(0)
    keys = list(P)
    samples = [keys[i] for i in rng.choice(len(keys), size=4000, p=list(P.values()))]
    ratios = np.array([math.log(P[x] / Q[x]) for x in samples])
    se = ratios.std(ddof=1) / math.sqrt(len(ratios))
    assert abs(kl_divergence_direct(Table(P), Table(Q), samples) - _kl(P, Q)) < 4 * se


def test_direct_refuses_bad_input_and_is_infinite_where_q_misses_a_sample():
    assert kl_divergence_direct(Table(P), Table({"w": 1.0}), ["w", "x"]) == math.inf
    with pytest.raises(ValueError, match="at least one sample"):
        kl_divergence_direct(Table(P), Table(Q), [])
    with pytest.raises(ValueError, match="batch_size must be a positive int"):
        kl_divergence_direct(Table(P), Table(Q), ["w"], batch_size=0)
    with pytest.raises(ValueError, match="probability zero under P"):
        kl_divergence_direct(Table({"w": 1.0}), Table({"w": 1.0}), ["x"])

    class Short(Table):
        def log_prob(self, batch):
            return [0.0]

    with pytest.raises(ValueError, match="model_q.log_prob returned 1 values for a batch of 2"):
        kl_divergence_direct(Table(P), Short(Q), ["w", "x"])


class SequenceTable(Potential):
    """Normalised log-probabilities of a few byte-token sequences; `tokenize` reads text."""

    def __init__(self, probs: dict[str, float]) -> None:
        super().__init__([b"a", b"b"])
        self.probs = probs

    async def complete(self, context):
        p = self.probs.get(b"".join(context).decode(), 0.0)
        return math.log(p) if p > 0 else -math.inf

    async def prefix(self, context):
        head = b"".join(context).decode()
        total = sum(p for s, p in self.probs.items() if s.startswith(head))
        return math.log(total) if total > 0 else -math.inf

    def tokenize(self, text: str) -> list[bytes]:
        return [bytes([c]) for c in text.encode()]


def test_potentials_equal_the_exact_kl_and_read_strings_through_tokenize():
    p = {"": 0.25, "a": 0.25, "ab": 0.5}
    q = {"": 0.5, "a": 0.125, "ab": 0.25, "b": 0.125}
    samples = [[], [b"a"], [b"a", b"b"], [b"a", b"b"]]  # p's probabilities, exactly
    got = run(kl_divergence_potentials(SequenceTable(p), SequenceTable(q), samples))
    assert got == pytest.approx(_kl(p, q))
    texts = run(kl_divergence_potentials(SequenceTable(p), SequenceTable(q), ["", "a", "ab", "ab"]))
    assert texts == pytest.approx(got)
    with pytest.raises(ValueError, match="at least one sample"):
        run(kl_divergence_potentials(SequenceTable(p), SequenceTable(q), []))
    with pytest.raises(ValueError, match="must be a Potential"):
        run(kl_divergence_potentials(SequenceTable(p), Table(q), [[]]))


def _seqs(weights: dict[str, float]) -> Sequences:
    """Particles, one per text (two for the first), with unnormalised weights `weights`."""
    texts = list(weights)
    contexts = [[bytes([c]) for c in t.encode()] + [EOS] for t in [texts[0], *texts]]
    logs = [math.log(weights[texts[0]] / 2)] * 2 + [math.log(weights[t]) for t in texts[1:]]
    return Sequences(contexts, logs)


def test_sequences_equal_the_exact_kl_between_the_two_posteriors():
    p = {"a": 2.0, "b": 1.0, "ab": 1.0}  # normalised: 1/2, 1/4, 1/4
    q = {"a": 1.0, "b": 2.0, "ab": 5.0}
    pn = {k: v / 4 for k, v in p.items()}
    qn = {k: v / 8 for k, v in q.items()}
    assert kl_divergence_sequences(_seqs(p), _seqs(q)) == pytest.approx(_kl(pn, qn))
    assert kl_divergence_sequences(_seqs(p), _seqs(q), decoded=False) == pytest.approx(_kl(pn, qn))
    # a text Q's run never produced counts with probability `floor`
    missing = kl_divergence_sequences(_seqs(p), _seqs({"a": 1.0, "b": 1.0}), floor=1e-6)
    want = 0.5 * math.log(0.5 / 0.5) + 0.25 * math.log(0.25 / 0.5) + 0.25 * math.log(0.25 / 1e-6)
    assert missing == pytest.approx(want)
    with pytest.raises(ValueError, match="floor must be in"):
        kl_divergence_sequences(_seqs(p), _seqs(q), floor=0.0)
    dead = Sequences([[b"a", EOS]], [-math.inf])
    with pytest.raises(ValueError, match="sequences2 has no sequence of positive weight"):
        kl_divergence_sequences(_seqs(p), dead)


def test_effective_sample_size_is_one_over_the_sum_of_squared_weights():
    seqs = _seqs({"a": 2.0, "b": 1.0, "ab": 1.0})
    w = np.array([1.0, 1.0, 1.0, 1.0]) / 4  # the first text's weight 2 is split in two
    assert effective_sample_size(seqs) == pytest.approx(1 / (w**2).sum())
