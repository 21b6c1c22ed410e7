"""What alarms share: the `(step, kind, sentence)` record and the runaway test on text.

An alarm says in one plain sentence that a run or a beam degenerates. SMC
runs raise them per step (`genlm_lab.smc.alarms`), byte beams per byte
(`genlm_lab.bytes.alarms`); both keep each kind at most once.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["Alarm", "text_runaway"]


class Alarm(NamedTuple):
    """One alarm: where it went off, its kind and the sentence that explains it.

    A plain tuple too, so `step, kind, sentence = alarm` works.

    Attributes:
        step: the step (SMC) or byte position (beam) that raised it.
        kind: one of the owner's alarm kinds (e.g. "runaway").
        sentence: what went wrong and what helps.
    """

    step: int
    kind: str
    sentence: str

    def to_list(self) -> list:
        """JSON-ready `[step, kind, sentence]`."""
        return [int(self.step), self.kind, self.sentence]


def text_runaway(
    text: str, whitespace_run: int = 32, repeat_period: int = 16, repeat_chars: int = 48
) -> str | None:
    """ "whitespace" or "repetition" if `text` ends in a runaway, else None.

    Args:
        text: the text so far (only its tail is read).
        whitespace_run: a text ending in this many whitespace characters runs away.
        repeat_period: the longest repeated piece looked for, in characters ...
        repeat_chars: ... repeated over at least this many trailing characters,
            and at least 4 times (pieces of whitespace only are left to
            `whitespace_run`).
    """
    n = whitespace_run
    if len(text) >= n and text[-n:].isspace():
        return "whitespace"
    tail = text[-(repeat_period * max(4, repeat_chars)) :]
    for period in range(1, repeat_period + 1):
        length = max(repeat_chars, 4 * period)
        if len(tail) < length:
            break
        piece = tail[-period:]
        if piece.isspace():
            continue  # whitespace has its own, longer threshold
        if tail[-length:] == (piece * (length // period + 1))[-length:]:
            return "repetition"
    return None
