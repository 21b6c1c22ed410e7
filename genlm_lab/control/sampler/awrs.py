"""`AWRS`: adaptive weighted rejection sampling (Lipkin et al. 2025).

The target is `potential * condition`, where `condition` is boolean and
costly to evaluate (a grammar, a Python check) and `potential` (an LM) gives
its whole next-token vector cheaply. Computing the target's `logw_next` would
evaluate the condition on every token; AWRS evaluates it only on the tokens
it draws and still returns a properly weighted sample.

Let W be the potential's total next-token mass and q its normalised weights.
AWRS draws tokens i.i.d. from q and asks the condition about each one, until
the `max_accepts`-th accepted draw, after N draws in all. It returns the first
accepted token x with log-weight

    log W + log((max_accepts - 1) / (N - 1)).

N follows a negative binomial law with success probability p = the share of
q's mass that the condition accepts, and (r - 1) / (N - 1) is the classical
unbiased estimator of p for r = max_accepts successes. For i.i.d. draws the
identity of the first success is independent of N and distributed as
q(y) c(y) / p, so E[w 1{x = y}] = W q(y) c(y): the pair is properly weighted
for the target, and E[w] is its next-token mass.

Adaptivity makes the i.i.d. draws cheap (`awrs_order`): a rejected token is
never asked about again, and runs of draws into the rejected set are skipped.
A step that has made `mask_after` checks asks the condition for its mask and
ends in closed form, with the same law (`awrs_proper`).

A `proposal` (genlm-control #140) replaces q: the draws come from the
proposal's normalised weights, so the pair above is properly weighted for
proposal * condition, and multiplying w by potential(x) / proposal(x) makes
it properly weighted for potential * condition (provided the proposal gives
positive weight wherever the potential does).

Termination: if every token with q > 0 is rejected, the target's mass is
exactly zero and the weight is -inf (also when q itself is all zero). With a
finite `max_rejects`, a call that rejects that many draws (skipped ones
included) stops with weight -inf: faster, but biased towards zero; the
weight is otherwise never -inf (genlm-control #95, #102). One skipped run is
capped at e^700 draws, which only matters when the allowed share of the
mass is below ~1e-300 (the weight then stays finite, slightly too large).
"""

from __future__ import annotations

import asyncio
import copy
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from genlm_lab.control.core.tokens import check_log_weights, token_label
from genlm_lab.control.potential.base import Potential
from genlm_lab.control.sampler.awrs_order import UnseenTokens
from genlm_lab.control.sampler.awrs_proper import ProperStep
from genlm_lab.control.sampler.token import FactorRows, TokenSampler, _check_proposal

__all__ = ["AWRS"]


class AWRS(TokenSampler):
    """Properly weighted samples from `potential * condition`, checking `condition` only on draws.

    `mask_after` (default 512): checks after which a proper step asks the
    condition for its whole mask and finishes in closed form (`awrs_proper`);
    `math.inf` never does.

    Args:
        potential: the weights the target multiplies by the condition (e.g. a
            `PromptedLLM`), and the draws' too unless `proposal` is given; its
            `logw_next` is computed whole.
        condition: a boolean potential (log-weights 0 or -inf), asked one token
            at a time: `score(context + [y])`, that is `prefix(context + [y])`,
            and `complete(context)` for EOS. Where its vocabulary differs from
            the potential's, the target is over the tokens both have (as `*`
            makes it) and the others are never drawn.
        seed: see `TokenSampler`.
        max_accepts: accepted draws to wait for (>= 2 for proper weights);
            more lowers the weight's variance and costs more draws.
        max_rejects: stop with weight -inf after this many rejected draws
            (biased; infinite by default).
        prune_logws: kept for genlm-control compatibility: tokens outside the
            target's vocabulary are always left out of the draws.
        proper_weights: False draws without replacement until the first
            accepted token and returns weight 0 (-inf if none): an exact draw
            from the normalised target but *not* properly weighted
            (locally constrained decoding).
        autobatch: wrap the potential so that concurrent particles' calls go
            out together. The condition is used as given: its checks are single
            tokens (wrap it with `to_autobatched()` if it has a batched path
            worth the wait, e.g. a model-based judge).
        proposal: draw from this potential's next-token weights instead of
            `potential`'s, and multiply each weight by potential / proposal
            at the token returned (same tokens in the same order; positive
            wherever `potential` is). With `proper_weights=False` it only
            steers the draws, as in genlm-control.

    Raises:
        ValueError: for vocabularies with no token in common, max_accepts < 2
            with proper weights, or max_rejects < 1.
        TypeError: if `proposal` is given and is not a Potential.
    """

    mask_after: float = 512

    def __init__(
        self,
        potential: Potential,
        condition: Potential,
        seed: int | np.random.Generator | None = None,
        max_accepts: int = 2,
        max_rejects: float = math.inf,
        prune_logws: bool = True,
        proper_weights: bool = True,
        autobatch: bool = True,
        proposal: Potential | None = None,
    ) -> None:
        for name, value in (("potential", potential), ("condition", condition)):
            if not isinstance(value, Potential):
                raise ValueError(f"AWRS: {name} must be a Potential, got {type(value).__name__}")
        if isinstance(max_accepts, bool) or not isinstance(max_accepts, (int, np.integer)):
            raise ValueError(f"max_accepts must be an int, got {max_accepts!r}")
        if max_accepts < (2 if proper_weights else 1):
            raise ValueError(
                f"max_accepts must be at least 2 for properly weighted samples, got {max_accepts}"
            )
        if not max_rejects >= 1:
            raise ValueError(f"max_rejects must be >= 1 (or math.inf), got {max_rejects!r}")
        same_vocab = potential.vocab is condition.vocab or potential.vocab == condition.vocab
        if proposal is not None:
            _check_proposal(potential, proposal)
        self._rows = FactorRows(potential, autobatch)
        self.potential = self._rows.potential
        self.proposal = proposal.to_autobatched() if autobatch and proposal else proposal
        self.condition = condition
        super().__init__(self.potential * self.condition, seed)
        #: Where vocabularies differ, the target holds the tokens both have (a product's
        #: rule): the potential's rows are read at these indices, the others weigh zero.
        self._narrow = (
            None
            if same_vocab
            else np.array([self.potential.lookup[t] for t in self.target.vocab_eos])
        )
        self._checks = condition.factors()
        self._labels: dict[int, str] = {}
        self.max_accepts = int(max_accepts)
        self.max_rejects = max_rejects
        self.prune_logws = prune_logws
        self.proper_weights = proper_weights
        #: The target's tokens and EOS as a set: what every draw is one of (genlm-control's name).
        self.vocab_eos_set = set(self.target.vocab_eos)
        #: A `Budget` (see `budgeted`): tokens after which the text cannot end in time are rejected.
        self.budget: Any = None
        # A grammar condition over tokens is asked through its engine, with the context
        # encoded once per draw rather than once per token asked about.
        from genlm_lab.control.constraint.llg.grammar import MaskedPotential

        plain = isinstance(condition, MaskedPotential) and not condition._bytes_in
        self._engine = condition.engine if plain else None
        self._encoded: tuple[Any, Any] = (None, None)

    def budgeted(self, budget: Any) -> AWRS:
        """A copy of this sampler that also rejects tokens after which the text cannot end in time.

        `budget` is an `inference.budgets.Budget` (what `SMC` builds from its
        `max_tokens`): its check joins the condition, so the target becomes
        `potential * condition * [the text can end within max_tokens]` and a
        token that cannot is rejected and another drawn, like any other
        token the condition refuses. The copy shares everything else.
        """
        out = copy.copy(self)
        out.budget = budget
        out._labels = self._labels
        return out

    async def start_weight(self) -> float:
        """The target's weight of the empty prefix (zero if no text can end within the budget)."""
        weight = float(await self.target.prefix([]))
        if (
            self.budget is not None
            and weight > -math.inf
            and not await self.budget.ends_in_time([])
        ):
            return -math.inf
        return weight

    def _key(self, context: list[Any]) -> Any:
        """The condition's key of `context` (its token indices), kept for the same list."""
        from genlm_lab.control.constraint.llg.matcher_cache import Key

        last, key = self._encoded
        if last is not context or len(key) != len(context):
            key = Key(self.condition.encode(context))
            self._encoded = (context, key)
        return key

    async def _accepts(self, context: list[Any], token: Any, limit: int | None = None) -> bool:
        """Whether the condition and the budget allow `token` after `context`."""
        if not await self._condition_allows(context, token):
            return False
        return await self._budget_allows(context, token, limit)

    async def _budget_allows(self, context: list[Any], token: Any, limit: int | None) -> bool:
        """Whether the budget allows `token` (its overrun within a guided draw's `limit`)."""
        if self.budget is None or self.target.ends([token]):
            return True
        # the guide's limit first: it is one greedy finish, where `fits` may read a mask
        if limit is not None and self.budget.overrun(context, token) > limit:
            return False
        return await self.budget.ends_in_time(context, token)

    async def _condition_allows(self, context: list[Any], token: Any) -> bool:
        if self._engine is not None and "score" not in vars(self.condition):  # not profiled
            if not self.target.ends([token]):
                return self._engine.allows(self._key(context), self.condition.lookup[token])
        # score = prefix(context + [token]), or complete(context) for EOS; grammar
        # potentials answer it from the context's cached state, far faster than a
        # prefix from scratch.
        value = await self.condition.score([*context, token])
        if value in (0, -math.inf):
            return value == 0
        raise ValueError(
            f"AWRS needs a boolean condition (log-weights 0 or -inf), but {self.condition.name} "
            f"gave {value!r} for token {token_label(token)!r} after {len(context)} tokens"
        )

    async def sample(self, context: Sequence[Any], draw: Any = None) -> tuple[Any, float, float]:
        """See `sample_with_info`.

        Raises:
            ValueError: if `draw` is given: AWRS draws by rejection, with no
                categorical choice a custom draw could replace.
        """
        if draw is not None:
            raise ValueError(
                "AWRS draws by rejection over unnormalised weights; there is no categorical "
                "choice for draw= to replace"
            )
        token, logw, logp, _ = await self.sample_with_info(context)
        return token, logw, logp

    async def sample_with_info(self, context: Sequence[Any]) -> tuple[Any, float, float, dict]:
        """Draw a token by adaptive rejection; info["awrs"] traces the draws and checks.

        Returns:
            (token, logw, logp, info): logp is NaN (the draw's probability is
            not tracked, as in genlm-control); info = {"awrs": {"drawn",
            "accepted", "rejected", "n_draws", "n_checks", "logw"}} with tokens
            as escaped strings and EOS as "EOS".
        """
        context = list(context)
        rows, logws, drawn_from = await self._weights(context)
        trace: dict[str, Any] = {"drawn": [], "accepted": [], "rejected": []}
        top = float(np.max(drawn_from))
        guide = self.budget if self.proper_weights and self.budget and self.budget.guides else None
        over, limit = guide.plan(context, self.rng) if guide is not None else (0, None)
        if top == -math.inf:
            token, logw, draws, checks = self.target.eos, -math.inf, 0, 0
        else:
            q = np.exp(drawn_from - top)
            log_w = top + math.log(float(q.sum()))
            run = self._proper if self.proper_weights else self._improper
            token, log_ratio, draws, checks = await run(context, q, trace, limit)
            logw = log_w + log_ratio if self.proper_weights else log_ratio
            if drawn_from is not logws and self.proper_weights and logw > -math.inf:
                index = self.target.lookup[token]  # drawn, so the proposal's weight is > 0
                logw += float(logws[index]) - float(drawn_from[index])
        if guide is not None and logw > -math.inf:
            logw += guide.twist(context, token, over, limit)
        trace.update(n_draws=draws, n_checks=checks, logw=float(logw))
        info: dict[str, Any] = {"awrs": trace}
        if top == -math.inf:
            info["no_mass"] = True
        else:
            info["factors"] = await self._factor_values(context, token, rows, logw > -math.inf)
        return token, float(logw), math.nan, info

    async def _weights(self, context: list[Any]) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
        """The potential's rows and their sum, and the row draws come from (the proposal's, if any)."""
        if self.proposal is None:
            rows, logws = self._on_target(*await self._rows(context))
            return rows, logws, logws
        (rows, logws), proposed = await asyncio.gather(
            self._rows(context), self.proposal.logw_next(context)
        )
        rows, logws = self._on_target(rows, logws)
        drawn_from = np.asarray(proposed.weights, dtype=float)
        check_log_weights(drawn_from, f"{self.proposal.name}.logw_next")
        if self._narrow is not None:
            drawn_from = drawn_from[self._narrow]
        return rows, logws, drawn_from

    def _on_target(
        self, rows: list[np.ndarray], logws: np.ndarray
    ) -> tuple[list[np.ndarray], np.ndarray]:
        """The potential's rows over the target's tokens (the same arrays if vocabularies agree)."""
        if self._narrow is None:
            return rows, logws
        return [r[self._narrow] for r in rows], logws[self._narrow]

    async def _factor_values(
        self, context: list[Any], token: Any, rows: list[np.ndarray], allowed: bool
    ) -> list[float]:
        """Each factor's log-weight of the token returned, without a full mask of the condition.

        The potential's factors from their rows; the condition's from its
        verdict (a token returned with weight zero is one it rejected), asking
        each factor of a product condition only when one of them rejected it.
        """
        index = self.target.lookup[token]
        values = [float(r[index]) for r in rows]
        if allowed:
            return values + [0.0] * len(self._checks)
        if len(self._checks) == 1:
            return [*values, -math.inf]
        scores = await asyncio.gather(*(f.score([*context, token]) for f in self._checks))
        return values + [float(x) for x in scores]

    async def logw_eos(self, context: Sequence[Any]) -> float:
        """The target's EOS weight from the potential's row and one check of the condition.

        (The target's `logw_next` would mask the whole vocabulary with the
        condition.) The condition's prefix weight of a live context is 0.
        """
        context = list(context)
        eos = self.target.eos
        lm = float((await self.potential.logw_next(context))[eos])
        if lm == -math.inf:
            return lm
        logw = lm + float(await self.condition.score([*context, eos]))
        if self.budget is not None and logw > -math.inf:
            logw += self.budget.untwist(context)  # 0 unless a guide twisted this text
        return logw

    def _label(self, index: int) -> str:
        """The escaped text of token `index` for the trace (cached: the vocabulary is fixed)."""
        label = self._labels.get(index)
        if label is None:
            label = self._labels[index] = token_label(self.target.vocab_eos[index])
        return label

    async def _proper(
        self, context: list[Any], q: np.ndarray, trace: dict, limit: int | None = None
    ) -> tuple[Any, float, int, int]:
        """I.i.d. draws from q (unnormalised) until max_accepts accepts (`awrs_proper`).

        Returns (first accepted token, log((r-1)/(N-1)) or -inf, N, checks).
        """
        return await ProperStep(self, context, q, trace, limit).run()

    async def _improper(
        self, context: list[Any], q: np.ndarray, trace: dict, limit: int | None = None
    ) -> tuple[Any, float, int, int]:
        """Draws without replacement until the first accept: weight 0, or -inf if none."""
        vocab = self.target.vocab_eos
        order = UnseenTokens(q, [], self.rng)
        token = self.target.eos
        draws = 0
        while draws < self.max_rejects:
            index = order.pop()
            if index is None:
                break
            draws += 1
            token = vocab[index]
            label = self._label(index)
            trace["drawn"].append(label)
            if await self._accepts(context, token, limit):
                trace["accepted"].append(label)
                return token, 0.0, draws, draws
            trace["rejected"].append(label)
        return token, -math.inf, draws, draws

    def __repr__(self) -> str:
        budget = "" if self.budget is None else f", within {self.budget.max_tokens} tokens"
        proposal = "" if self.proposal is None else f", proposal={self.proposal.name}"
        return (
            f"AWRS({self.potential.name}, {self.condition.name}, "
            f"max_accepts={self.max_accepts}{proposal}{budget})"
        )
