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

Profile (`BeamParams(profile=True)`, `beam.profile`): every `<<`,
`logp_next()` and `prune()` charges its wall time to components, per step
(the `BeamStep` position: `<<` to the step it makes, `prune()` and
`logp_next()` to the step of their beam), so a step's parts add up to its
wall time (`genlm_lab.util.profile.Profiler`). Components:

- "lm.forward": the model's calls and the event loop while the beam awaits
  them (batched forwards run there); "lm.calls" is a counter (seconds 0):
  the LM calls the step made, `lm_calls + lm_calls_next` of its record;
- "trie": node masses from the model's probabilities (the trie pass, one
  per evaluated extension); "trie.build": finding (or, the first time for
  a model, building) the trie, in `initial`;
- "extend": the beam's own bookkeeping (advancing candidates, choosing the
  extensions to evaluate);
- "mixture": the next-byte distribution of `logp_next`;
- "heal": token healing's own code (its model calls are "lm.forward");
- "prune", "record" (the step record), "alarms" (the checks).

A profile measures wall time: beams read concurrently on one event loop
(SMC particles) each see the others' work in their own.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from contextlib import nullcontext
from functools import cached_property
from typing import Any

import numpy as np

from genlm_lab.bytes import alarms as checks
from genlm_lab.bytes._beam_display import BeamDisplay
from genlm_lab.bytes._beam_ext import WIDEN_FACTOR, ExtensionMixin
from genlm_lab.bytes._beam_heal import HealingMixin
from genlm_lab.bytes._beam_profile import awaiting, profiling, timed
from genlm_lab.bytes.alarms import AlarmChain
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
from genlm_lab.util.alarms import Alarm
from genlm_lab.util.profile import Profiler, add_rows, profile_frame

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
    def profile_rows(self) -> list[list[Any]]:
        """`[position, component, calls, seconds]` rows of the steps up to this beam.

        Empty unless `BeamParams(profile=True)`; see the module docstring.
        """
        rows = [list(r) for step in self.history for r in step.profile]
        return rows + [list(r) for r in self._loose_profile or ()]

    @property
    def profile(self) -> Any:
        """Where the time of the steps up to this beam went: a pandas DataFrame.

        Columns step (the `BeamStep` position), component, calls, seconds, as
        `SMCRecord.profile`; empty unless `BeamParams(profile=True)`.
        """
        return profile_frame(self.profile_rows)

    @property
    def alarms(self) -> list[Alarm]:
        """The alarms raised along the chain up to this beam, `(position, kind, sentence)`.

        See `genlm_lab.bytes.alarms`; empty for a healthy beam.
        """
        return [a for step in self.history for a in step.alarms] + list(self._loose_alarms or ())

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
        a = _check_byte(a)
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

    def _emptied(
        self, a: int, reason: EmptyBeamError, heals: list[HealEvent], lost: list[float]
    ) -> ByteBeamState:
        """The empty beam after `a`, which no candidate could read, with its alarms."""
        tip = self._is_tip
        empty = self._derive([], None, self.position, lost)
        empty._empty_reason = reason
        if self.params.alarms is not None:
            with timed("alarms"):
                if heals:
                    calls = sum(h.lm_calls for h in heals)
                    empty._raise(checks.heal_failed(self.position, a, len(heals), calls), tip)
                empty._raise(checks.empty(self.position, a, reason.reason), tip)
        return empty

    # -- alarms and profile ------------------------------------------------------------------

    @property
    def _is_tip(self) -> bool:
        """Whether this beam's step record is the newest of its history (no one read on)."""
        return self._hlen == len(self._history)

    def _alarm_chain(self) -> AlarmChain:
        if self._chain is None:
            self._chain = AlarmChain(self.history)
        return self._chain

    def _raise(self, alarm: Alarm | None, tip: bool | None = None) -> None:
        """Keep `alarm` (in the step record, or on this beam if that record is not its own),
        unless its kind was raised along the chain."""
        if alarm is None:
            return
        chain = self._alarm_chain()
        if alarm.kind in chain.kinds:
            return
        step = self.last_step
        if (self._is_tip if tip is None else tip) and step is not None:
            chain.kinds.add(alarm.kind)
            step.alarms.append(alarm)
        elif all(a.kind != alarm.kind for a in self._loose_alarms or ()):
            self._loose_alarms = [*(self._loose_alarms or ()), alarm]

    def _max_width(self, limits: checks.BeamAlarmThresholds) -> float | None:
        return self.params.max_width if limits.max_width is None else limits.max_width

    def _check_read(self, parent: ByteBeamState, a: int, heals: list[HealEvent]) -> None:
        """The alarms of this beam, which `parent << a` made."""
        limits = self.params.alarms
        kinds = self._alarm_chain().kinds
        if heals and "healed" not in kinds:
            self._raise(checks.healed(self.position, a, heals[-1]))
        if "low_mass" not in kinds:
            logp = self.logZ - parent.logZ
            self._raise(checks.low_mass(self.position, a, logp, limits.min_mass))
        if "wide_interval" not in kinds:
            self._raise(checks.wide_interval(self.position, self.width, self._max_width(limits)))
        if a < 256:
            self._tail = (parent._tail + bytes((a,)))[-limits.tail_bytes :]
            if "runaway" not in kinds:
                self._raise(checks.runaway(self.position, self._tail, limits))

    def _charge(self, rows: list[list[Any]], tip: bool | None = None) -> None:
        """Add profile rows to this beam's step record (or to this beam), and check them."""
        tip = self._is_tip if tip is None else tip
        step = self.last_step
        if not tip or step is None:
            self._loose_profile = add_rows(self._loose_profile or [], rows)
            return
        add_rows(step.profile, rows)
        limits = self.params.alarms
        if limits is not None:
            chain = self._alarm_chain()
            chain.add_seconds(rows)
            if "slow_component" not in chain.kinds:
                self._raise(checks.slow_component(self.position, chain.seconds, limits), tip)

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
        if not self.params.profile:
            return self._prune()
        start = time.perf_counter()
        beam = self._prune()
        beam._charge([[self.position, "prune", 1, time.perf_counter() - start]])
        return beam

    def _prune(self) -> ByteBeamState:
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
        self._share_history(beam)
        step = self.last_step
        if step is not None:
            step.pruned_logZ = beam.logZ
        beam._check_width()
        limits = self.params.alarms
        if limits is not None and "wide_interval" not in beam._alarm_chain().kinds:
            beam._raise(checks.wide_interval(beam.position, beam.width, self._max_width(limits)))
        return beam

    def with_mode(self, mode: TrieMode) -> ByteBeamState:
        """The same beam, materializing future masses in `mode`."""
        beam = self._derive([s.with_mode(mode) for s in self.states], self._rows, self.position)
        return self._share_history(beam)

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
