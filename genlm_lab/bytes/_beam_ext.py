"""Token extensions of a byte beam: which to evaluate, evaluating them, the mixture.

Mixed into `ByteBeamState`. Evaluating an extension is the beam's whole cost
(one LM call and one trie pass); all of a step's extensions go concurrently,
so the backend runs them as one batched forward. With known bytes ahead
(`expect`), that forward also carries the extensions of the next bytes (see
`genlm_lab.bytes.lookahead`).
"""

from __future__ import annotations

import asyncio
import math
from typing import Any, Self

import numpy as np

from genlm_lab.bytes._beam_profile import awaiting
from genlm_lab.bytes.lm_state import StatefulTokenizedLM
from genlm_lab.bytes.lookahead import (
    DEFAULT_DEPTH,
    ROWS_PER_CANDIDATE,
    Lookahead,
    LookaheadStats,
    check_budget,
    check_depth,
    check_text,
    speculative_rows,
)
from genlm_lab.bytes.probs import EOT
from genlm_lab.bytes.trie_state import LazyTrieState
from genlm_lab.util import logsumexp

WIDEN_FACTOR = 4
"""With `on_wide="widen"`, `prune()` keeps at most this many times K candidates."""


async def _warm(lm: StatefulTokenizedLM) -> int:
    """Ask the backend for a context's log-probabilities so it caches them; 0 LM calls counted."""
    try:
        await lm.model.next_token_logprobs(lm.context)
    except Exception:  # a speculative row never fails the beam; the real call will say why
        pass
    return 0


class ExtensionMixin:
    """Extension selection and evaluation for `ByteBeamState`."""

    states: list[LazyTrieState]
    params: Any
    position: int
    logZ: float
    _ahead: Lookahead | None
    _ext: list[LazyTrieState] | None
    _ext_dropped: list[LazyTrieState]
    _ext_skipped: int

    def _extension_candidates(self) -> tuple[list[LazyTrieState], list[LazyTrieState]]:
        """Extensions worth evaluating (thresholds applied), and the ones skipped."""
        cands = [e for s in self.states for e in s.extensions()]
        if not cands:
            return [], []
        logZ = self.logZ
        cut = self.params.log_prune_threshold
        keep = [e for e in cands if e.weight - logZ > cut]
        eps = self.params.extend_threshold
        if eps > 0 and keep:
            keep.sort(key=lambda e: e.weight)
            total = 0.0
            drop = 0
            for e in keep:
                if e.materialized:
                    break
                total += math.exp(e.weight - logZ)
                if total > eps:
                    break
                drop += 1
            keep = keep[drop:]
        kept = {id(e) for e in keep}
        return keep, [e for e in cands if id(e) not in kept]

    async def extend(self, logZ: float) -> list[LazyTrieState]:
        """The candidates' token-committing extensions, materialized (seed API).

        Those whose share of `logZ` plus all extension weights is at most
        `prune_threshold` are left out. `logp_next` and `<<` do this themselves.
        """
        cands = [e for s in self.states for e in s.extensions()]
        total = logsumexp([float(logZ)] + [e.weight for e in cands])
        cut = self.params.log_prune_threshold
        keep = [e for e in cands if e.weight - total > cut]
        await self._evaluate(keep)
        return keep

    async def _evaluate(self, states: list[LazyTrieState]) -> int:
        """Materialize `states` concurrently; the number of LM calls this call made.

        States another caller is already computing (particles sharing this
        beam) are awaited, not counted again.
        """
        todo = [s for s in states if not s.materialized]
        if not todo:
            return 0
        spec = self._speculate(todo)
        made = await awaiting(
            asyncio.gather(*(s._materialize_counted() for s in todo), *(_warm(lm) for lm in spec))
        )
        return sum(made[: len(todo)])

    def _speculate(self, todo: list[LazyTrieState]) -> list[StatefulTokenizedLM]:
        """Rows to add to this forward for the known bytes ahead (none without `expect`)."""
        ahead = self._ahead
        if ahead is None:
            return []
        issued = ahead.issued
        hits = sum(s.lm_state.context in issued for s in todo)
        ahead.stats.used += hits
        text = ahead.ahead(self.position)
        if not text or hits == len(todo):
            return []  # everything was evaluated ahead: no forward to join
        K = self.params.K * (WIDEN_FACTOR if self.params.widens else 1)
        budget = ROWS_PER_CANDIDATE * K if ahead.budget is None else ahead.budget
        room = getattr(todo[0].lm_state.model, "batch_size", None)
        if isinstance(room, int):  # rows past the backend's batch size would cost a forward
            budget = min(budget, max(0, room - len(todo)))
        rows = speculative_rows(self.states, todo, text, K, budget)
        rows = [lm for lm in rows if lm.context not in issued]
        issued.update(lm.context for lm in rows)
        ahead.stats.rows += len(rows)
        return rows

    def expect(
        self, text: bytes | str, lookahead: int = DEFAULT_DEPTH, budget: int | None = None
    ) -> Self:
        """The same beam, told the bytes it will read next (lookahead batching).

        While it reads them, each batched forward also evaluates the
        extensions its candidates may need over the next `lookahead` bytes, so
        later steps find them in the backend's cache. Results are unchanged.

        Args:
            text: the bytes to be read next (str is UTF-8 encoded).
            lookahead: bytes ahead to evaluate for (0 turns lookahead off).
            budget: most extra rows per forward (None: two per unit of beam
                width, `ROWS_PER_CANDIDATE`).
        """
        text = check_text(text)
        depth = check_depth(lookahead)
        budget = check_budget(budget)
        beam = self._share_history(self._derive(self.states, self._rows, self.position))
        beam._ext, beam._ext_dropped, beam._ext_skipped = (
            self._ext,
            self._ext_dropped,
            self._ext_skipped,
        )
        beam._ahead = Lookahead(text, self.position, depth, budget) if depth and text else None
        return beam

    @property
    def lookahead_stats(self) -> LookaheadStats | None:
        """Rows evaluated ahead and how many were then needed, or None without `expect`."""
        return None if self._ahead is None else self._ahead.stats

    def _set_ext(self, keep: list[LazyTrieState], dropped: list[LazyTrieState]) -> None:
        self._ext, self._ext_dropped, self._ext_skipped = keep, dropped, len(dropped)

    def _mixture(self) -> np.ndarray:
        """Unnormalised log-masses of the next slots over candidates and evaluated extensions."""
        rows = [s.logp_next.array + s.weight for s in self.states]
        rows.extend(e.logp_next.array + e.weight for e in self._ext or ())
        stacked = np.stack(rows)
        # Ending a token is not a byte: a candidate's EOT mass is in its extensions
        # (an extension's EOT would be an empty token, b"", never read as a byte).
        stacked[:, EOT] = -np.inf
        top = np.max(stacked, axis=0)
        finite = np.isfinite(top)
        logps = np.full(stacked.shape[1], -np.inf)
        with np.errstate(divide="ignore"):
            logps[finite] = top[finite] + np.log(
                np.exp(stacked[:, finite] - top[finite]).sum(axis=0)
            )
        return logps

    def _could_survive(
        self, exts: list[LazyTrieState], known: list[float]
    ) -> tuple[list[LazyTrieState], list[LazyTrieState]]:
        """Drop unevaluated extensions that cannot enter the top K after this byte.

        Reading a byte can only lower an extension's weight, so one already
        below the K-th best exact weight would be pruned before the next byte.
        """
        K = self.params.K
        if len(known) < K or self.params.widens:  # widening prune may keep them
            return exts, []
        kth = sorted(known, reverse=True)[K - 1]
        keep = [e for e in exts if e.materialized or e.weight > kth]
        return keep, [e for e in exts if not (e.materialized or e.weight > kth)]
