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

Alarms (`beam.alarms`): each `<<` checks the new beam (an empty beam, a
healed one, a byte of very low probability, a wide certified interval, a
runaway text; see `genlm_lab.bytes.alarms`) and keeps what it raised in its
step record.

Profile (`BeamParams(profile=True)`, `beam.profile`): where each step's wall
time goes, by component; see `genlm_lab.bytes._beam_profile`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from contextlib import nullcontext
from functools import cached_property
from typing import Any

import numpy as np

from genlm_lab.bytes._beam_alarms import AlarmsMixin
from genlm_lab.bytes._beam_display import BeamDisplay
from genlm_lab.bytes._beam_ext import ExtensionMixin
from genlm_lab.bytes._beam_heal import HealingMixin
from genlm_lab.bytes._beam_prefill import PrefillMixin, check_byte
from genlm_lab.bytes._beam_profile import awaiting, profiling, timed
from genlm_lab.bytes._beam_prune import PruningMixin
from genlm_lab.bytes.alarms import AlarmChain
from genlm_lab.bytes.base import StatefulByteLM
from genlm_lab.bytes.interval import add_log, warn_width
from genlm_lab.bytes.lm_state import StatefulTokenizedLM
from genlm_lab.bytes.lookahead import Lookahead
from genlm_lab.bytes.params import BeamParams, EmptyBeamError
from genlm_lab.bytes.probs import EOS, LazyByteProbs
from genlm_lab.bytes.record import BeamStep, CandidateRow, HealEvent
from genlm_lab.bytes.trie import TrieMode
from genlm_lab.bytes.trie_state import LazyTrieState
from genlm_lab.bytes.tries import trie_for
from genlm_lab.util import logsumexp
from genlm_lab.util.alarms import Alarm
from genlm_lab.util.profile import Profiler

__all__ = ["BeamParams", "ByteBeamState", "EmptyBeamError"]


class ByteBeamState(
    ExtensionMixin,
    HealingMixin,
    AlarmsMixin,
    PruningMixin,
    PrefillMixin,
    BeamDisplay,
    StatefulByteLM,
):
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
        self._chain: AlarmChain | None = None  # alarms raised along the chain (shared)
        self._tail = b""  # the last bytes read, for the runaway check
        # profile rows and alarms that have no step record of their own to go to (an
        # empty beam read from a parent that another beam had already read from)
        self._loose_profile: list[list[Any]] | None = None
        self._loose_alarms: list[Alarm] | None = None

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
        profiler = Profiler(label="extend", step=0) if params.profile else None
        with nullcontext() if profiler is None else profiling(profiler):
            lm_state = (
                llm if isinstance(llm, StatefulTokenizedLM) else StatefulTokenizedLM.initial(llm)
            )
            with timed("trie.build"):
                trie = trie_for(lm_state.model, params.eos_byte_strings, trie_opts)
            state = LazyTrieState.initial(lm_state, trie, mode=TrieMode.WITH_EOS)
            await awaiting(state.materialize())
            beam = cls([state], params, base_len=len(lm_state.context))
            beam._chain = AlarmChain()
            with timed("record"):
                beam._record(None, {id(state): "new"}, lm_calls=1)
        if profiler is not None:
            profiler.count("lm.calls")
            beam._charge(profiler.rows())
        return beam

    def _derive(
        self,
        states: list[LazyTrieState],
        rows: list[CandidateRow] | None,
        position: int,
        dropped: Sequence[float] = (),
    ) -> ByteBeamState:
        history, chain = self._history, self._chain
        if len(history) != self._hlen:  # another branch grew the shared list: fork it
            history, chain = history[: self._hlen], None  # its alarms: rebuilt when needed
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
        beam._chain, beam._tail = chain, self._tail
        return beam

    def _share_history(self, beam: ByteBeamState) -> ByteBeamState:
        """`beam`, made to share this beam's history (the same step, another form of it)."""
        beam._history, beam._hlen, beam._chain = self._history, self._hlen, self._chain
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
        if not self.params.profile:
            return (await self._next_probs())[0]
        profiler = Profiler(label="extend", step=self.position)
        with profiling(profiler):
            probs, calls = await self._next_probs()
        if calls:
            profiler.count("lm.calls", calls)
        self._charge(profiler.rows())
        return probs

    async def _next_probs(self) -> tuple[LazyByteProbs, int]:
        """`logp_next` after its checks: the distribution and the LM calls it made."""
        calls = 0
        if self._ext is None:
            keep, dropped = self._extension_candidates()
            calls = await self._evaluate(keep)
            self._set_ext(keep, dropped)
        with timed("mixture"):
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
        with timed("mixture"):
            logps -= logsumexp(logps[finite])
            probs = LazyByteProbs(logps)
        step = self.last_step
        if step is not None and self._is_tip:
            with timed("record"):
                step.next_logprobs = [float(x) for x in logps]
                step.lm_calls_next += calls
        return probs, calls

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
        a = check_byte(a)
        self._raise_if_empty()
        if not self.params.profile:
            return (await self._read(a))[0]
        tip = self._is_tip
        profiler = Profiler(label="extend", step=self.position + 1)
        with profiling(profiler):
            beam, calls = await self._read(a)
        if calls:
            profiler.count("lm.calls", calls)
        rows = profiler.rows()
        if beam.states:
            beam._charge(rows)
        else:  # no step record of its own: the time goes to the step whose byte it failed
            beam._charge([[self.position, *r[1:]] for r in rows], tip)
        return beam

    async def _read(self, a: int) -> tuple[ByteBeamState, int]:
        """`<<` after its checks: the new beam and the LM calls it made."""
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
            reason = await awaiting(self._why_unreadable(a, heals), "heal")
            calls += sum(h.lm_calls for h in heals)
            if isinstance(reason, EmptyBeamError):
                return self._emptied(a, reason, heals, lost), calls
            healed = reason
            new, status = [healed], ["healed"]
        beam = self._derive(new, None, self.position + 1, lost)
        if beam._ahead is not None and not beam._ahead.expects(self.position, a):
            beam._ahead = None  # another byte than the one announced: stop looking ahead
        with timed("record"):
            beam._record(
                a,
                {id(s): st for s, st in zip(new, status, strict=True)},
                lm_calls=calls,
                skipped=skipped,
                healing=heals,
            )
        if self.params.alarms is not None:
            with timed("alarms"):
                beam._check_read(self, a, heals)
        beam._check_width()
        if self.params.verbose:
            print(beam.show())
        return beam, calls

    def _raise_if_empty(self) -> None:
        if not self.states:
            raise self._empty_reason or EmptyBeamError(
                EOS, self.position, "the beam has no candidates"
            )

    # -- clean-up ---------------------------------------------------------------------

    async def cleanup(self) -> None:
        """Stop the trie's background worker."""
        if self.states:
            await self.states[0].cleanup()
