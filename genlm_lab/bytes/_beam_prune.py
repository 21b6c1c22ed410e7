"""Pruning a byte beam: the K heaviest candidates above a share, widened for a tight interval.

Mixed into `ByteBeamState`. Every candidate pruned adds its weight to the
beam's `log_dropped`, so the certified interval `[logZ, logZ_upper]` stays
exact (see `genlm_lab.bytes.interval`, whose `keep_for_width` keeps more
candidates where `BeamParams.max_width` asks for it).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from genlm_lab.bytes import alarms
from genlm_lab.bytes._beam_ext import WIDEN_FACTOR
from genlm_lab.bytes.interval import keep_for_width

if TYPE_CHECKING:
    from genlm_lab.bytes.beam import ByteBeamState


class PruningMixin:
    """`prune()`: the beam cut to its K heaviest candidates (and the step record told)."""

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
            beam._keep_alarm(
                alarms.wide_interval(beam.position, beam.width, self._max_width(limits))
            )
        return beam
