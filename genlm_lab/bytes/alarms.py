"""Alarms of a byte beam: a beam that degenerates says so, in one plain sentence.

Every `<<` (and `prune`) checks the new beam against `BeamAlarmThresholds`
and raises each kind at most once along a chain of beams, as an `Alarm`
`(position, kind, sentence)` (`genlm_lab.util.alarms`). They are kept in
the step record that raised them (`BeamStep.alarms`, in its `to_dict()`),
and `beam.alarms` lists those of the beam's history. An alarm's position is
that of its step record: after the byte for a byte that was read, before it
for one that could not be ("empty", "heal_failed", kept in the record of
the last beam that could read); the sentence names the byte's own position. `BeamParams(alarms=None)`
turns the checks off.

Kinds (`BEAM_ALARM_KINDS`):

- "empty": no candidate can read a byte; the sentence names the byte, the
  position and the reason the `EmptyBeamError` gives;
- "heal_failed": healing was tried and found no tokenization;
- "healed": no candidate could read a byte and healing repaired the beam
  (it had pruned the tokenization the text needs);
- "low_mass": a byte read had probability under `min_mass` under the beam
  (`exp(logZ after - logZ before)`);
- "wide_interval": the certified interval `logZ_upper - logZ` is wider than
  `max_width` nats: the beam dropped candidates that may hold up to
  `exp(width) - 1` times the mass it keeps. Off unless a width is set (here
  or as `BeamParams.max_width`): a candidate dropped at one byte bounds
  continuations that every later byte makes less likely, so the bound of a
  pruned beam loosens by about a nat per byte read and any fixed width is
  passed on a long enough text (K=5 on a 40-byte sentence: 43 nats on the
  tiny-random model) while logZ itself may be close to exact;
- "runaway": the bytes read end in a run of whitespace or a repeated piece
  (`genlm_lab.util.alarms.text_runaway`);
- "slow_component": profiled beams (`BeamParams(profile=True)`) only: one
  component other than "lm.forward" (and "trie.build", once per model)
  took more than `slow_fraction` of the chain's profiled wall time, once
  that is at least `slow_seconds`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from genlm_lab.util import byte_label
from genlm_lab.util.alarms import Alarm, text_runaway

__all__ = ["BEAM_ALARM_KINDS", "BeamAlarmThresholds"]

BEAM_ALARM_KINDS = (
    "empty",
    "heal_failed",
    "healed",
    "low_mass",
    "wide_interval",
    "runaway",
    "slow_component",
)
"""The kinds of alarm a byte beam raises, in the order of the module docstring."""


#: Components "slow_component" leaves out: the model's forwards (the cost a beam is meant
#: to pay) and the trie's one-off build.
NOT_SLOW = frozenset({"lm.forward", "trie.build"})


@dataclass(frozen=True)
class BeamAlarmThresholds:
    """When a byte beam's alarms go off; pass one as `BeamParams(alarms=...)`.

    Attributes:
        min_mass: "low_mass" when a byte read has probability under this (1e-6).
        max_width: "wide_interval" when `logZ_upper - logZ` exceeds this many nats
            (e.g. 5.0: dropped candidates may hold up to 147 times the mass kept);
            None (default): `BeamParams.max_width`, and no check when that is None.
        whitespace_run: the bytes read run away when they end in this many
            whitespace characters (32) ...
        repeat_period: ... or in a piece of at most this many characters (16) ...
        repeat_chars: ... repeated over at least this many trailing characters (48),
            and at least 4 times.
        slow_fraction: "slow_component" when one component other than "lm.forward"
            takes more than this share of the profiled wall time (0.8) ...
        slow_seconds: ... once the chain's profiled wall time is at least this (0.05 s).
    """

    min_mass: float = 1e-6
    max_width: float | None = None
    whitespace_run: int = 32
    repeat_period: int = 16
    repeat_chars: int = 48
    slow_fraction: float = 0.8
    slow_seconds: float = 0.05

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None and f.name == "max_width":
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"{f.name} must be a number, got {value!r}")
            if f.type == "int" and (not isinstance(value, int) or value < 1):
                raise ValueError(f"{f.name} must be an int >= 1, got {value!r}")
            if not value >= 0:
                raise ValueError(f"{f.name} must be >= 0, got {value!r}")
        if not 0 < self.slow_fraction <= 1 or not 0 <= self.min_mass < 1:
            raise ValueError(
                f"slow_fraction must be in (0, 1] and min_mass in [0, 1), got "
                f"{self.slow_fraction!r} and {self.min_mass!r}"
            )

    @property
    def tail_bytes(self) -> int:
        """Bytes of text the runaway check reads (4 per character, for UTF-8)."""
        return 4 * max(self.whitespace_run, self.repeat_chars, 4 * self.repeat_period)


class AlarmChain:
    """What a chain of beams has raised so far, and its profiled seconds by component.

    Shared by the beams of one chain; a beam that forks the chain (reads from
    a parent that another beam already read from) rebuilds it from its history.
    """

    __slots__ = ("kinds", "seconds")

    def __init__(self, steps: Iterable[Any] = ()) -> None:
        self.kinds: set[str] = set()
        self.seconds: dict[str, float] = {}
        for step in steps:
            self.kinds.update(a[1] for a in step.alarms)
            self.add_seconds(step.profile)

    def add_seconds(self, rows: Iterable[Any]) -> None:
        """Add profile rows `[step, component, calls, seconds]` to the totals."""
        for _, component, _, seconds in rows:
            self.seconds[component] = self.seconds.get(component, 0.0) + float(seconds)


def _label(byte: int) -> str:
    return repr(byte_label(byte))


def empty(position: int, byte: int, reason: str) -> Alarm:
    """The "empty" alarm: `byte` at `position` could not be read, for `reason`."""
    return Alarm(
        position,
        "empty",
        f"no candidate can read byte {byte} ({_label(byte)}) at position {position}: {reason}; "
        "the beam is empty from here (a wider beam, K, or healing may keep a reading).",
    )


def heal_failed(position: int, byte: int, tried: int, lm_calls: int) -> Alarm:
    """The "heal_failed" alarm: healing tried `tried` candidates and found nothing."""
    return Alarm(
        position,
        "heal_failed",
        f"token healing found no tokenization that reads byte {byte} ({_label(byte)}) at "
        f"position {position} ({tried} candidates tried, {lm_calls} LM calls); a wider beam "
        "(K) or a larger heal_max_backoff may.",
    )


def healed(position: int, byte: int, event: Any) -> Alarm:
    """The "healed" alarm of the step at `position`, whose byte healing read (`event`)."""
    partial = bytes(event.partial).decode("utf-8", "backslashreplace")
    return Alarm(
        position,
        "healed",
        f"no candidate could read byte {byte} ({_label(byte)}) at position {position - 1}; token "
        f"healing backed off {event.backoff} byte(s) of candidate {event.candidate}'s token "
        f"{partial!r} and committed {len(event.committed)} token(s) ({event.lm_calls} LM calls): "
        "the beam had pruned the tokenization the text needs; a wider beam (K) keeps it.",
    )


def low_mass(position: int, byte: int, logp: float, limit: float) -> Alarm | None:
    """The "low_mass" alarm of the step at `position` if its byte (read at `position - 1`)
    had log-probability under log(limit)."""
    if limit <= 0 or not logp < math.log(limit):
        return None
    return Alarm(
        position,
        "low_mass",
        f"byte {byte} ({_label(byte)}) at position {position - 1} had probability "
        f"{math.exp(logp):.2g} under the beam (under {limit:g}): the model finds the text "
        "very unlikely here (a typo, another language or format, a prompt that does not "
        "lead to it).",
    )


def wide_interval(position: int, width: float, limit: float | None) -> Alarm | None:
    """The "wide_interval" alarm if the certified interval (`width` nats) exceeds `limit`."""
    if limit is None or not width > limit:
        return None
    ratio = math.expm1(width) if width < 700 else math.inf
    return Alarm(
        position,
        "wide_interval",
        f"the certified interval is {width:.3g} nats wide after {position} bytes (over "
        f"{limit:g}): the beam dropped candidates that may hold up to {ratio:.3g} times the "
        "mass it keeps, so logZ may be that far below the exact log-probability; raise K, "
        "lower prune_threshold / extend_threshold, or use BeamParams(on_wide='widen').",
    )


def runaway(position: int, tail: bytes, limits: BeamAlarmThresholds) -> Alarm | None:
    """The "runaway" alarm if the bytes read (their `tail`) end in a runaway."""
    text = tail.decode("utf-8", "ignore")
    kind = text_runaway(text, limits.whitespace_run, limits.repeat_period, limits.repeat_chars)
    if kind is None:
        return None
    return Alarm(
        position,
        "runaway",
        f"the bytes read end in a {kind} runaway at position {position} "
        f"({text[-24:]!r}); cap whitespace or stop at a repetition.",
    )


def slow_component(
    position: int, seconds: Mapping[str, float], limits: BeamAlarmThresholds
) -> Alarm | None:
    """The "slow_component" alarm if a component besides "lm.forward" took most of the time."""
    total = sum(seconds.values())
    if total < limits.slow_seconds or total <= 0:
        return None
    name, most = max(
        ((c, s) for c, s in seconds.items() if c not in NOT_SLOW),
        key=lambda kv: kv[1],
        default=("", 0.0),
    )
    if not most > limits.slow_fraction * total:
        return None
    return Alarm(
        position,
        "slow_component",
        f"{name} took {most / total:.0%} of the beam's profiled wall time ({most:.3f} s of "
        f"{total:.3f} s, up to position {position}), more than the model's forwards; see "
        "beam.profile.",
    )
