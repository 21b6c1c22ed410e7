"""`EnsembleSMC`: SMC over an ensemble's sampler that also returns each model's own scores.

The particles and their weights are `SMC`'s: properly weighted for the
ensemble's target, `op(P_1(x), P_2(x))` over whole texts (times a critic).
What an ensemble run adds is each model's log-probability of every text it
returns, which the sampler records as texts end (drawn EOS or EOS forced at
`max_tokens`; genlm-control's `particle_prefix_log_prob_1` / `_2`), so a
user can compare the ensemble's choices with what each model alone thought
of them. `SequencesExt` carries them beside the usual `Sequences`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from genlm_lab.control.errors import SequencesLengthError
from genlm_lab.control.inference.sequences import Sequences
from genlm_lab.control.inference.smc import SMC
from genlm_lab.control.potential.base import Potential
from genlm_lab.smc.record import SMCRecord

__all__ = ["EnsembleSMC", "SequencesExt"]

_RECORDS = ("particle_prefix_log_prob_1", "particle_prefix_log_prob_2")


def _scores(values: Sequence[float] | None, n: int, name: str) -> np.ndarray | None:
    if values is None:
        return None
    out = np.asarray(values, dtype=np.float64).reshape(-1)
    if len(out) != n:
        raise SequencesLengthError(f"{n} contexts but {len(out)} values of {name}")
    return out


def _score(table: Any, context: Sequence[Any]) -> float:
    """A model's recorded log-probability of a text (-inf if it never ended, or cannot be a key)."""
    try:
        return float(table.get(tuple(context), -math.inf))
    except TypeError:  # a multi-token unit (a list) in the context: no ensemble sampler wrote it
        return -math.inf


class SequencesExt(Sequences):
    """`Sequences` with each ensemble model's log-probability of every sequence.

    Args:
        contexts: one token list per particle.
        log_weights: the ensemble's log importance weights.
        log_prefix_weights_1: model 1's log-probability of each sequence (or None).
        log_prefix_weights_2: model 2's (or None).
        record: the run's `SMCRecord`, if any.
        status: how the run ended.

    Raises:
        SequencesLengthError: if a list's length differs from the contexts'.
    """

    def __init__(
        self,
        contexts: Sequence[Sequence[Any]],
        log_weights: Sequence[float],
        log_prefix_weights_1: Sequence[float] | None = None,
        log_prefix_weights_2: Sequence[float] | None = None,
        record: SMCRecord | None = None,
        status: str = "finished",
    ) -> None:
        super().__init__(contexts, log_weights, record=record, status=status)
        n = len(self.contexts)
        self.log_prefix_weights_1 = _scores(log_prefix_weights_1, n, "log_prefix_weights_1")
        self.log_prefix_weights_2 = _scores(log_prefix_weights_2, n, "log_prefix_weights_2")


class EnsembleSMC(SMC):
    """`SMC` whose result also holds each model's log-probability of each text (genlm-control's).

    Args:
        unit_sampler: a sampler that records both models' scores of the texts
            it ends (`ByteEnsembleTokenSampler`).
        critic: as for `SMC`.
        record_factors: as for `SMC`.
        autobatch: as for `SMC`.

    Raises:
        ValueError: if the sampler keeps no `particle_prefix_log_prob_1` /
            `_2`, or as for `SMC`.
    """

    def __init__(
        self,
        unit_sampler: Any,
        critic: Potential | None = None,
        record_factors: bool = True,
        autobatch: bool = True,
    ) -> None:
        missing = [name for name in _RECORDS if not hasattr(unit_sampler, name)]
        if missing:
            raise ValueError(
                f"EnsembleSMC needs a sampler that records each model's scores "
                f"({', '.join(missing)} missing on {type(unit_sampler).__name__}): use a "
                "ByteEnsembleTokenSampler, or SMC for any other sampler"
            )
        super().__init__(unit_sampler, critic, record_factors=record_factors, autobatch=autobatch)

    async def __call__(
        self, n_particles: int, ess_threshold: float, max_tokens: int, **kwargs: Any
    ) -> SequencesExt:
        """Run `SMC` (same arguments) and add both models' log-probabilities of each sequence.

        A sequence that did not end (a dead particle) gets -inf for both.
        """
        sequences = await super().__call__(n_particles, ess_threshold, max_tokens, **kwargs)
        scores = []
        for name in _RECORDS:
            table = getattr(self.unit_sampler, name)
            scores.append([_score(table, c) for c in sequences.contexts])
        return SequencesExt(
            sequences.contexts,
            sequences.log_weights,
            scores[0],
            scores[1],
            record=sequences.record,
            status=sequences.status,
        )
