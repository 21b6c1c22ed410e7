"""`WithinBudget`: a schema over tokens that also asks the document to end in time.

An SMC run with `max_tokens` keeps only documents of at most that many tokens
(EOS included): a particle still writing when the budget runs out is cut and
gets weight zero. `WithinBudget` refuses a token once the document can no
longer be finished within the tokens left. SMC does this by default for
every constraint (`SMC(...)(..., budget=True)`, `inference/budgets.py`);
`WithinBudget` is the same budget as a potential of its own (for a direct
sampler's mask, or a run with the budget off): it refuses with the very check
the default gives the schema (`fit_check_for`), and a run's budget checks and
guides a `WithinBudget` factor as it would the schema itself, so the two
forms give the same refusals and the same guide.

By default it is sound: a prefix is refused only where no completion fits.
Nothing that could end in time is set aside, so the run's target is exactly
the schema's, within `max_tokens`; where the check cannot decide (a string,
where nearly every token is allowed) the prefix is kept.

`greedy=True` is a stronger rule, and not exact: refuse as soon as
the schema's greedy `finish` (a short completion found by walking the mask,
in longest-match tokens, plus EOS) no longer fits. That finish is short but
not always the shortest, so a prefix some shorter completion could still have
finished in time may be refused: mass is set aside. Where no finish is found
it refuses nothing. Everything else is the schema's own mask, and `complete`
stays the schema's verdict.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from genlm_lab.control.constraint.budget.fit_check import fit_check_for
from genlm_lab.control.constraint.budget.hooks import BudgetHooks, OwnBudget
from genlm_lab.control.constraint.llg import GreedyTokenizer
from genlm_lab.control.core.weights import LazyWeights
from genlm_lab.control.potential.base import Potential

__all__ = ["WithinBudget"]


class WithinBudget(Potential, OwnBudget):
    """`schema` coerced onto `llm`'s tokens, refusing tokens after which it cannot end in time.

    Use it with the `max_tokens` of the run, and with AWRS, which checks only
    the tokens it draws; a direct sampler asks for every allowed token's
    finish where the budget is near (slow).

    Args:
        schema: a byte-level constraint with `finish(prefix) -> bytes | None` (`JsonSchema`).
        llm: the language model potential whose vocabulary the tokens are (`PromptedLLM`).
        max_tokens: the run's `max_tokens` (EOS included).
        cache_size: how many prefixes' finish lengths to keep.
        greedy: refuse wherever the greedy finish is too long (sets mass aside, see above).
        max_branch: with `greedy=False`, the most allowed tokens a searched prefix may have
            (None: the default budget's).
        max_nodes: with `greedy=False`, the most masks one check may read (None: the
            default budget's).

    Raises:
        ValueError: if `max_tokens` is not a positive int, or `schema` has no `finish`.
    """

    is_boolean = True

    def __init__(
        self,
        schema: Any,
        llm: Any,
        max_tokens: int,
        cache_size: int = 8192,
        greedy: bool = False,
        max_branch: int | None = None,
        max_nodes: int | None = None,
    ) -> None:
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, (int, np.integer)):
            raise ValueError(f"max_tokens must be a positive int, got {max_tokens!r}")
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be a positive int, got {max_tokens}")
        if not callable(getattr(schema, "finish", None)):
            raise ValueError(
                f"WithinBudget needs a constraint that can finish a prefix (JsonSchema), got "
                f"{type(schema).__name__}"
            )
        self.schema = schema
        self.inner = schema.coerce(llm, f=b"".join)
        super().__init__(self.inner.vocab, eos=self.inner.eos)
        self.max_tokens = int(max_tokens)
        self._bytes = [bytes(t) for t in self.vocab]
        self._tokenize = GreedyTokenizer(self._bytes, len(self._bytes), self.inner.special)
        self._needed: OrderedDict[bytes, tuple[int | None, bytes | None]] = OrderedDict()
        self._cache_size = cache_size
        self.greedy = greedy
        # the default budget's own check of the schema (its guide too), unless tuned here
        search = {"max_branch": max_branch, "max_nodes": max_nodes}
        self._search = fit_check_for(
            self.inner, **{k: v for k, v in search.items() if v is not None}
        )
        #: checked: finishes walked; reused: a parent's finish taken over; refused: tokens
        #: refused for the budget; unknown: prefixes with no finish found; unproven: kept
        #: because no search could decide (greedy=False).
        self.stats = {"checked": 0, "reused": 0, "refused": 0, "unknown": 0, "unproven": 0}

    def _default_name(self) -> str:
        return f"{self.inner.name} within {self.max_tokens} tokens"

    def __repr__(self) -> str:
        greedy = ", greedy=True" if self.greedy else ""
        return f"WithinBudget({self.schema!r}, max_tokens={self.max_tokens}{greedy})"

    def _upper(self, context: Sequence[Any]) -> int | None:
        """Tokens (EOS included) of the schema's finish after `context`: an upper bound."""
        ids = self.encode(context)
        text = b"".join(self._bytes[i] for i in ids)
        parent = text[: len(text) - len(self._bytes[ids[-1]])] if ids else None
        return self.needed(text, parent)

    def needed(self, text: bytes, parent: bytes | None = None) -> int | None:
        """Tokens (EOS included) that finishing `text` takes, by the schema's finish; None if
        no finish is found.

        With `parent` (`text` less its last token): where that token only adds to a string
        value and the parent's finish (which closes that string) still completes `text`,
        it is `text`'s finish too, and no new walk is made.
        """
        found = self._needed.get(text)
        if found is not None:
            self._needed.move_to_end(text)
            return found[0]
        tail = self._reuse(text, parent) if parent is not None else None
        if tail is None:
            self.stats["checked"] += 1
            tail = self.schema.finish(text)
        need = None if tail is None else len(self._tokenize(tail)) + 1
        if tail is None:
            self.stats["unknown"] += 1
        self._needed[text] = (need, tail)
        if len(self._needed) > self._cache_size:
            self._needed.popitem(last=False)
        return need

    def _reuse(self, text: bytes, parent: bytes) -> bytes | None:
        """The parent's finish, if `text` only wrote more of the string it closes."""
        found = self._needed.get(parent)
        if found is None or found[1] is None or not found[1].startswith(b'"'):
            return None
        added = text[len(parent) :]
        if b'"' in added or b"\\" in added:
            return None
        if not isinstance(self.schema, BudgetHooks):
            return None
        if not self.schema.finish_still_completes(text, found[1]):
            return None
        self.stats["reused"] += 1
        return found[1]

    async def ends_in_time(self, context: Sequence[Any], token: Any = None) -> bool:
        """Whether the text after `context` (tokens), then `token` if given, can still end
        within `max_tokens`."""
        context = list(context) if token is None else [*context, token]
        left = self.max_tokens - len(context)
        if not self.greedy:
            unproven = self._search.stats["unproven"]
            ok = await self._search.fits(context, left)
            self.stats["unproven"] += self._search.stats["unproven"] - unproven
        else:
            need = self._upper(context)
            ok = need is None or need <= left
        if not ok:
            self.stats["refused"] += 1
        return ok

    async def prefix(self, context: Sequence[Any]) -> float:
        if await self.inner.prefix(context) == -math.inf:
            return -math.inf
        return 0.0 if await self.ends_in_time(context) else -math.inf

    async def complete(self, context: Sequence[Any]) -> float:
        if len(context) >= self.max_tokens:
            return -math.inf
        return await self.inner.complete(context)

    async def score(self, context: Sequence[Any]) -> float:
        # the schema's cached-state check of the last token first, the finish only if it passes
        if context and not self.ends(context):
            if await self.inner.score(context) == -math.inf:
                return -math.inf
            return 0.0 if await self.ends_in_time(context) else -math.inf
        return await super().score(context)

    async def logw_next(self, context: Sequence[Any]) -> LazyWeights:
        """The schema's next-token weights, less the tokens after which it cannot end in time."""
        context = list(context)
        weights = np.array((await self.inner.logw_next(context)).weights, dtype=float)
        eos = len(self.vocab)
        if len(context) + 1 >= self.max_tokens:
            weights[:eos] = -math.inf  # no token fits before the forced EOS
        else:
            for i in np.flatnonzero(weights[:eos] > -math.inf).tolist():
                if not await self.ends_in_time(context, self.vocab[i]):
                    weights[i] = -math.inf
        if len(context) >= self.max_tokens:
            weights[eos] = -math.inf
        return self.make_lazy_weights(weights)

    async def cleanup(self) -> None:
        self._needed.clear()
        await self.inner.cleanup()
