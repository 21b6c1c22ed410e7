"""`joint_fit_check`: whether a product of constraints can end in time, not just each factor.

Each factor's finisher answers for its own language, so "every factor fits"
is necessary but not enough: `[ab]+c` and `(ab)+c` can each end `a` in two
tokens (`c`, or `b c`), yet together they need three. A product needs one
completion that every factor accepts:

- `AutomatonDistance` over the intersection, where every factor is an
  automaton: exact, as for one;
- `JointSearch` otherwise: exact with one token left (all accept); with two,
  exact wherever a factor names the tokens that could end the text (an
  automaton's, a JSON text's closing bytes), each checked on every factor;
  further out, a depth-first search over the tokens that every factor
  allows, where the vocabulary is small (at most `max_branch` usable tokens)
  and within `max_nodes` masks; else kept ("unproven"). Sound everywhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from genlm_lab.control.constraint.budget.automaton import AutomatonDistance
from genlm_lab.control.constraint.budget.search import SearchDistance
from genlm_lab.control.constraint.budget.tokens import FitCheck

__all__ = ["JointSearch", "joint_fit_check"]


class JointSearch:
    """Whether one completion of at most the tokens left ends every factor (see the module).

    Args:
        finishers: the factors' finishers, over one list of tokens (the same ids).
        max_branch: the most usable tokens for which contexts further than two tokens from
            the end are searched.
        max_nodes: the most contexts one `fits` may expand.
        max_enders: the most candidate ending tokens checked with two tokens left.
    """

    exact = False
    guide = None

    def __init__(
        self,
        finishers: Sequence[Any],
        max_branch: int = SearchDistance.max_branch_default,
        max_nodes: int = 4096,
        max_enders: int = 256,
    ) -> None:
        self.finishers = list(finishers)
        self.encode = self.finishers[0].encode
        self.lookup = self.finishers[0].lookup
        self.max_branch = max_branch
        self.max_nodes = max_nodes
        self.max_enders = max_enders
        n_usable = min(_usable_count(f) for f in self.finishers)
        self.small = n_usable <= max_branch
        self._memo: dict[tuple[tuple[int, ...], int], bool] = {}
        #: kept: proven to fit; refused: proven not to; unproven: kept, undecided
        self.stats = {"kept": 0, "refused": 0, "unproven": 0}

    async def _accepts(self, ids: tuple[int, ...]) -> bool:
        for f in self.finishers:
            if not await f.accepts(ids):
                return False
        return True

    async def _enders(self, ids: tuple[int, ...]) -> list[int] | None:
        """The fewest candidate ending tokens any factor names (None: none names them)."""
        best = None
        for f in self.finishers:
            found = await f.enders(ids)
            if found is not None and (best is None or len(found) < len(best)):
                best = found
        return None if best is None else [int(i) for i in best]

    async def _allowed(self, ids: tuple[int, ...]) -> list[int]:
        common = None
        for f in self.finishers:
            mask = np.asarray(await f.allowed(ids), dtype=np.int64)
            common = mask if common is None else np.intersect1d(common, mask)
            if not len(common):
                break
        return common.tolist()

    async def _can(self, ids: tuple[int, ...], r: int, spent: list[int]) -> bool | None:
        """Whether some completion of at most `r` tokens (EOS included) ends every factor."""
        if r < 1:
            return False
        key = (ids, r)
        if key in self._memo:
            return self._memo[key]
        found: bool | None
        if await self._accepts(ids):
            found = True
        elif r == 1:
            found = False
        elif spent[0] >= self.max_nodes:
            return None
        else:
            spent[0] += 1
            found = await self._step(ids, r, spent)
        if found is not None:
            self._memo[key] = found
            if len(self._memo) > 65536:
                self._memo.clear()
        return found

    async def _step(self, ids: tuple[int, ...], r: int, spent: list[int]) -> bool | None:
        if r == 2:
            enders = await self._enders(ids)
            if enders is not None and len(enders) <= self.max_enders:
                for i in enders:
                    if await self._accepts((*ids, i)):
                        return True
                return False
        if not self.small:
            return None
        unknown = False
        for i in await self._allowed(ids):
            found = await self._can((*ids, i), r - 1, spent)
            if found:
                return True
            unknown = unknown or found is None
        return None if unknown else False

    async def fits(
        self, context: Sequence[Any], left: int, ids: Sequence[int] | None = None
    ) -> bool:
        """Whether some completion of `context` of at most `left` tokens ends every factor."""
        ids = tuple(self.encode(context) if ids is None else ids)
        n_tokens = len(self.finishers[0].tokens)
        if ids and ids[-1] >= n_tokens:  # EOS (only ever last) is not text
            ids = ids[:-1]
        if left > 2 and not self.small:  # nothing to prove it with: keep it, read nothing
            self.stats["unproven"] += 1
            return True
        found = await self._can(ids, left, [0])
        if found is None:
            self.stats["unproven"] += 1
            return True
        self.stats["kept" if found else "refused"] += 1
        return found


def _usable_count(finisher: Any) -> int:
    usable = getattr(finisher, "usable", None)
    if usable is not None:
        return len(usable)
    mask = getattr(finisher, "_usable", None)
    return int(np.count_nonzero(mask)) if mask is not None else len(finisher.tokens)


def joint_fit_check(finishers: Sequence[FitCheck]) -> FitCheck | None:
    """The finisher of a product of at least two factors' finishers, or None.

    None where the factors read different tokens, or one cannot name its masks
    and completions by token ids (a constraint without a byte vocabulary).
    """
    if len(finishers) < 2:
        return None
    # kept on the first finisher, by the others (a run builds its budget once per call)
    joints = finishers[0].__dict__.setdefault("_joints", [])
    for others, found in joints:
        if len(others) == len(finishers) - 1 and all(
            a is b for a, b in zip(others, finishers[1:], strict=True)
        ):
            return found
    found = _joint(finishers)
    joints.append((tuple(finishers[1:]), found))
    del joints[:-8]  # the last few products this factor was in
    return found


def _joint(finishers: Sequence[FitCheck]) -> FitCheck | None:
    tokens = [getattr(f, "tokens", None) for f in finishers]
    if any(t is None for t in tokens) or any(
        t is not tokens[0] and t != tokens[0] for t in tokens[1:]
    ):
        return None
    if all(isinstance(f, AutomatonDistance) for f in finishers):
        dfa = finishers[0].dfa
        for f in finishers[1:]:
            dfa = dfa.intersect(f.dfa) if dfa is not None else None
        if dfa is not None:
            usable = sorted(set.intersection(*(set(f.usable) for f in finishers)))
            first = finishers[0]
            return AutomatonDistance(dfa, first.tokens, usable, first.encode, first.lookup)
    if not all(getattr(f, "masks", True) for f in finishers):
        return None  # a factor without masks (a Python check): its finisher says all it can
    return JointSearch(finishers)
