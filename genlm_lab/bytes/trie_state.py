"""`LazyTrieState`: one candidate tokenization of the bytes read so far.

A candidate is a committed token context (`lm_state`) plus a node of the
token-byte trie: the bytes of the token being read (`partial`). Its `weight`
is the log-probability that the model's next tokens spell the bytes read so
far, i.e. log P(committed tokens) + log P(next token starts with `partial`).

The node masses (how much next-token probability lies under every trie node)
come from one LM call and one trie pass, and only when needed
(`materialize`). They are kept as probabilities; logs are taken only for the
few nodes a candidate visits.
"""

from __future__ import annotations

import asyncio
import math
from functools import cached_property
from typing import Any

import numpy as np

from genlm_lab.bytes._beam_profile import PROFILER
from genlm_lab.bytes.lm_state import StatefulTokenizedLM
from genlm_lab.bytes.probs import EOS, EOT, N_SLOTS, LazyByteProbs
from genlm_lab.bytes.trie import TrieMode
from genlm_lab.util import escape_bytes


def _log(x: float) -> float:
    return math.log(x) if x > 0 else -math.inf


class PartialBytes(bytes):
    """The bytes of a token in progress; also equal to the list of their byte values.

    genlm-bytes gives `LazyTrieState.partial` as a list of ints, genlm_lab as
    bytes: this subclass equals both (`b"ab"` and `[97, 98]`), so code written
    for either compares as it expects. It hashes as bytes (lists do not hash).
    """

    def __eq__(self, other: object) -> bool:
        if isinstance(other, list):
            return list(self) == other
        return bytes.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = bytes.__hash__


def eot_edges(trie: Any, node: int) -> list[tuple[int, int]]:
    """The end-of-token edges leaving `node`, as (leaf node, token id) pairs.

    An edge ends a token when it leads to a leaf, whatever its key (a
    `TokenByteTrie` keys it `(eot_token, token_id)`).
    """
    leaves = trie.leaf2token_id
    out = []
    for leaf in trie.children[node].values():
        token_id = leaves.get(leaf)
        if token_id is not None:
            out.append((leaf, int(token_id)))
    return out


class LazyTrieState:
    """A candidate: committed tokens, a position inside the next token, a weight.

    Args:
        lm_state: the committed token context.
        trie: the `AsyncTokenByteTrie` shared by all candidates.
        node: current trie node (the root right after a token is committed).
        weight: log-probability of the bytes read so far along this candidate.
        mass: next-token mass under every trie node (probabilities), or None
            until `materialize` is awaited. The `mass` attribute reads it as
            logs (as genlm-bytes); `prob_mass` as probabilities.
        mode: `TrieMode.WITH_EOS` routes EOS tokens to the EOS edge;
            `WITHOUT_EOS` reads them as ordinary tokens (prefilling).
        terminated: whether EOS was consumed.
    """

    def __init__(
        self,
        lm_state: StatefulTokenizedLM,
        trie: Any,
        node: int,
        weight: float,
        mass: np.ndarray | None = None,
        mode: TrieMode = TrieMode.WITH_EOS,
        terminated: bool = False,
    ) -> None:
        self.lm_state = lm_state
        self.trie = trie
        self.node = node
        self.weight = float(weight)
        self._mass = mass
        self._log_mass: tuple[np.ndarray, np.ndarray] | None = None  # (log, of which probs)
        self.mode = mode
        self.terminated = terminated
        self._extensions: list[LazyTrieState] | None = None
        self._probs: np.ndarray | None = None
        self._pending: asyncio.Future | None = None  # an in-flight materialize

    @classmethod
    def initial(cls, lm: Any, trie: Any, mode: TrieMode = TrieMode.WITH_EOS) -> LazyTrieState:
        """The candidate before any byte: the model's initial context at the root, weight 0."""
        lm_state = lm if isinstance(lm, StatefulTokenizedLM) else StatefulTokenizedLM.initial(lm)
        return cls(lm_state, trie, trie.trie.root, 0.0, mode=mode)

    # -- structure ---------------------------------------------------------------

    @property
    def _t(self) -> Any:
        return self.trie.trie

    @property
    def root(self) -> int:
        """The trie's root node."""
        return self._t.root

    @property
    def partial(self) -> PartialBytes:
        """The bytes of the token being read (from its start to `node`).

        Equal to those bytes and to the list of their values (genlm-bytes' form).
        """
        return PartialBytes(self._t._node_prefix[self.node])

    @property
    def materialized(self) -> bool:
        """Whether the LM call and trie pass for this candidate are done."""
        return self._mass is not None

    @property
    def prob_mass(self) -> np.ndarray:
        """Next-token probability mass under every trie node.

        Raises:
            ValueError: if the state is not materialized yet.
        """
        if self._mass is None:
            raise ValueError(
                "LazyTrieState is not yet materialized: await state.materialize() first"
            )
        return self._mass

    @property
    def mass(self) -> np.ndarray:
        """Log of `prob_mass` (-inf for an empty subtree): log-masses, as in genlm-bytes.

        Raises:
            ValueError: if the state is not materialized yet.
        """
        probs = self.prob_mass
        if self._log_mass is None or self._log_mass[1] is not probs:
            with np.errstate(divide="ignore"):
                self._log_mass = (np.log(probs), probs)
        return self._log_mass[0]

    def log_mass(self, node: int) -> float:
        """log of `prob_mass[node]` (-inf for an empty subtree)."""
        return _log(float(self.prob_mass[node]))

    def actions(self) -> dict:
        """The edges leaving the current node (byte -> child, EOT keys -> leaves)."""
        return self._t.children[self.node]

    def get_EOT(self) -> int | None:  # noqa: N802 - seed API name
        """The leaf of the token ending at this node, or None (seed API).

        With duplicate byte strings, the lowest token id's leaf (see `extensions`).
        """
        edges = eot_edges(self._t, self.node)
        return min(edges, key=lambda edge: edge[1])[0] if edges else None

    def get_all_EOT(self) -> list[tuple[int, int]]:  # noqa: N802 - genlm-bytes API name
        """Every end-of-token edge at this node as (leaf, token id): several for duplicates."""
        return eot_edges(self._t, self.node)

    def with_mode(self, mode: TrieMode) -> LazyTrieState:
        """The same candidate, with tokens started from now on read in `mode`.

        A candidate inside a token keeps the masses of that token (its
        distribution was drawn in the old mode). A candidate at the root has
        not started its next token: its masses are recomputed in `mode` from
        the stored token probabilities (the weight does not change, since
        the root holds all the mass in both modes).
        """
        mass = self._mass
        if mode != self.mode and mass is not None and self.node == self.root:
            mass = np.asarray(self._t.weight_sum(self._probs, mode), dtype=np.float64)
        state = LazyTrieState(
            self.lm_state, self.trie, self.node, self.weight, mass, mode, self.terminated
        )
        state._probs = self._probs
        return state

    # -- transitions ---------------------------------------------------------------

    def __lshift__(self, b: int) -> LazyTrieState | None:
        """The candidate after byte `b` (or EOS = 257), or None where it cannot read it."""
        if self.terminated:
            return None
        node = self._t.children[self.node].get(b)
        if node is None:
            return None
        mass = self.prob_mass
        child = float(mass[node])
        if child <= 0:
            return None
        weight = self.weight + math.log(child) - _log(float(mass[self.node]))
        return LazyTrieState(
            self.lm_state, self.trie, node, weight, mass, self.mode, terminated=b == EOS
        )

    def extensions(self) -> list[LazyTrieState]:
        """Candidates that commit the token ending here (one per token id), at the root.

        Their weight is exact; they are not materialized (no LM call yet).
        """
        if self._extensions is None:
            out = []
            if not self.terminated:
                mass = self.prob_mass
                here = _log(float(mass[self.node]))
                for leaf, token_id in eot_edges(self._t, self.node):
                    m = float(mass[leaf])
                    if m <= 0:
                        continue
                    out.append(
                        LazyTrieState(
                            self.lm_state << token_id,
                            self.trie,
                            self.root,
                            self.weight + math.log(m) - here,
                            mode=self.mode,
                        )
                    )
            self._extensions = out
        return self._extensions

    def extend_all(self) -> list[LazyTrieState]:
        """genlm-bytes' name for `extensions`: one candidate per token ending here."""
        return self.extensions()

    def extend(self) -> LazyTrieState | None:
        """The candidate that commits the token ending here, or None (seed API)."""
        ext = self.extensions()
        return ext[0] if ext else None

    @cached_property
    def logp_next(self) -> LazyByteProbs:
        """Log-probabilities of the next byte, EOT (slot 256) and EOS (257) for this candidate."""
        logps = np.full(N_SLOTS, -np.inf)
        mass = self.prob_mass
        total = float(mass[self.node])
        if total <= 0 or self.terminated:
            return LazyByteProbs(logps)
        eot = 0.0
        leaves = self._t.leaf2token_id
        for key, child in self.actions().items():
            m = float(mass[child])
            if child in leaves:  # an end-of-token edge, whatever the trie's eot_token
                eot += m
            elif isinstance(key, int) and 0 <= key < N_SLOTS and m > 0:
                logps[key] = math.log(m / total)
        if eot > 0:
            logps[EOT] = math.log(eot / total)
        return LazyByteProbs(logps)

    async def materialize(self) -> LazyTrieState:
        """Compute the node masses: one LM call and one trie pass (both batched).

        Concurrent calls on one state (particles whose contexts share a beam)
        share one computation. A caller that is cancelled does not cancel it
        for the others: they then compute it themselves.
        """
        await self._materialize_counted()
        return self

    async def _materialize_counted(self) -> bool:
        """Materialize; True iff this call made the LM call (not just awaited another's)."""
        computed = False
        while self._mass is None:
            pending = self._pending
            if pending is None:
                await self._compute()
                computed = True
                continue
            try:
                await asyncio.shield(pending)
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if not pending.cancelled() or (task is not None and task.cancelling()):
                    raise  # this caller was cancelled, not the shared computation
        return computed

    async def _compute(self) -> None:
        pending = self._pending = asyncio.get_running_loop().create_future()
        try:
            profiler = PROFILER.get()
            if profiler is None:
                logp = await self.lm_state.logp_next()
                probs, mass = await self._masses(logp)
            else:  # a profiled beam (BeamParams(profile=True)): the model's part, the trie's
                logp = await profiler.wrap(self.lm_state.logp_next(), "lm.forward", count=False)
                probs, mass = await profiler.wrap(self._masses(logp), "trie")
            self._probs = probs
            self._mass = mass
        finally:
            self._pending = None
            if self._mass is None:
                pending.cancel()  # waiters retry and meet their own error, if any
            else:
                pending.set_result(None)

    async def _masses(self, logp: Any) -> tuple[np.ndarray, np.ndarray]:
        """Token probabilities from log-probabilities, and the trie's node masses of them."""
        probs = logp.detach().to("cpu").double().exp().numpy()
        mass = await self.trie.weight_sum(probs, self.mode)
        return probs, np.asarray(mass, dtype=np.float64)

    async def cleanup(self) -> None:
        """Stop the trie's background worker."""
        await self.trie.cleanup()

    # -- display -------------------------------------------------------------------

    def __repr__(self) -> str:
        text = (
            f"{self.weight:.2f}: {self.lm_state!r}|{escape_bytes(self.partial, visible_space=True)}"
        )
        return text + ("<EOS>" if self.terminated else "")
