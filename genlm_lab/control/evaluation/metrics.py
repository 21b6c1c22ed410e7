"""Evaluation metrics: KL divergence estimates between models, potentials and SMC runs.

genlm-control's `evaluation.metrics` names. KL(P || Q) = E_P[log P(x) - log Q(x)]:
`kl_divergence_direct` and `kl_divergence_potentials` estimate it by the mean
log-ratio over samples drawn from P (unbiased when they are; the potentials'
`complete` must be normalised log-probabilities for the number to be a KL
rather than a KL shifted by log Z_Q - log Z_P), and `kl_divergence_sequences`
computes it exactly between two runs' posteriors, the plug-in estimate of the
divergence between the distributions they approximate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from genlm_lab.control.inference.sequences import Sequences
from genlm_lab.control.potential.base import Potential

__all__ = [
    "LogProbModel",
    "effective_sample_size",
    "kl_divergence_direct",
    "kl_divergence_potentials",
    "kl_divergence_sequences",
    "perplexity_from_kl",
]


class LogProbModel(Protocol):
    """Anything with `log_prob(batch)`: one log-probability per sample of the batch."""

    def log_prob(self, batch: list[Any]) -> Any: ...


def _as_floats(values: Any, n: int, who: str) -> np.ndarray:
    """`values` (a list, array or tensor) as n floats, or a ValueError naming `who`."""
    if hasattr(values, "detach"):
        values = values.detach()
    if hasattr(values, "cpu"):
        values = values.cpu().numpy()
    out = np.asarray(values, dtype=np.float64).ravel()
    if out.size != n:
        raise ValueError(f"{who}.log_prob returned {out.size} values for a batch of {n} samples")
    if np.isnan(out).any():
        raise ValueError(f"{who}.log_prob returned NaN")
    return out


def _mean_log_ratio(log_ratios: np.ndarray) -> float:
    """The mean of the log-ratios; +inf where Q gives a sample of P probability zero."""
    if np.isnan(log_ratios).any():  # -inf - -inf: a sample P itself gives probability zero
        raise ValueError("a sample has probability zero under P: the samples must be drawn from P")
    return float(log_ratios.mean())


def kl_divergence_direct(
    model_p: LogProbModel, model_q: LogProbModel, samples: Sequence[Any], batch_size: int = 32
) -> float:
    """KL(P || Q) estimated as the mean of log P(x) - log Q(x) over samples x drawn from P.

    Args:
        model_p: P, with `log_prob(batch)` giving one log-probability per sample.
        model_q: Q, likewise.
        samples: draws from P (any objects the two models take).
        batch_size: how many samples go to `log_prob` at once.

    Returns:
        The estimate (+inf when Q gives a sample probability zero).

    Raises:
        ValueError: for no samples, a batch size < 1, a model returning the
            wrong number of values or NaN, or a sample P gives probability zero.
    """
    samples = list(samples)
    if not samples:
        raise ValueError("kl_divergence_direct needs at least one sample")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    ratios = []
    for start in range(0, len(samples), batch_size):
        batch = samples[start : start + batch_size]
        logp = _as_floats(model_p.log_prob(batch), len(batch), "model_p")
        logq = _as_floats(model_q.log_prob(batch), len(batch), "model_q")
        with np.errstate(invalid="ignore"):
            ratios.append(logp - logq)
    return _mean_log_ratio(np.concatenate(ratios))


async def kl_divergence_potentials(
    potential_p: Potential, potential_q: Potential, samples: Sequence[Sequence[Any] | str]
) -> float:
    """KL(P || Q) estimated as the mean of `complete` log-weight differences over samples from P.

    Args:
        potential_p: P; its `complete(x)` should be log P(x), normalised.
        potential_q: Q, over the same vocabulary.
        samples: token sequences drawn from P (EOS left out), or strings, which
            `potential_p.tokenize` turns into tokens (a `PromptedLLM` has it).

    Returns:
        The estimate (+inf when Q gives a sample weight zero).

    Raises:
        ValueError: for no samples, potentials that are not Potentials or have
            different vocabularies, a string sample P cannot tokenize, or a
            sample P gives weight zero.
    """
    for name, pot in (("potential_p", potential_p), ("potential_q", potential_q)):
        if not isinstance(pot, Potential):
            raise ValueError(f"{name} must be a Potential, got {type(pot).__name__}")
    if potential_p.vocab != potential_q.vocab:
        raise ValueError(
            f"{potential_p.name} and {potential_q.name} have different vocabularies; "
            "coerce one to the other first"
        )
    contexts = []
    for sample in samples:
        if isinstance(sample, str):
            tokenize = getattr(potential_p, "tokenize", None)
            if tokenize is None:
                raise ValueError(
                    f"sample {sample!r:.40} is a string, but {potential_p.name} has no "
                    "tokenize(); pass token sequences"
                )
            sample = tokenize(sample)
        contexts.append(list(sample))
    if not contexts:
        raise ValueError("kl_divergence_potentials needs at least one sample")
    logp = np.asarray(await potential_p.batch_complete(contexts), dtype=np.float64)
    logq = np.asarray(await potential_q.batch_complete(contexts), dtype=np.float64)
    with np.errstate(invalid="ignore"):
        return _mean_log_ratio(logp - logq)


def kl_divergence_sequences(
    sequences1: Sequences, sequences2: Sequences, decoded: bool = True, floor: float = 1e-10
) -> float:
    """KL(P || Q) between two runs' posteriors: sum over x of p(x) log(p(x) / q(x)).

    Exact for the two weighted particle sets; a plug-in (biased) estimate of the
    KL between the distributions the runs approximate.

    Args:
        sequences1: P's run.
        sequences2: Q's run.
        decoded: compare `decoded_posterior` (texts of finished, decodable
            sequences; genlm-control's choice), else `posterior` (token tuples).
        floor: the probability given to a sequence of P that Q's run never
            produced (else the KL would be infinite).

    Returns:
        The KL divergence in nats.

    Raises:
        ValueError: if either posterior is empty, or floor is not in (0, 1].
    """
    if not (0 < floor <= 1):
        raise ValueError(f"floor must be in (0, 1], got {floor!r}")
    post1 = sequences1.decoded_posterior if decoded else sequences1.posterior
    post2 = sequences2.decoded_posterior if decoded else sequences2.posterior
    if not post1 or not post2:
        which = "sequences1" if not post1 else "sequences2"
        raise ValueError(f"{which} has no sequence of positive weight to compare")
    total = 0.0
    for x, p in post1.items():
        if p > 0:
            total += p * (math.log(p) - math.log(post2.get(x, 0.0) or floor))
    return total


def effective_sample_size(sequences: Sequences) -> float:
    """The run's effective sample size, 1 / sum of squared normalised weights."""
    return float(sequences.ess)


def perplexity_from_kl(kl_div: float) -> float:
    """exp(KL): the KL in nats as a perplexity ratio (1 when the distributions agree)."""
    return math.exp(kl_div)
