"""What byte beams raise and warn.

`ByteBeamState` raises `EmptyBeamError` when no candidate can read the next
byte; `LazyByteProbs` raises `ByteProbsLengthError` when it gets other than 258
values; a beam warns `IntervalWarning` when its certified interval grows past
`BeamParams.max_width`.
"""

from __future__ import annotations

from genlm_lab.util.errors import GenlmLabError, GenlmLabWarning

__all__ = ["ByteProbsLengthError", "EmptyBeamError", "IntervalWarning"]


class EmptyBeamError(GenlmLabError, ValueError):
    """No candidate of the beam can read the next byte (and healing did not help).

    Attributes:
        byte: the byte that could not be read.
        position: how many bytes were consumed before it.
    """

    def __init__(self, byte: int, position: int, reason: str) -> None:
        from genlm_lab.util import byte_label

        self.byte = byte
        self.position = position
        self.reason = reason
        super().__init__(
            f"the beam is empty: no candidate can read byte {byte} ({byte_label(byte)!r}) "
            f"at position {position}; {reason}"
        )

    def __reduce__(self) -> tuple:
        # rebuilt from its three fields, so it crosses process pools and pickles
        return type(self), (self.byte, self.position, self.reason)


class ByteProbsLengthError(GenlmLabError, ValueError, AssertionError):
    """`LazyByteProbs` got other than 258 values.

    A ValueError; also an AssertionError, which is what genlm-bytes raises there.
    """


class IntervalWarning(GenlmLabWarning, RuntimeWarning):
    """The beam's certified interval grew past `BeamParams.max_width`."""
