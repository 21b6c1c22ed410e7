"""`TokenHealer`: rescue a beam whose every candidate cannot read the next byte.

A pruned beam can commit to a tokenization that later dead-ends: the token
in progress has no child for the next byte and committing it leaves no token
that starts with that byte. Healing backs off inside the token in progress:
it commits a shorter token (`partial[:k]`, a token of the vocabulary), replays
the remaining bytes `partial[k:]` from a fresh token (committing further
tokens where the replay gets stuck), then reads the next byte. The healed
candidate's weight is exact for its new token path: the weight at the start
of the token, plus the log-probability of the shorter token, plus the
weights of the replayed steps.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from genlm_lab.bytes.record import HealEvent
from genlm_lab.bytes.trie_state import LazyTrieState, eot_edges


class TokenHealer:
    """Finds another tokenization of a candidate's partial token that can read a byte.

    Args:
        max_backoff: most bytes to un-read from the end of the partial token
            (None: all the way to one byte).
        max_splits: most extra tokens committed while replaying (None: no limit,
            0: the replayed bytes must fit in one token).
        verbose: print each attempt.
    """

    def __init__(
        self, max_backoff: int | None = None, max_splits: int | None = None, verbose: bool = False
    ) -> None:
        for name, value in (("max_backoff", max_backoff), ("max_splits", max_splits)):
            if value is not None and (not isinstance(value, int) or value < 0):
                raise ValueError(f"{name} must be None or an int >= 0, got {value!r}")
        self.max_backoff = max_backoff
        self.max_splits = max_splits
        self.verbose = verbose

    async def try_heal(
        self, state: LazyTrieState, next_byte: int, event: HealEvent | None = None
    ) -> LazyTrieState | None:
        """A candidate equivalent to `state`'s bytes plus `next_byte`, or None.

        Tries backoff positions from the longest kept prefix to the shortest and
        returns the first that works. `event`, if given, is filled in.

        `state` needs only what genlm-bytes' healer reads: `lm_state`, `trie`,
        `node`, `weight`, `mass` (log-masses), `mode` and `partial` (bytes or a
        list of byte values). Prefixes of `partial` that are not trie paths are
        skipped; a terminated or unmaterialized state cannot be healed.
        """
        event = event if event is not None else HealEvent(byte=next_byte, position=-1)
        event.partial = state.partial
        if getattr(state, "terminated", False):
            return None
        try:
            log_mass = state.mass
        except ValueError:  # not materialized: no masses to back off with
            return None
        trie = state.trie.trie
        partial = list(state.partial)
        n = len(partial)
        root_mass = float(log_mass[trie.root])
        # Weight of the candidate at the start of its token in progress.
        start_weight = state.weight - float(log_mass[state.node]) + root_mass
        lowest = 1 if self.max_backoff is None else max(1, n - self.max_backoff)
        nodes = [trie.root]  # nodes[k] spells partial[:k], as far as the trie has it
        for b in partial:
            node = trie.children[nodes[-1]].get(b)
            if node is None:
                break
            nodes.append(node)
        for k in range(min(n, len(nodes) - 1), lowest - 1, -1):
            for leaf, token_id in eot_edges(trie, nodes[k]):
                m = float(log_mass[leaf])
                if m == -math.inf:
                    continue
                commit = LazyTrieState(
                    state.lm_state << token_id,
                    state.trie,
                    trie.root,
                    start_weight + m - root_mass,
                    mode=state.mode,
                )
                # A list, not bytes: next_byte may be EOS (257), read after a committed token.
                healed = await self._replay(commit, [*partial[k:], next_byte], event)
                if self.verbose:
                    print(
                        f"[heal] keep {bytes(partial[:k])!r} as token {token_id}: "
                        + ("ok" if healed else "failed")
                    )
                if healed is not None:
                    event.backoff = n - k
                    event.committed = [token_id, *event.committed]
                    event.success = True
                    return healed
        return None

    async def _replay(
        self, state: LazyTrieState, data: Sequence[int], event: HealEvent
    ) -> LazyTrieState | None:
        committed: list[int] = []
        splits = 0
        event.lm_calls += await state._materialize_counted()
        for b in data:
            nxt = state << b
            if nxt is None:
                if self.max_splits is not None and splits >= self.max_splits:
                    return None
                splits += 1
                # `extensions()` holds one candidate per end-of-token edge with mass, in
                # edge order; the ids come from the edges (the LM state may not list them).
                mass = state.prob_mass
                ids = [t for leaf, t in eot_edges(state.trie.trie, state.node) if mass[leaf] > 0]
                for token_id, ext in zip(ids, state.extensions(), strict=True):
                    event.lm_calls += await ext._materialize_counted()
                    nxt = ext << b
                    if nxt is not None:
                        committed.append(token_id)
                        break
                if nxt is None:
                    return None
            state = nxt
        event.committed = committed
        return state
