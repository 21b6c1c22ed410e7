"""`ByteBeamState`: a byte-level LM that sums over the tokenizations of its input.

The beam holds candidate tokenizations (`LazyTrieState`) of the bytes read so
far; the sum of their weights (`logZ`) estimates the log-probability of those
bytes. Reading a byte advances every candidate inside its current token and,
where a token can end, *extends* it: commits the token and starts the next.
An extension needs the model's next-token distribution, so those LM calls
are the whole cost; all extensions of a step are evaluated concurrently (one
batched forward, one batched trie pass), and only those that can matter:
extensions already computed by `logp_next` are reused, and when reading a
byte without `logp_next`, an extension whose weight cannot reach the beam's
top K after this byte is not evaluated.

Every candidate dropped on the way (pruned, or an extension left
unevaluated) adds its weight to `log_dropped`: the exact log-probability of
the bytes read lies in `[logZ, logZ_upper]` (see `genlm_lab.bytes.interval`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cached_property
from typing import Any

import numpy as np

from genlm_lab.bytes._beam_display import BeamDisplay
from genlm_lab.bytes._beam_ext import WIDEN_FACTOR, ExtensionMixin
from genlm_lab.bytes._beam_heal import HealingMixin
from genlm_lab.bytes.base import StatefulByteLM, byte_bar
from genlm_lab.bytes.interval import add_log, keep_for_width, warn_width
from genlm_lab.bytes.lm_state import StatefulTokenizedLM
from genlm_lab.bytes.lookahead import DEFAULT_DEPTH, Lookahead
from genlm_lab.bytes.params import BeamParams, EmptyBeamError
from genlm_lab.bytes.probs import EOS, LazyByteProbs
from genlm_lab.bytes.record import BeamStep, CandidateRow, HealEvent
from genlm_lab.bytes.trie import TrieMode
from genlm_lab.bytes.trie_state import LazyTrieState
from genlm_lab.bytes.tries import trie_for
from genlm_lab.util import logsumexp

__all__ = ["BeamParams", "ByteBeamState", "EmptyBeamError"]


def _check_byte(b: Any) -> int:
    if isinstance(b, bool) or not hasattr(b, "__index__"):
        raise ValueError(f"a beam reads one byte as an int 0..255 (or EOS=257), got {b!r}")
    b = int(b)
    if not (0 <= b <= 255 or b == EOS):
        raise ValueError(f"byte {b} is outside 0..255 (use 257 for EOS)")
    return b


class ByteBeamState(ExtensionMixin, HealingMixin, BeamDisplay, StatefulByteLM):
    """A beam of candidate tokenizations: a language model over bytes.

    Build one with `await ByteBeamState.initial(llm, params)`; then
    `beam = await (beam.prune() << byte)` reads a byte and
    `await beam.logp_next()` gives the next-byte distribution.

    Args:
        states: the candidates.
        params: beam parameters.
        history: the step records shared along the chain (internal).
        position: bytes consumed so far.
    """

    def __init__(
        self,
        states: list[LazyTrieState],
        params: BeamParams,
        *,
        history: list[BeamStep] | None = None,
        position: int = 0,
        rows: list[CandidateRow] | None = None,
        base_len: int = 0,
        log_dropped: float = -math.inf,
    ) -> None:
        order = sorted(range(len(states)), key=lambda i: -states[i].weight)
        self.states = [states[i] for i in order]
        self.params = params
        self.position = position
        self._rows = [rows[i] for i in order] if rows is not None else None
        self._history = history if history is not None else []
        self._hlen = len(self._history)
        self._base_len = base_len
        self.log_dropped = float(log_dropped)
        self._warned = [False]  # shared along a chain: warn about the width once
        self._ahead: Lookahead | None = None  # known bytes ahead (see `expect`)
        self._ext: list[LazyTrieState] | None = None
        self._ext_dropped: list[LazyTrieState] = []  # skipped by the thresholds
        self._ext_skipped = 0
        #: why `<<` left this beam empty; raised when the empty beam is used
        self._empty_reason: EmptyBeamError | None = None

    # -- construction ---------------------------------------------------------------

    @classmethod
    async def initial(
        cls, llm: Any, params: BeamParams, trie_opts: dict | None = None
    ) -> ByteBeamState:
        """The beam before any byte.

        Args:
            llm: an `AsyncLM` (or a `StatefulTokenizedLM` to start from its context).
            params: beam parameters.
            trie_opts: extra `TokenByteTrie` options (e.g. `{"device": "cuda"}`).
        """
        if not isinstance(params, BeamParams):
            raise ValueError(f"params must be a BeamParams, got {type(params).__name__}")
        lm_state = llm if isinstance(llm, StatefulTokenizedLM) else StatefulTokenizedLM.initial(llm)
        trie = trie_for(lm_state.model, params.eos_byte_strings, trie_opts)
        state = LazyTrieState.initial(lm_state, trie, mode=TrieMode.WITH_EOS)
        await state.materialize()
        beam = cls([state], params, base_len=len(lm_state.context))
        beam._record(None, {id(state): "new"}, lm_calls=1)
        return beam

    def _derive(
        self,
        states: list[LazyTrieState],
        rows: list[CandidateRow] | None,
        position: int,
        dropped: Sequence[float] = (),
    ) -> ByteBeamState:
        history = self._history
        if len(history) != self._hlen:  # another branch grew the shared list: fork it
            history = history[: self._hlen]
        beam = ByteBeamState(
            states,
            self.params,
            history=history,
            position=position,
            rows=rows,
            base_len=self._base_len,
            log_dropped=add_log(self.log_dropped, logsumexp(list(dropped)))
            if dropped
            else self.log_dropped,
        )
        beam._warned = self._warned
        beam._ahead = self._ahead
        beam._empty_reason = self._empty_reason  # an empty beam stays empty, for that reason
        return beam

    def _check_width(self) -> None:
        """Warn once per chain when the interval is wider than `max_width`."""
        limit = self.params.max_width
        if limit is None or self._warned[0] or self.width <= limit:
            return
        self._warned[0] = True
        warn_width(self.position, self.width, limit)

    # -- reading ----------------------------------------------------------------------

    def __iter__(self):
        return iter(self.states)

    def __len__(self) -> int:
        return len(self.states)

    @cached_property
    def logZ(self) -> float:
        """log of the summed candidate weights: the estimated log-probability of the bytes read."""
        return logsumexp([s.weight for s in self.states])

    @property
    def logZ_upper(self) -> float:  # noqa: N802 - as logZ
        """Upper end of the certified interval: logZ plus the weight dropped so far.

        The exact log-probability of the bytes read (every tokenization, no
        pruning, no skipped extension) lies in `[logZ, logZ_upper]`; with
        nothing dropped the two are equal.
        """
        return add_log(self.logZ, self.log_dropped)

    @property
    def width(self) -> float:
        """`logZ_upper - logZ` (nats): how far logZ may be below the exact answer."""
        if self.log_dropped == -math.inf:
            return 0.0
        if self.logZ == -math.inf:
            return math.inf
        return self.logZ_upper - self.logZ

    @property
    def terminated(self) -> bool:
        """Whether the beam consumed EOS (every candidate ended)."""
        return bool(self.states) and all(s.terminated for s in self.states)

    @property
    def history(self) -> list[BeamStep]:
        """The step records up to this beam (see `genlm_lab.bytes.record`)."""
        return self._history[: self._hlen]

    @property
    def last_step(self) -> BeamStep | None:
        """The record of the step that produced this beam."""
        return self._history[self._hlen - 1] if self._hlen else None

    @property
    def trie(self) -> Any:
        """The shared `AsyncTokenByteTrie`."""
        return self.states[0].trie if self.states else None

    # -- extensions ---------------------------------------------------------------------

    # -- the two operations ----------------------------------------------------------------

    async def logp_next(self) -> LazyByteProbs:
        """Normalised log-probabilities of the next byte (0..255) and EOS (257).

        Evaluates the extensions of the candidates (concurrently); `<<` reuses them.

        Raises:
            EmptyBeamError: if the beam is empty (naming the byte that emptied
                it, and why) or terminated.
        """
        self._raise_if_empty()
        if self.terminated:
            raise EmptyBeamError(
                EOS, self.position, "the beam has ended (EOS consumed): nothing follows"
            )
        calls = 0
        if self._ext is None:
            keep, dropped = self._extension_candidates()
            calls = await self._evaluate(keep)
            self._set_ext(keep, dropped)
        logps = self._mixture()
        if not np.isfinite(logps).any() and self._ext_dropped:
            # The thresholds skipped every continuation (say, each of two equal
            # extensions is below prune_threshold): evaluate them after all.
            calls += await self._evaluate(self._ext_dropped)
            self._set_ext(self._ext + self._ext_dropped, [])
            logps = self._mixture()
        finite = np.isfinite(logps)
        if not finite.any():
            raise EmptyBeamError(
                EOS, self.position, "no candidate has a continuation of positive probability"
            )
        logps -= logsumexp(logps[finite])
        probs = LazyByteProbs(logps)
        step = self.last_step
        if step is not None and self._hlen == len(self._history):
            step.next_logprobs = [float(x) for x in logps]
            step.lm_calls_next += calls
        return probs

    async def __lshift__(self, a: int) -> ByteBeamState:
        """The beam after reading byte `a` (0..255, or 257 for EOS).

        Returns:
            The beam after `a`. If no candidate can read `a` (and healing is off
            or fails) that beam is empty, `len(beam) == 0`, as in genlm-bytes;
            using it (`logp_next`, `<<`) raises the `EmptyBeamError` saying why.

        Raises:
            ValueError: if `a` is not a byte.
            EmptyBeamError: if this beam is already empty.
        """
        a = _check_byte(a)
        self._raise_if_empty()
        new: list[LazyTrieState] = []
        status: list[str] = []
        for s in self.states:
            nxt = s << a
            if nxt is not None:
                new.append(nxt)
                status.append("kept")
        calls = 0
        if self._ext is not None:
            exts, dropped = self._ext, self._ext_dropped
        else:
            exts, dropped = self._extension_candidates()
            exts, more = self._could_survive(exts, [s.weight for s in new])
            dropped = dropped + more
            calls = await self._evaluate(exts)
        for e in exts:
            nxt = e << a
            if nxt is not None:
                new.append(nxt)
                status.append("extended")
        if not new and dropped:
            # The thresholds skipped every extension that could read `a`: evaluate
            # them before healing (exact, where healing keeps one candidate).
            calls += await self._evaluate(dropped)
            for e in dropped:
                nxt = e << a
                if nxt is not None:
                    new.append(nxt)
                    status.append("extended")
            dropped = []
        skipped = len(dropped)
        lost = [e.weight for e in dropped]
        heals: list[HealEvent] = []
        if not new:
            reason = await self._why_unreadable(a, heals)
            calls += sum(h.lm_calls for h in heals)
            if isinstance(reason, EmptyBeamError):
                empty = self._derive([], None, self.position, lost)
                empty._empty_reason = reason
                return empty
            healed = reason
            new, status = [healed], ["healed"]
        beam = self._derive(new, None, self.position + 1, lost)
        if beam._ahead is not None and not beam._ahead.expects(self.position, a):
            beam._ahead = None  # another byte than the one announced: stop looking ahead
        beam._record(
            a,
            {id(s): st for s, st in zip(new, status, strict=True)},
            lm_calls=calls,
            skipped=skipped,
            healing=heals,
        )
        beam._check_width()
        if self.params.verbose:
            print(beam.show())
        return beam

    def _raise_if_empty(self) -> None:
        if not self.states:
            raise self._empty_reason or EmptyBeamError(
                EOS, self.position, "the beam has no candidates"
            )

    # -- pruning, modes, prefill ---------------------------------------------------------

    def prune(self) -> ByteBeamState:
        """The K heaviest candidates whose share exceeds `prune_threshold`.

        The heaviest candidate is always kept: when no share exceeds the
        threshold (two candidates of share 0.5 under a threshold of 0.6), an
        empty beam would read nothing more.
        """
        logZ = self.logZ
        cut = self.params.log_prune_threshold
        keep = [i for i, s in enumerate(self.states) if s.weight - logZ > cut][: self.params.K]
        if not keep and self.states:
            keep = [0]  # states are sorted by weight, heaviest first
        if self.params.widens and len(keep) < len(self.states):
            weights = [s.weight for s in self.states]
            most = self.params.K * WIDEN_FACTOR
            keep = keep_for_width(weights, keep, self.log_dropped, self.params.max_width, most)
        if len(keep) == len(self.states):  # nothing to drop: the same beam
            step = self.last_step
            if step is not None and self._hlen == len(self._history):
                step.pruned_logZ = logZ
            return self
        if self._rows is not None:
            kept = set(keep)
            for i, row in enumerate(self._rows):
                if i not in kept:
                    row.status = "pruned"
        kept = set(keep)
        beam = self._derive(
            [self.states[i] for i in keep],
            None if self._rows is None else [self._rows[i] for i in keep],
            self.position,
            [s.weight for i, s in enumerate(self.states) if i not in kept],
        )
        beam._hlen = self._hlen
        beam._history = self._history
        step = self.last_step
        if step is not None:
            step.pruned_logZ = beam.logZ
        beam._check_width()
        return beam

    def with_mode(self, mode: TrieMode) -> ByteBeamState:
        """The same beam, materializing future masses in `mode`."""
        beam = self._derive([s.with_mode(mode) for s in self.states], self._rows, self.position)
        beam._history, beam._hlen = self._history, self._hlen
        return beam

    async def prefill(
        self, bs: bytes, lookahead: int = DEFAULT_DEPTH, progress: bool | None = None
    ) -> ByteBeamState:
        """The beam after reading `bs`, EOS tokens read as ordinary tokens meanwhile.

        Args:
            bs: bytes (or text, UTF-8 encoded) to read.
            lookahead: bytes ahead whose extensions join each batched forward
                (see `expect`; 0 turns it off); the result is the same for
                every value, only the number of forwards changes.
            progress: a bar over the bytes (None: in a notebook, for more
                than a few dozen bytes).

        Raises:
            EmptyBeamError: if a byte of `bs` cannot be read (naming it and why).
        """
        if isinstance(bs, str):
            bs = bs.encode("utf-8")
        if not hasattr(bs, "__iter__"):
            raise ValueError(f"prefill reads bytes, text or byte ints, got {bs!r}")
        data = [_check_byte(b) for b in bs]  # all checked before any LM call
        if EOS in data:
            raise ValueError(
                f"prefill reads bytes 0..255, got EOS ({EOS}) at position {data.index(EOS)}: "
                "EOS tokens are ordinary tokens while prefilling; end with `beam << 257` after"
            )
        beam = self.with_mode(TrieMode.WITHOUT_EOS)
        if lookahead and beam._ahead is None:  # a lookahead given by `expect` is kept
            beam = beam.expect(bytes(data), lookahead)
        with byte_bar(len(data), "prefill", progress) as bar:
            for b in data:
                beam = await (beam.prune() << b)
                bar.update(1)
        beam._raise_if_empty()  # reading text that cannot be read is an error here
        return beam.with_mode(TrieMode.WITH_EOS)

    async def cleanup(self) -> None:
        """Stop the trie's background worker."""
        if self.states:
            await self.states[0].cleanup()
