"""Budgets: an SMC run hands its `max_tokens` to every factor of the target that can finish.

A prefix that no completion ends within the tokens left (EOS included) gets
weight zero at once, not when it is cut at `max_tokens`. Each boolean factor
of the sampler's target gets a finisher (`constraint.budget`): exact
for automata, sound for the rest, so nothing that could end in time is ever
refused and the run's target is exactly p(x | constraints, len(x) <= max_tokens).
A product fits only if every factor fits, and then only if one completion
ends them all (`budget.joint_fit_check`: exact for automata).

With AWRS the check joins the condition (`AWRS.budgeted`): a token that
cannot end in time is rejected and another drawn. With any other token
sampler (`BudgetedSampler`) a drawn token that cannot end in time gets weight
zero: still properly weighted for the budgeted target (the indicator is a
factor of it), but the particle dies instead of drawing again.

Far from the end a sound finisher proves little (a JSON particle may write
a long string while its required keys wait). Where a factor names a short
finish (`FinishGuide`), the run is also *guided*, exactly. Let `overrun(x)` be
the tokens by which the finishes of prefix x overrun the tokens left, and let
a finished text count as the empty prefix (`overrun` of both is `overrun([])`, so
`psi(end) / psi([]) = 1` and the final target is unchanged, even where the
empty prefix's finish already overruns). AWRS twists the run's intermediate
targets by `psi(x) = (eps * penalty) ** overrun(x)`, in two parts:

- the proposal carries `eps ** overrun`: with probability `1 - eps` a draw is
  AWRS on the condition "overrun does not grow", else plain AWRS. Its weight,
  `Z * eps ** (grown)`, over `eps` for a plain draw that made `overrun` grow
  (one the guided branch could not have drawn), is properly weighted: the
  two branches' measures mix with weights equal to their probabilities, so
  far from the end (where nothing overruns) a draw's weight is unchanged;
- the weight carries `penalty ** overrun`: a draw that makes `overrun` grow by k
  has its weight multiplied by `penalty ** k` (and one that makes it shrink
  divided), so resampling favours particles that can still end in time.

Any other properly weighted token sampler (`BudgetedSampler`, e.g. the
direct sampler) has no guided branch to steer its proposal, so it carries
the weights' part only: `psi(x) = penalty ** overrun(x)`, a drawn token's weight
times `penalty ** (overrun(x + token) - overrun(x))` (`Budget.reweigh`).

Both divide the twist out as a particle ends: a drawn EOS brings `overrun`
back to `overrun([])`; a forced EOS at `max_tokens` (`logw_eos`) and a stop by
`terminate_when` (`SequenceModel`) add `Budget.untwist`. So particles head
for an ending in time and resampling favours them, while nothing is refused
on the guess: the finish is greedy, and a prefix it misjudges keeps its
probability (at the cost of weight variance).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from genlm_lab.control.constraint.budget import FitCheck, fit_check_for, joint_fit_check
from genlm_lab.control.core.constant import EndOfSequence
from genlm_lab.control.potential.base import factor_names

__all__ = ["Budget", "BudgetedSampler", "budget_for", "with_budget"]


class Budget:
    """`max_tokens` and the finisher of each factor that can finish.

    Args:
        factors: `(index in target.factors(), name, finisher)` per factor that can finish.
        max_tokens: the run's `max_tokens` (EOS included).
        joint: where two or more factors can finish, the finisher of their product
            (`budget.joint_fit_check`), asked after every factor fits; it reads
            the first factor's token ids.
    """

    #: The proposal's share of the guided twist: a guided AWRS draw ignores the guide with
    #: probability eps.
    eps = 0.05
    #: The weights' share: a draw whose finish overruns by k more tokens weighs penalty**k.
    #: Small, so that a plain draw that overran (weight ~ Z * penalty) does not outweigh
    #: guided draws whose tokens hold little of the model's mass: else resampling may keep
    #: only particles that can no longer end.
    penalty = 0.001

    def __init__(
        self,
        factors: list[tuple[int, str, FitCheck]],
        max_tokens: int,
        joint: FitCheck | None = None,
    ) -> None:
        self.factors = factors
        self.max_tokens = int(max_tokens)
        self.joint = joint
        #: The name a refusal by `joint` gives: the factors', joined with " & "
        self.joint_name = " & ".join(name for _, name, _ in factors)
        #: (position in `factors`, guide) for each factor that names a short finish
        self.guides = [
            (k, f.guide) for k, (_, _, f) in enumerate(factors) if getattr(f, "guide", None)
        ]
        #: AWRS's guided and plain draws (probability eps), other samplers' draws twisted
        #: in weight only, and draws after which `overrun` grew
        self.guide_stats = {"guided": 0, "plain": 0, "weighted": 0, "overran": 0}
        #: The twist's log base, set by the first twisted draw: log(eps * penalty) for
        #: AWRS (`twist`), log(penalty) for the weights only (`reweigh`); 0 before
        self.log_base = 0.0
        self._start_overrun: int | None = None
        self._prefix: list[Any] | None = None  # the last context asked about, and its ids
        self._prefix_ids: list[list[int]] = []

    def _ids(self, context: list[Any]) -> list[list[int]]:
        """Each factor's indices of `context`, kept for the next call with the same list.

        AWRS asks about many tokens after one context (the same list object):
        it is encoded once, not once per token.
        """
        if context is not self._prefix or len(context) != len(self._prefix_ids[0]):
            self._prefix_ids = [f.encode(context) for _, _, f in self.factors]
            self._prefix = context
        return self._prefix_ids

    async def refuser(self, context: Sequence[Any], token: Any = None) -> tuple[int, str] | None:
        """`(index, name)` of the first factor that cannot end `context` (then `token`, if
        given) in time; None if all can.
        """
        context = context if isinstance(context, list) else list(context)
        if context and isinstance(context[-1], EndOfSequence):
            return None  # a finished text: the forced EOS needs no budget
        left = self.max_tokens - len(context) - (token is not None)
        prefixes = self._ids(context) if self.factors else []
        for (index, name, finisher), ids in zip(self.factors, prefixes, strict=True):
            if token is not None:
                ids = [*ids, finisher.lookup[token]]
                full = None
            else:
                full = context
            if not await finisher.fits(full, left, ids):
                return index, name
        if self.joint is not None:
            ids, full = prefixes[0], (None if token is not None else context)
            if token is not None:
                ids = [*ids, self.factors[0][2].lookup[token]]
            if not await self.joint.fits(full, left, ids):
                return self.factors[0][0], self.joint_name
        return None

    def needed_at_least(self, context: Sequence[Any], name: str) -> int | None:
        """A lower bound on the tokens (EOS included) factor `name` needs to end `context`,
        where its fit check knows one without reading a mask (for messages); else None."""
        for _, factor_name, check in self.factors:
            least = getattr(check, "needed_at_least", None)
            if factor_name == name and least is not None:
                return least(check.encode(list(context)))
        return None

    def overrun(self, context: Sequence[Any], token: Any = None) -> int:
        """Tokens by which the guides' finishes of `context` (then `token`) overrun the tokens
        left (0 where no guide has a finish); a finished text counts as the empty prefix.
        """
        context = context if isinstance(context, list) else list(context)
        ended = context and isinstance(context[-1], EndOfSequence)
        if not self.guides:
            return 0
        if ended or isinstance(token, EndOfSequence):
            return self.start_overrun()
        return self._overrun(context, token)

    def start_overrun(self) -> int:
        """`overrun([])`, which a finished text also counts as (computed once)."""
        if self._start_overrun is None:
            self._start_overrun = self._overrun([], None) if self.guides else 0
        return self._start_overrun

    def _overrun(self, context: list[Any], token: Any) -> int:
        left = self.max_tokens - len(context) - (token is not None)
        prefixes = self._ids(context)
        total = 0
        for k, guide in self.guides:
            ids = prefixes[k]
            if token is not None:
                ids = [*ids, self.factors[k][2].lookup[token]]
            total += guide.overrun(ids, left)
        return total

    def plan(self, context: list[Any], rng: np.random.Generator) -> tuple[int, int | None]:
        """`(overrun(context), limit)` for one guided draw: the limit on `overrun` that the draw's
        tokens must keep to, or None (with probability eps) for a plain draw.
        """
        over = self.overrun(context)
        return over, (over if rng.random() >= self.eps else None)

    def twist(self, context: list[Any], token: Any, over: int, limit: int | None = None) -> float:
        """The log-weight to add to an AWRS draw of `token` after `context` (whose `overrun` is
        `overrun`), drawn with `limit` (see `plan`): psi's ratio, over eps for a plain draw
        that made `overrun` grow (one the guided branch could not have drawn; EOS it can).
        """
        grew = self.overrun(context, token) - over
        plain_overrun = grew > 0 and limit is None and not isinstance(token, EndOfSequence)
        self.log_base = math.log(self.eps) + math.log(self.penalty)
        self.guide_stats["plain" if limit is None else "guided"] += 1
        self.guide_stats["overran"] += grew > 0
        return (grew - plain_overrun) * math.log(self.eps) + grew * math.log(self.penalty)

    def reweigh(self, context: list[Any], token: Any) -> float:
        """The log-weight to add to a draw of `token` after `context` by a sampler with no
        guided proposal: `(overrun(context + token) - overrun(context)) * log(penalty)`.
        """
        grew = self.overrun(context, token) - self.overrun(context)
        self.log_base = math.log(self.penalty)
        self.guide_stats["weighted"] += 1
        self.guide_stats["overran"] += grew > 0
        return grew * self.log_base

    def untwist(self, context: list[Any]) -> float:
        """The log-weight that divides `context`'s twist out when it ends without a drawn EOS
        (forced at `max_tokens`, or stopped): psi(end) / psi(context), as the sampler twisted.

        The one place that decides whether there is a twist to divide out: 0 where no
        guide twisted a draw (no guides, or a sampler that is not properly weighted), so
        every end (a sampler's `logw_eos`, a particle's stop) just adds it.
        """
        if not self.guides or not self.log_base:
            return 0.0
        return (self.start_overrun() - self.overrun(context)) * self.log_base

    def unfinishable(self) -> list[str]:
        """Where a factor's finish got stuck so far: `"name: $.path: keyword ..."` lines."""
        names = {k: self.factors[k][1] for k, _ in self.guides}
        return [f"{names[k]}: {line}" for k, guide in self.guides for line in guide.unfinishable()]

    async def ends_in_time(self, context: Sequence[Any], token: Any = None) -> bool:
        """Whether every factor can still end `context` (then `token`) within the tokens left."""
        return await self.refuser(context, token) is None

    def stats(self) -> dict[str, dict[str, int]]:
        """Each factor's counts: kept, refused, unproven (kept without proof); with guides,
        also "guide": AWRS's guided and plain draws, other samplers' draws twisted in weight
        only ("weighted"), and draws after which the finish overran more.
        """
        out = {name: dict(f.stats) for _, name, f in self.factors}
        if self.joint is not None:
            out[self.joint_name] = dict(self.joint.stats)
        if self.guides:
            out["guide"] = dict(self.guide_stats)
        return out

    def __repr__(self) -> str:
        names = ", ".join(name for _, name, _ in self.factors)
        return f"Budget({self.max_tokens} tokens: {names})"


def budget_for(sampler: Any, max_tokens: int) -> Budget | None:
    """The budget of a token sampler's target, or None (nothing can finish, or not tokens)."""
    # `sampler.TokenSampler` marks its subclasses (inference may not import the sampler
    # room); read on the class, so a wrapper forwarding attributes does not pass.
    target = getattr(sampler, "target", None)
    if not getattr(type(sampler), "is_token_sampler", False) or target is None:
        return None  # a multi-token unit sampler counts units, not tokens
    factors = []
    for i, (factor, name) in enumerate(zip(target.factors(), factor_names(target), strict=True)):
        finisher = fit_check_for(factor)
        if finisher is not None:
            factors.append((i, name, finisher))
    if not factors:
        return None
    return Budget(factors, max_tokens, joint_fit_check([f for _, _, f in factors]))


class BudgetedSampler:
    """A token sampler whose drawn tokens get weight zero where they cannot end in time.

    Where the budget has guides and the sampler is properly weighted, each
    draw's weight also carries the guides' twist, divided out as the text ends
    (`Budget.reweigh`, `Budget.untwist`; see the module). Everything else is
    the wrapped sampler's (attributes are read through).
    """

    def __init__(self, sampler: Any, budget: Budget) -> None:
        self.sampler = sampler
        self.budget = budget
        #: Whether draws are twisted by the guides (a sampler that is not properly
        #: weighted is left alone: its weights do not define the intermediate targets).
        self.guided = bool(budget.guides) and bool(getattr(sampler, "proper_weights", True))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.sampler, name)

    async def start_weight(self) -> float:
        weight = float(await self.sampler.start_weight())
        if weight > -math.inf and not await self.budget.ends_in_time([]):
            return -math.inf
        return weight

    async def logw_eos(self, context: Sequence[Any]) -> float:
        logw = float(await self.sampler.logw_eos(context))
        if logw > -math.inf:
            logw += self.budget.untwist(list(context))  # 0 unless a guide twisted this text
        return logw

    async def sample(self, context: Sequence[Any]) -> tuple[Any, float, float]:
        token, logw, logp, _ = await self.sample_with_info(context)
        return token, logw, logp

    async def sample_with_info(
        self, context: Sequence[Any], draw: Any = None
    ) -> tuple[Any, float, float, dict]:
        """The wrapped sampler's draw (`draw`, if given, chooses the token: conditional SMC)."""
        context = list(context)  # one list: the budget encodes it once for all its questions
        if draw is not None:
            token, logw, logp, info = await self.sampler.sample_with_info(context, draw=draw)
        elif hasattr(self.sampler, "sample_with_info"):
            token, logw, logp, info = await self.sampler.sample_with_info(context)
        else:
            (token, logw, logp), info = await self.sampler.sample(context), {}
        if logw > -math.inf and not isinstance(token, EndOfSequence):
            refused = await self.budget.refuser(context, token)
            if refused is not None:
                info = dict(info)
                factors = info.get("factors")
                if factors is not None and refused[0] < len(factors):
                    factors = list(factors)
                    factors[refused[0]] = -math.inf  # the factor that cannot end in time
                    info["factors"] = factors
                info["budget"] = {"refused_by": refused[1], "max_tokens": self.budget.max_tokens}
                logw = -math.inf
        if self.guided and logw > -math.inf:
            logw += self.budget.reweigh(context, token)
        return token, logw, logp, info

    async def cleanup(self) -> None:
        await self.sampler.cleanup()

    def __repr__(self) -> str:
        return f"{self.sampler!r} within {self.budget.max_tokens} tokens"


def with_budget(sampler: Any, max_tokens: int) -> tuple[Any, Budget | None]:
    """`(sampler, budget)`: the sampler that keeps to `max_tokens` (itself where nothing can finish).

    AWRS gets a copy that rejects what cannot end in time (`AWRS.budgeted`);
    any other token sampler a `BudgetedSampler`. Both are guided where a factor
    has a `FinishGuide` (see the module).
    """
    budget = budget_for(sampler, max_tokens)
    if budget is None:
        return sampler, None
    budgeted = getattr(sampler, "budgeted", None)
    if callable(budgeted):
        return budgeted(budget), budget
    return BudgetedSampler(sampler, budget), budget
