"""Evaluation metrics for controlled generation: KL divergence estimates, ESS, perplexity."""

from genlm_lab.control.evaluation.metrics import (
    LogProbModel,
    effective_sample_size,
    kl_divergence_direct,
    kl_divergence_potentials,
    kl_divergence_sequences,
    perplexity_from_kl,
)

__all__ = [
    "LogProbModel",
    "effective_sample_size",
    "kl_divergence_direct",
    "kl_divergence_potentials",
    "kl_divergence_sequences",
    "perplexity_from_kl",
]
