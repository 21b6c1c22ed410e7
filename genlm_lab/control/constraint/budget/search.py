"""`SearchDistance`: a sound token bound for any boolean constraint, exact where its search finishes."""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from genlm_lab.control.constraint.budget.hooks import Closing
from genlm_lab.control.constraint.budget.tokens import (
    FAR,
    token_bytes,
    usable_mask,
)
from genlm_lab.control.constraint.llg import Key, MaskedPotential
from genlm_lab.control.potential.base import Potential

__all__ = ["SearchDistance"]


class SearchDistance:
    """A sound bound for any boolean constraint, exact where its search finishes.

    `fits(context, left)` is True where the constraint accepts `context`,
    where `upper` (a short completion's token count, EOS included) is at most
    `left`, and wherever the search below cannot decide; it is False only
    with one token left and `context` not accepted, with two left where no
    token that the family's `closing` leaves completes it, or where a depth-first
    search over every token the constraint allows, down to the tokens left,
    reaches no accepted context. The search gives up (keeps the prefix,
    counted as "unproven") when a context allows more than `max_branch`
    tokens or after `max_nodes` masks, and is not tried (nothing is read)
    with more than `max_depth` tokens left, where a proof would need more
    nodes than that anyway. It runs only on constraints with a
    cheap whole-vocabulary mask (`allowed`: grammars, JSON schemas); others
    (a Python check, a model-based judge) are only asked `complete` with one
    token left, so AWRS never masks the vocabulary with them.

    Args:
        potential: the boolean constraint over the run's tokens.
        upper: `context -> tokens to end it (EOS included) | None`, an upper bound.
        max_branch: the most allowed tokens a searched context may have.
        max_nodes: the most masks one `fits` may read.
        max_depth: the most tokens left for which anything is checked (None: any).
        cache_size: how many contexts' proven bounds to keep.
        masks: whether to search with the constraint's masks (None: where it has `allowed`).
        closing: how the constraint's texts close (`BudgetHooks.closing`; JSON's: a
            document parses, and ends in the byte that closes its first value). With
            it, one token before EOS is decided exactly however many tokens the
            constraint allows: only the tokens that end in that byte (or are
            whitespace) and hold enough closing bytes are checked, no mask is read.
        lower: `ids -> tokens to end them (EOS included) | None`, a lower bound
            (`budget.lower_bound`: a superset's exact count): more than the tokens left
            is refused at any depth, without a mask.
    """

    exact = False
    #: A `FinishGuide` where the constraint names a short finish (JSON), else None.
    guide = None
    #: `max_branch`'s default: a vocabulary with at most this many usable tokens is
    #: searched at any depth (`fit_check_for`), so small ones are decided exactly
    max_branch_default = 64

    def __init__(
        self,
        potential: Potential,
        upper: Callable[[Sequence[Any]], int | None] | None = None,
        max_branch: int = max_branch_default,
        max_nodes: int = 256,
        max_depth: int | None = 8,
        cache_size: int = 65536,
        masks: bool | None = None,
        closing: Closing | None = None,
        lower: Callable[[tuple[int, ...]], int | None] | None = None,
    ) -> None:
        self.potential = potential
        necessary = closing.necessary if closing is not None else None
        closer = closing.closer if closing is not None else None
        self.necessary = necessary
        self.closer = closer
        self.tokens = token_bytes(potential)
        tokens = self.tokens if necessary or closer else None
        self._bytes = tokens if necessary is not None else None
        self._text = tokens
        # each usable token's last non-whitespace byte (-1: none) and its closing bytes,
        # what `closer` is compared with
        self._last = self._closing = None
        self._enders: dict[tuple[int, int], list[int]] = {}  # closer's answer -> candidates
        if closer is not None and tokens is not None:
            ends = [t.rstrip(b" \t\r\n")[-1:] for t in tokens]
            self._last = np.array([e[0] if e else -1 for e in ends], dtype=np.int64)
            self._closing = np.array([sum(map(t.count, closing.closing_bytes)) for t in tokens])
        self.encode = potential.encode
        self.lookup = potential.lookup
        self.masks = callable(getattr(potential, "allowed", None)) if masks is None else masks
        self.upper = upper
        self.lower = lower
        self.max_branch = max_branch
        self.max_nodes = max_nodes
        self.max_depth = max_depth
        self.cache_size = cache_size
        self._usable = usable_mask(potential)
        self._engine = potential.engine if isinstance(potential, MaskedPotential) else None
        # context -> (most tokens proven too few, fewest tokens proven enough)
        self._bounds: OrderedDict[tuple, tuple[int, int]] = OrderedDict()
        #: kept: proven to fit; refused: proven not to; unproven: kept, undecided
        self.stats = {"kept": 0, "refused": 0, "unproven": 0}

    def _tokens(self, ids: tuple[int, ...]) -> list[Any]:
        vocab = self.potential.vocab
        return [vocab[i] for i in ids]

    async def _accepts(self, ids: tuple[int, ...]) -> bool:
        if self._bytes is not None and not self.necessary(b"".join([self._bytes[i] for i in ids])):
            return False
        if self._engine is not None:  # a grammar's own cached check, no re-encoding
            return bool(self._engine.accepting(Key(ids)))
        return await self.potential.complete(self._tokens(ids)) == 0

    async def _allowed(self, ids: tuple[int, ...]) -> np.ndarray:
        if self._engine is not None:
            mask = np.asarray(self._engine.mask(Key(ids)), dtype=bool)[:-1]
        else:
            allowed = getattr(self.potential, "allowed", None)
            context = self._tokens(ids)
            if callable(allowed):
                mask = np.asarray(allowed(context), dtype=bool)[:-1]
            else:
                weights = np.asarray((await self.potential.logw_next(context)).weights, dtype=float)
                mask = weights[:-1] > -math.inf
        if self._usable is not None:
            mask = mask & self._usable
        return np.flatnonzero(mask)

    async def accepts(self, ids: Sequence[int]) -> bool:
        """Whether the constraint accepts the text of `ids` as complete."""
        return await self._accepts(tuple(ids))

    async def allowed(self, ids: Sequence[int]) -> np.ndarray:
        """The usable tokens the constraint allows after `ids` (one mask read)."""
        return await self._allowed(tuple(ids))

    async def enders(self, ids: Sequence[int]) -> list[int] | None:
        """Tokens among which every one that completes the text of `ids` is (None: unknown).

        Known where the family says how its texts close (`closing`): the tokens ending in the byte that closes it.
        """
        if self.closer is None or self._text is None or self._last is None:
            return None
        found = self.closer(b"".join([self._text[i] for i in ids]))
        return None if found is None else self._candidates(found)

    def _candidates(self, found: tuple[int, int]) -> list[int]:
        """The usable tokens that end in `found`'s byte and hold its closing bytes (cached)."""
        candidates = self._enders.get(found)
        if candidates is None:
            byte, n = found
            keep = ((self._last == byte) | ((self._last == -1) & (n == 0))) & (self._closing >= n)
            if self._usable is not None:
                keep &= self._usable
            candidates = self._enders[found] = np.flatnonzero(keep).tolist()
        return candidates

    def _too_far(self, ids: tuple[int, ...], left: int) -> bool:
        """Whether `lower` says that `ids` need more than `left` tokens (a refusal is then
        checked against the constraint's own completion, so a complete text is never refused
        on a bound)."""
        if self.lower is None:
            return False
        need = self.lower(ids)
        return need is not None and need > left

    def _bound(self, key: tuple) -> tuple[int, int]:
        found = self._bounds.get(key)
        if found is None:
            return 0, FAR
        self._bounds.move_to_end(key)
        return found

    def _learn(self, key: tuple, low: int = 0, high: int = FAR) -> None:
        old_low, old_high = self._bound(key)
        self._bounds[key] = (max(low, old_low), min(high, old_high))
        if len(self._bounds) > self.cache_size:
            self._bounds.popitem(last=False)

    async def _can(self, ids: tuple[int, ...], r: int, spent: list[int]) -> bool | None:
        """Whether some completion of at most `r` tokens (EOS included) exists; None: unknown."""
        if r < 1:
            return False
        low, high = self._bound(ids)
        if high <= r:
            return True
        if low >= r:
            return False
        if await self._accepts(ids):
            self._learn(ids, high=1)
            return True
        if r == 1:
            self._learn(ids, low=1)
            return False
        if self._too_far(ids, r):  # not complete: the bound may refuse it
            return False
        if spent[0] >= self.max_nodes:
            return None
        spent[0] += 1
        if r == 2:
            last = await self._two_left(ids)
            if last is not None:
                return last
        allowed = await self._allowed(ids)
        if len(allowed) > self.max_branch:
            return None
        unknown = False
        for i in allowed.tolist():
            found = await self._can((*ids, i), r - 1, spent)
            if found:
                self._learn(ids, high=r)
                return True
            unknown = unknown or found is None
        if unknown:
            return None
        self._learn(ids, low=r)
        return False

    def needed_at_least(self, ids: Sequence[int]) -> int | None:
        """The most the lower bound or an earlier search proved of the tokens (EOS included)
        that end the text of `ids`; None where neither says more than one."""
        ids = tuple(ids)
        proven = self._bound(ids)[0] + 1
        bound = self.lower(ids) if self.lower is not None else None
        least = max(proven, bound if bound is not None and bound < FAR - 1 else 0)
        return least if least > 1 else None

    async def fits(
        self, context: Sequence[Any], left: int, ids: Sequence[int] | None = None
    ) -> bool:
        """Whether `context` can end within `left` tokens (EOS included); see the class docstring.

        `ids`, if given, are the context's indices in the constraint's vocabulary (saves
        encoding it again).
        """
        ids = tuple(self.potential.encode(context) if ids is None else ids)
        if ids and ids[-1] >= len(self.potential.vocab):  # EOS (only ever last) is not text
            ids = ids[:-1]
        if left < 1:
            return self._count(False)
        if left == 1:  # only EOS is left: exactly whether the text is complete
            return self._count(await self._accepts(ids))
        if self._too_far(ids, left) and not await self._accepts(ids):
            return self._count(False)
        if not self.masks or (self.max_depth is not None and left > self.max_depth):
            # nothing to prove it with, or too far from the end to prove: keep it, ask nothing
            self.stats["unproven"] += 1
            return True
        low, high = self._bound(ids)
        if high <= left:
            return self._count(True)
        if low >= left:
            return self._count(False)
        if await self._accepts(ids):
            self._learn(ids, high=1)
            return self._count(True)
        if left == 2:  # one token, then EOS: decided by the tokens that can end the text
            last = await self._two_left(ids)
            if last is not None:
                return self._count(last)
        allowed = await self._allowed(ids)
        if len(allowed) > self.max_branch:  # no proof within reach: keep it, read no finish
            self.stats["unproven"] += 1
            return True
        if self.upper is not None:
            need = self.upper(self._tokens(ids))
            if need is not None:
                self._learn(ids, high=need)
                if need <= left:
                    return self._count(True)
        found = await self._can(ids, left, [0])
        if found is None:
            self.stats["unproven"] += 1
            return True
        return self._count(found)

    async def _two_left(self, ids: tuple[int, ...]) -> bool | None:
        """Whether the text of `ids` ends within two tokens (one, then EOS), learnt as its
        bound; None where `closer` knows nothing."""
        last = await self._last_token(ids)
        if last is not None:
            self._learn(ids, **({"high": 2} if last else {"low": 2}))
        return last

    async def _last_token(self, ids: tuple[int, ...]) -> bool | None:
        """Whether one token completes the text of `ids` (None: `closer` knows nothing).

        Only the tokens `closer` leaves are checked (see the class docstring); the
        completion check also tells whether the constraint allows the token.
        """
        candidates = await self.enders(ids)
        if candidates is None:
            return None
        for i in candidates:
            if await self._accepts((*ids, i)):
                return True
        return False

    def _count(self, ok: bool) -> bool:
        self.stats["kept" if ok else "refused"] += 1
        return ok
