"""AWRS's properly weighted step: i.i.d. draws until `max_accepts` accepts, finished in closed form.

The loop (`ProperStep.run`) draws i.i.d. from q. Until the first rejection,
draws come straight from q's CDF (a repeat of an accepted token needs no
check). From then on a draw is, after the skipped run of rejected draws, a
repeat of an accepted token (with probability proportional to their mass) or
the next token of a without-replacement order of the unseen tokens
(`awrs_order`): O(1) per draw, not O(|V|).

Where the condition allows very little of q's mass (a random model under a
pattern, a schema), the loop still asks the condition about thousands of
tokens per step. So once a step has made `mask_after` checks, it asks the
condition for its whole mask (`logw_next`: one call, which grammars and
regexes answer quickly), and answers the condition from it from then on
(the same verdicts, so the same draws). As soon as the budget (if any) has
no more tokens left to judge than the step has checked, it judges them, and
the step ends in closed form:

Claim: the returned (token, N, stop by max_rejects) has the loop's law. Let
v(i) be the (deterministic) verdict on token i: condition and budget, within
the step's guide `limit`. The loop is a simulation of X_1, X_2, ... i.i.d.
from q / W, asking v only at a token's first sight, stopping at the
`max_accepts`-th draw with v = 1 or when the rejected draws reach
`max_rejects`. The switch happens at a stopping time T (it depends on the
draws so far only), so X_{T+1}, X_{T+2}, ... are i.i.d. q / W and independent
of the history. Once v is known on every token with mass (the mask, and the
budget on the unchecked tokens it allows), each later draw is a success
with probability p = q(S) / W, S = {v = 1}, independently. The failures
before each of the r remaining successes are then i.i.d. Geometric(p) - 1
(`skipped_draws(p)`), the step stops by `max_rejects` exactly when the
running count of rejected draws reaches it before the next success, and,
if nothing was accepted yet, the first success is y with probability
q(y) 1{y in S} / q(S), independent of the counts (a draw's identity given
its verdict is independent of the other draws). So the weight's argument in
`awrs` holds unchanged. The random numbers used after T differ from the
loop's, so a seed gives other, equally distributed answers when the finish
applies. The trace lists the draws made one by one, and the token the finish
drew, if any (the first accept, or with weight zero a rejected token);
"summarised" counts the rest and names that token ("token").

A condition whose `logw_next` is `Potential`'s own (a check per token) is
never asked for a mask; one whose mask disagrees with verdicts the step
already has, or is not boolean, is not used (the step goes on as a loop).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from genlm_lab.control.potential.base import Potential
from genlm_lab.control.sampler.awrs_order import (
    UnseenTokens,
    draw_from_cdf,
    pick_weighted,
    skipped_draws,
)

__all__ = ["ProperStep", "finish_counts"]


def finish_counts(
    p: float, needed: int, rejects: int, max_rejects: float, rng: np.random.Generator
) -> tuple[int, int, bool]:
    """The rest of a step of i.i.d. draws that each accept with probability p.

    Returns (draws, rejected draws, stopped): the draws until `needed` more
    accepts, or until the rejected draws (`rejects` so far) reach
    `max_rejects` (then stopped is True and the draws end with that rejection).
    """
    draws = failed = 0
    for _ in range(needed):
        skipped = skipped_draws(p, rng)
        if rejects + failed + skipped >= max_rejects:
            rest = int(max_rejects - rejects - failed)
            return draws + rest, failed + rest, True
        draws += skipped + 1
        failed += skipped
    return draws, failed, False


class ProperStep:
    """One call's draws: see the module docstring. `run()` gives
    (first accepted token, log((r-1)/(N-1)) or -inf, N, tokens checked one by one).
    """

    def __init__(
        self, sampler: Any, context: list[Any], q: np.ndarray, trace: dict, limit: int | None
    ) -> None:
        self.s, self.context, self.q, self.trace, self.limit = sampler, context, q, trace, limit
        self.total = float(q.sum())
        self.accepted: dict[int, float] = {}  # index -> q
        self.rejected: set[int] = set()
        self.refused: set[int] = set()  # rejected by the condition (not the budget)
        self.draws = self.rejects = self.accepts = 0
        self.first: Any = None
        self.last_rejected: Any = None
        #: once asked: the tokens with mass the condition allows and no check has judged yet
        self.unjudged: np.ndarray | None = None
        self.left = 0  # how many of them
        self.asked = False

    def _checks(self) -> int:
        return len(self.accepted) + len(self.rejected)

    async def run(self) -> tuple[Any, float, int, int]:
        s, q, rng = self.s, self.q, self.s.rng
        vocab = s.target.vocab_eos
        cdf = np.cumsum(q)
        unseen: UnseenTokens | None = None  # built at the first rejection
        while True:
            checks = self._checks()
            if checks >= s.mask_after:
                if not self.asked:
                    await self._ask_mask()
                if self.unjudged is not None and (s.budget is None or self.left <= checks):
                    return await self._finish()
            if unseen is None:
                index = draw_from_cdf(cdf, q, rng)
            else:
                m_accepted = sum(self.accepted.values())
                live = m_accepted + unseen.mass()
                if live <= 0:  # every token with mass is rejected: the target's mass is 0
                    return self.last_rejected, -math.inf, self.draws, checks
                skipped = skipped_draws(live / self.total, rng)
                if self.rejects + skipped >= s.max_rejects:
                    self.draws += int(s.max_rejects - self.rejects)
                    return self.last_rejected, -math.inf, self.draws, checks
                self.draws += skipped
                self.rejects += skipped
                new = None if rng.random() * live < m_accepted else unseen.pop()
                if new is None and not self.accepted:  # rounding left no unseen token
                    return self.last_rejected, -math.inf, self.draws, checks
                index = new if new is not None else pick_weighted(self.accepted, rng)
            self.draws += 1
            token = vocab[index]
            label = s._label(index)
            self.trace["drawn"].append(label)
            if index not in self.accepted:
                if not await self._accepts(index, token):
                    self.trace["rejected"].append(label)
                    self.rejected.add(index)
                    self.rejects += 1
                    self.last_rejected = token
                    if self.rejects >= s.max_rejects:
                        return token, -math.inf, self.draws, self._checks()
                    if unseen is None:
                        unseen = UnseenTokens(q, [*self.accepted, *self.rejected], rng)
                    continue
                self.trace["accepted"].append(label)
                self.accepted[index] = float(q[index])
            self.accepts += 1
            if self.first is None:
                self.first = token
            if self.accepts == s.max_accepts:
                return self.first, self._ratio(), self.draws, self._checks()

    def _ratio(self) -> float:
        return math.log(self.s.max_accepts - 1) - math.log(self.draws - 1)

    async def _accepts(self, index: int, token: Any) -> bool:
        """The condition's verdict (from the mask once asked), then the budget's."""
        if self.unjudged is not None:
            allowed = bool(self.unjudged[index])
            if allowed:
                self.unjudged[index] = False
                self.left -= 1
        else:
            allowed = await self.s._condition_allows(self.context, token)
        if not allowed:
            self.refused.add(index)
            return False
        return await self.s._budget_allows(self.context, token, self.limit)

    async def _ask_mask(self) -> None:
        """Ask the condition for its mask, kept if it has its own and agrees with the checks."""
        self.asked = True
        condition = self.s.condition
        if type(condition).logw_next is Potential.logw_next:
            return
        try:
            weights = await condition.logw_next(self.context)
        except ValueError:  # a context the condition rules out: asked token by token
            return
        logws = np.asarray(weights.weights, dtype=float)
        if not weights.is_log:
            with np.errstate(divide="ignore"):
                logws = np.log(logws)
        allowed = logws == 0
        if len(logws) != len(self.q) or not np.all(allowed | (logws == -math.inf)):
            return  # not boolean: the checks raise as before
        passed = [*self.accepted, *(self.rejected - self.refused)]  # by the condition
        if not allowed[passed].all() or allowed[list(self.refused)].any():
            return
        allowed &= self.q > 0
        allowed[list(self.accepted)] = False
        allowed[list(self.rejected)] = False
        self.unjudged, self.left = allowed, int(allowed.sum())

    async def _finish(self) -> tuple[Any, float, int, int]:
        """The rest of the step in closed form (see the module docstring)."""
        s, q = self.s, self.q
        vocab = s.target.vocab_eos
        unjudged = np.flatnonzero(self.unjudged)
        if s.budget is None:
            allowed = unjudged
        else:
            allowed = np.array(
                [i for i in unjudged if await s._budget_allows(self.context, vocab[i], self.limit)],
                dtype=np.int64,
            )
        mass = sum(self.accepted.values()) + float(q[allowed].sum())
        summary: dict[str, Any] = {"draws": 0, "accepted": 0, "rejected": 0, "token": None}
        summary["allowed_tokens"] = len(self.accepted) + len(allowed)
        summary["budget_checks"] = 0 if s.budget is None else len(unjudged)
        self.trace["summarised"] = summary
        checks = self._checks()
        if mass <= 0:  # nothing left that could be accepted: the target's mass is 0
            return self._weight_zero(allowed), -math.inf, self.draws, checks
        needed = s.max_accepts - self.accepts
        draws, failed, stopped = finish_counts(
            mass / self.total, needed, self.rejects, s.max_rejects, s.rng
        )
        summary.update(draws=draws, rejected=failed, accepted=draws - failed)
        self.draws += draws
        if stopped:
            return self._weight_zero(allowed), -math.inf, self.draws, checks
        if self.first is None:  # nothing accepted yet, so the first accept is from `allowed`
            index = pick_weighted({int(i): float(q[i]) for i in allowed}, s.rng)
            self.first = vocab[index]
            self._trace_drawn(index, "accepted")
        return self.first, self._ratio(), self.draws, checks

    def _weight_zero(self, allowed: np.ndarray) -> Any:
        """The token returned with weight zero: the last rejected one, or (if the step checked
        none) one drawn from q outside the allowed tokens, as a rejected draw is."""
        if self.last_rejected is not None:
            return self.last_rejected
        out = self.q.copy()
        out[allowed] = 0.0
        out[list(self.accepted)] = 0.0
        if not out.any():  # p rounded below 1 with every token allowed
            out = self.q
        index = draw_from_cdf(np.cumsum(out), out, self.s.rng)
        self._trace_drawn(index, "rejected")
        return self.s.target.vocab_eos[index]

    def _trace_drawn(self, index: int, verdict: str) -> None:
        label = self.trace["summarised"]["token"] = self.s._label(index)
        self.trace["drawn"].append(label)
        self.trace[verdict].append(label)
