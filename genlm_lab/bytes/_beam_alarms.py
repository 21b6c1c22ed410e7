"""Alarms and profile rows of a byte beam: where each goes, and the checks after each read.

Mixed into `ByteBeamState`. An alarm or a profile row belongs to the step
record of the beam that made it, when that record is the newest of the
chain's history (the beam is its tip); otherwise it is kept on the beam
itself (`_loose_alarms`, `_loose_profile`). An alarm kind is kept once per
chain (`genlm_lab.bytes.alarms.AlarmChain`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from genlm_lab.bytes import alarms
from genlm_lab.bytes._beam_profile import timed
from genlm_lab.bytes.params import EmptyBeamError
from genlm_lab.bytes.record import HealEvent
from genlm_lab.util.alarms import Alarm
from genlm_lab.util.profile import add_rows, profile_frame

if TYPE_CHECKING:
    from genlm_lab.bytes.beam import ByteBeamState


class AlarmsMixin:
    """Keeps a beam's alarms and profile rows in the right record, and checks each read."""

    @property
    def profile_rows(self) -> list[list[Any]]:
        """`[position, component, calls, seconds]` rows of the steps up to this beam.

        Empty unless `BeamParams(profile=True)`; components: `genlm_lab.bytes._beam_profile`.
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
    def _is_tip(self) -> bool:
        """Whether this beam's step record is the newest of its history (no one read on)."""
        return self._hlen == len(self._history)

    def _alarm_chain(self) -> alarms.AlarmChain:
        if self._chain is None:
            self._chain = alarms.AlarmChain(self.history)
        return self._chain

    def _keep_alarm(self, alarm: Alarm | None, tip: bool | None = None) -> None:
        """Store `alarm` (it is data: nothing is raised) (in the step record, or on this beam if that record is not its own),
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

    def _max_width(self, limits: alarms.BeamAlarmThresholds) -> float | None:
        return self.params.max_width if limits.max_width is None else limits.max_width

    def _check_read(self, parent: ByteBeamState, a: int, heals: list[HealEvent]) -> None:
        """The alarms of this beam, which `parent << a` made."""
        limits = self.params.alarms
        kinds = self._alarm_chain().kinds
        if heals and "healed" not in kinds:
            self._keep_alarm(alarms.healed(self.position, a, heals[-1]))
        if "low_mass" not in kinds:
            logp = self.logZ - parent.logZ
            self._keep_alarm(alarms.low_mass(self.position, a, logp, limits.min_mass))
        if "wide_interval" not in kinds:
            self._keep_alarm(
                alarms.wide_interval(self.position, self.width, self._max_width(limits))
            )
        if a < 256:
            self._tail = (parent._tail + bytes((a,)))[-limits.tail_bytes :]
            if "runaway" not in kinds:
                self._keep_alarm(alarms.runaway(self.position, self._tail, limits))

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
                self._keep_alarm(alarms.slow_component(self.position, chain.seconds, limits), tip)

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
                    empty._keep_alarm(alarms.heal_failed(self.position, a, len(heals), calls), tip)
                empty._keep_alarm(alarms.empty(self.position, a, reason.reason), tip)
        return empty
