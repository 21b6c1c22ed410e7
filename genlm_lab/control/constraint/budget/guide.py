"""`FinishGuide`: how many tokens a prefix's short finish takes, a guess that steers and never refuses.

A sound finisher keeps every prefix it cannot prove hopeless, and far from
the end it can prove little: a JSON particle may write a long string while
its required keys wait, and die at `max_tokens`. A constraint that can name a
short completion (`JsonSchema.finish`; a Lark grammar's `BoolCFG.finish`) gives
a better guess: its length in the fewest tokens that spell it, plus EOS. The
guess is not a bound (a JSON finish is greedy; a grammar's shortest finish in
bytes need not be the fewest tokens), so it must not refuse anything; SMC uses
it as a twist (`Budget.overrun` and `Budget.twist` in `inference.budgets`): a
prefix whose finish overruns the tokens left is down-weighted and the
proposal avoids such tokens, and both are divided out again, so the target
is unchanged.

A twist may be any deterministic function of the prefix. This one is
`needed_after(ids, token)`: the finish of `ids + [token]` counted in tokens,
except where the constraint's family says the token keeps the prefix's finish
(`BudgetHooks.finish_reuses`: by default a token of plain string content
inside a string), which then answers for it. That spares a finish per token
that AWRS draws inside a string (thousands near the end of a budget), and a
failed walk per token where the finish cannot complete the value. And far
from the end no finish is walked at all (`overrun`): the finish of the last
prefix whose length is a multiple of `stride`, plus one token per token
written since, is taken as the tokens needed, and where that leaves `margin`
tokens to spare the overrun is 0. The
overrun keeps `slack` tokens of headroom, so particles are steered to close
while several tokens still do it in time, not one.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence

from genlm_lab.control.constraint.budget.tokens import ByteTrie, fewest_tokens

__all__ = ["FinishGuide"]


class FinishGuide:
    """Tokens (EOS included) a prefix's short finish takes; see the module docstring.

    Args:
        finish: `prefix bytes -> completion bytes | None` (None: no finish found).
        tokens: each token id's bytes.
        trie: the usable tokens' byte trie (finishes are counted over it).
        cache_size: how many prefixes' finishes to keep.
        unfinishable: `() -> lines`, where the finish got stuck so far (`JsonSchema.unfinishable`).
        reuses: `(finish, token bytes) -> bool`: whether the token keeps the prefix's
            finish (`BudgetHooks.finish_reuses`); None: never.
        stride: how often (in tokens) a far-from-the-end prefix's finish is walked.
        margin: the spare tokens under which every prefix's finish is walked.
        slack: tokens of headroom the overrun keeps: a finish that takes exactly the
            tokens left often leaves one right token to draw, which particles may
            all miss, so the guide steers `slack` tokens before that.
    """

    def __init__(
        self,
        finish: Callable[[bytes], bytes | None],
        tokens: Sequence[bytes],
        trie: ByteTrie,
        cache_size: int = 8192,
        unfinishable: Callable[[], list[str]] | None = None,
        stride: int = 8,
        margin: int = 8,
        slack: int = 2,
        reuses: Callable[[bytes | None, bytes], bool] | None = None,
    ) -> None:
        self.reuses = reuses
        self.stride = stride
        self.margin = margin
        self.slack = slack
        self.finish = finish
        #: What the finish could not complete so far ("$.date: format 'date' ..."), for alarms.
        self.unfinishable = unfinishable or list
        self.tokens = tokens
        self.trie = trie
        self.cache_size = cache_size
        self._tails: OrderedDict[tuple[int, ...], bytes | None] = OrderedDict()
        self._counts: dict[bytes, int | None] = {}
        #: finishes walked, tokens answered from their prefix's finish, prefixes far from the end
        self.stats = {"finishes": 0, "reused": 0, "far": 0}

    def tail(self, ids: tuple[int, ...]) -> bytes | None:
        """The finish of the text of `ids` (cached), or None."""
        if ids in self._tails:
            self._tails.move_to_end(ids)
            return self._tails[ids]
        text = b"".join(self.tokens[i] for i in ids)
        try:
            found = self.finish(text)
        except Exception:  # noqa: BLE001 - no finish is no guess, never an error
            found = None
        self.stats["finishes"] += 1
        self._tails[ids] = found
        if len(self._tails) > self.cache_size:
            self._tails.popitem(last=False)
        return found

    def count(self, tail: bytes | None) -> int | None:
        """Tokens to write `tail`, then EOS (None if there is no tail or no tokens spell it)."""
        if tail is None:
            return None
        if tail not in self._counts:
            n = fewest_tokens(self.trie, tail)
            if len(self._counts) > self.cache_size:
                self._counts.clear()
            self._counts[tail] = None if n is None else n + 1
        return self._counts[tail]

    def needed(self, ids: Sequence[int]) -> int | None:
        """Tokens (EOS included) the finish of `ids` takes, as `needed_after` defines it."""
        ids = tuple(ids)
        if not ids:
            return self.count(self.tail(ids))
        return self.needed_after(ids[:-1], ids[-1])

    def needed_after(self, ids: Sequence[int], token: int) -> int | None:
        """Tokens (EOS included) the finish of `ids + [token]` takes (None: unknown)."""
        ids = tuple(ids)
        if token >= len(self.tokens):
            return None
        before = self.tail(ids)
        if self.reuses is not None and self.reuses(before, self.tokens[token]):
            self.stats["reused"] += 1
            return self.count(before)
        return self.count(self.tail((*ids, token)))

    def overrun(self, ids: Sequence[int], left: int) -> int:
        """Tokens by which the finish of `ids` overruns `left - slack` tokens (0 where it has none).

        Far from the end (the last `stride`-multiple prefix's finish, plus one token per
        token since, leaves `margin` to spare) it is 0 without walking a finish.
        """
        ids = tuple(ids)
        left -= self.slack
        anchor = len(ids) - len(ids) % self.stride
        if anchor < len(ids):
            base = self.count(self.tail(ids[:anchor]))
            if base is not None and left - base - (len(ids) - anchor) >= self.margin:
                self.stats["far"] += 1
                return 0
        needed = self.needed(ids)
        return 0 if needed is None else max(0, needed - left)
