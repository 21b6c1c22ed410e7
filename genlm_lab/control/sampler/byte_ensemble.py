"""`ByteEnsembleTokenSampler`: draws the next byte of a `ByteEnsemble`, both models in step.

Given the bytes `x` so far, each model k has a log-probability `logp_k(x)`
and a next-byte row; the sampler draws byte (or EOS) `y` in proportion to

    q(y) ∝ op(P_1(x y), P_2(x y)) / op(P_1(x), P_2(x))

(genlm-control's "linear" proposal) and returns the log of the total,
`log sum_y op(P_1(x y), P_2(x y)) / op(P_1(x), P_2(x))`, as the weight. That is
a direct sampler on the ensemble's `logw_next`, so the pair is properly
weighted and SMC's weights telescope to `op(P_1(x), P_2(x))` over whole texts
(`EnsembleSMC` adds each model's own log-probability of every result). Both
models then read the byte drawn: the ensemble caches the two beams of the new
context at once, as genlm-control's sampler advances them together.

Each draw also says how the two models saw the byte drawn
(`info["ensemble"]`, which SMC records per step and the ensemble view draws):
`p1` and `p2`, each model's probability of it after `x`, and `share1 =
p1 / (p1 + p2)`, model 1's share of their summed opinion (0.5: they agree).
"""

from __future__ import annotations

import math
from collections import OrderedDict, defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from genlm_lab.control.core.tokens import Draw, draw_index
from genlm_lab.control.inference.ensemble import EnsembleSMC
from genlm_lab.control.lm.byte_ensemble import ByteEnsemble
from genlm_lab.control.potential.base import Potential
from genlm_lab.control.sampler.token import TokenSampler

__all__ = ["ByteEnsembleTokenSampler", "token_shares"]

#: genlm-control's proposal names; it implements "linear" only, and so do we.
PROPOSALS = ("linear", "abs", "square", "soft n")


class _Recent(OrderedDict):
    """A dict that keeps only its `maxsize` newest entries (genlm-control's LRU caches)."""

    def __init__(self, maxsize: int) -> None:
        super().__init__()
        self.maxsize = maxsize

    def __setitem__(self, key: Any, value: Any) -> None:
        super().__setitem__(key, value)
        self.move_to_end(key)
        while len(self) > self.maxsize:
            self.popitem(last=False)


def token_shares(logp1: float, logp2: float) -> dict[str, float]:
    """How two models saw one drawn token: each one's probability, and model 1's share.

    `share1 = p1 / (p1 + p2)` (0.5 where both gave it the same probability;
    the ensemble's weight `a` is not in it, so it says what each model
    thought, not how much the mean listened).
    """
    p1, p2 = math.exp(logp1), math.exp(logp2)
    total = p1 + p2
    if total > 0:
        share = p1 / total
    else:  # both underflow: compare in log space
        share = 1.0 / (1.0 + math.exp(min(logp2 - logp1, 700.0)))
    return {"p1": p1, "p2": p2, "share1": share}


def _positive_int(value: Any, name: str, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive int{' or None' * allow_none}, got {value!r}")


class ByteEnsembleTokenSampler(TokenSampler):
    """Draws properly weighted bytes from a `ByteEnsemble` (genlm-control's names and arguments).

    Args:
        potential: the `ByteEnsemble`.
        proposal: "linear" (the only proposal genlm-control implements).
        n_particles: sizes the caches of recent prefixes (3 per particle).
        eos_tokens: byte strings that mean EOS; each must be one of the
            ensemble's `eos_tokens` (None or [] accepts the ensemble's).
        max_tokens: a text of this many bytes also records both models'
            log-probabilities of it (as an EOS does); None: only at EOS.
        models_equal: kept for genlm-control's signature; changes nothing.
        seed: see `TokenSampler`.

    Attributes:
        prefix_cache_1: model 1's log-probability of recently drawn prefixes,
            keyed by the tuple of tokens (`()` -> 0.0).
        prefix_cache_2: the same for model 2.
        particle_prefix_log_prob_1: model 1's log-probability of every text
            that ended (key: its tokens, EOS last), -inf for any other key.
        particle_prefix_log_prob_2: the same for model 2.

    Raises:
        ValueError: if `potential` is not a `ByteEnsemble`, the proposal is
            not "linear", `eos_tokens` are not the ensemble's, or a count is bad.
    """

    def __init__(
        self,
        potential: ByteEnsemble,
        proposal: str = "linear",
        n_particles: int = 10,
        eos_tokens: Sequence[bytes] | None = None,
        max_tokens: int | None = None,
        models_equal: bool = False,
        seed: int | np.random.Generator | None = None,
    ) -> None:
        if not isinstance(potential, ByteEnsemble):
            raise ValueError(
                "ByteEnsembleTokenSampler needs a ByteEnsemble (`await ByteEnsemble.create(...)`), "
                f"got {type(potential).__name__}; for any other potential use direct_token_sampler"
            )
        if proposal != "linear":
            raise ValueError(
                f"proposal {proposal!r} is not implemented: only 'linear' is (as in genlm-control)"
            )
        _positive_int(n_particles, "n_particles")
        _positive_int(max_tokens, "max_tokens", allow_none=True)
        eos_tokens = [bytes(t) for t in eos_tokens or []]
        strangers = [t for t in eos_tokens if t not in potential.eos_tokens]
        if strangers:
            raise ValueError(
                f"eos_tokens {strangers!r} are not EOS of either model of the ensemble "
                f"({potential.eos_tokens!r}): the two models end on those"
            )
        super().__init__(potential, seed)
        self.potential = potential
        self.proposal = proposal
        self.n_particles = int(n_particles)
        self.eos_tokens = eos_tokens or list(potential.eos_tokens)
        self.max_tokens = max_tokens
        self.models_equal = models_equal
        self.prefix_cache_1: _Recent = _Recent(3 * self.n_particles)
        self.prefix_cache_2: _Recent = _Recent(3 * self.n_particles)
        self.prefix_cache_1[()] = 0.0
        self.prefix_cache_2[()] = 0.0
        self.particle_prefix_log_prob_1: defaultdict = defaultdict(lambda: -math.inf)
        self.particle_prefix_log_prob_2: defaultdict = defaultdict(lambda: -math.inf)

    async def start_weight(self) -> float:
        """0: both models give the empty text probability one."""
        return 0.0

    def _note(self, key: tuple, logp1: float, logp2: float, ended: bool) -> None:
        self.prefix_cache_1[key] = logp1
        self.prefix_cache_2[key] = logp2
        if ended or (self.max_tokens is not None and len(key) == self.max_tokens):
            self.particle_prefix_log_prob_1[key] = logp1
            self.particle_prefix_log_prob_2[key] = logp2

    async def sample_with_info(
        self, context: Sequence[Any], draw: Draw | None = None
    ) -> tuple[Any, float, float, dict]:
        """Draw a byte (or EOS); weight = log of the ensemble's next-byte mass.

        info["ensemble"] holds `token_shares` of the byte drawn; info["factors"]
        the ensemble's log-weight of it (SMC records both).
        """
        context = list(context)
        ens = self.potential
        rows = await ens.component_rows(context)
        base = float(ens.op(rows.logp1, rows.logp2))
        weights = np.asarray(ens.op(rows.logp1 + rows.row1, rows.logp2 + rows.row2)) - base
        top = float(np.max(weights)) if base > -math.inf else -math.inf
        if top == -math.inf:
            return ens.eos, -math.inf, 0.0, {"no_mass": True}
        index = draw_index(weights, ens.vocab_eos, self.rng, draw)
        log_z = top + math.log(float(np.sum(np.exp(weights - top))))
        token = ens.vocab_eos[index]
        logp1 = rows.logp1 + float(rows.row1[index])
        logp2 = rows.logp2 + float(rows.row2[index])
        ended = index == len(ens.vocab)
        self._note((*ens.encode(context), token if ended else index), logp1, logp2, ended)
        if not ended:  # both models read the byte now, as genlm-control advances both beams
            await ens.get_beam_states([*context, index])
        info = {
            "factors": [float(weights[index])],
            "ensemble": token_shares(float(rows.row1[index]), float(rows.row2[index])),
        }
        return token, log_z, float(weights[index]) - log_z, info

    async def logw_eos(self, context: Sequence[Any]) -> float:
        """The ensemble's log-weight of ending after `context` (EOS forced at `max_tokens`).

        Records both models' log-probabilities of the text, as a drawn EOS does.
        """
        ens = self.potential
        rows = await ens.component_rows(list(context))
        logp1 = rows.logp1 + float(rows.row1[-1])
        logp2 = rows.logp2 + float(rows.row2[-1])
        self._note((*ens.encode(context), ens.eos), logp1, logp2, True)
        base = float(ens.op(rows.logp1, rows.logp2))
        return -math.inf if base == -math.inf else float(ens.op(logp1, logp2)) - base

    async def smc(
        self,
        n_particles: int,
        ess_threshold: float,
        max_tokens: int,
        critic: Potential | None = None,
        **kwargs: Any,
    ) -> Any:
        """Run `EnsembleSMC(self, critic)` and return its `SequencesExt`."""
        return await EnsembleSMC(self, critic)(n_particles, ess_threshold, max_tokens, **kwargs)
