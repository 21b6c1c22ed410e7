"""What `LMContext` and `ByteLMContext` share: a sequence grown one unit at a time.

Both contexts keep the units (tokens or bytes) generated so far, end at EOS,
and hand out a distribution of the next unit whose draws extend them. Copies
(one per particle) share everything but the growing sequence: the cached
next-unit arrays are replaced, never written, so they are shared read-only.
"""

from __future__ import annotations

import copy
from typing import Any, ClassVar

import numpy as np

from genlm_lab.smc.distributions import Distribution

__all__ = ["GrowingContext", "NextUnit", "read_only"]


def read_only(a: np.ndarray) -> np.ndarray:
    """A view of `a` that cannot be written (`a` itself is left as it is)."""
    view = a.view()
    view.flags.writeable = False
    return view


class GrowingContext:
    """Base of the LM and byte contexts: the end at EOS, copies per particle, the text.

    Subclasses name their unit (`UNIT`: "token", "byte") and the attribute
    that grows (`GROWING`: a list or bytearray, copied per clone), say how
    the sequence ended (`_ending`) and give their text (`text_bytes`, shown
    by `str` as UTF-8, a malformed byte as U+FFFD).
    """

    UNIT: ClassVar[str]
    GROWING: ClassVar[str]
    #: Whether EOS was drawn or observed (an attribute or a property of the subclass).
    ended: bool

    def _ending(self) -> str:
        """How many units came before EOS, in words, for the error after it."""
        raise NotImplementedError

    def text_bytes(self) -> bytes:
        """The text of the context as bytes."""
        raise NotImplementedError

    def __str__(self) -> str:
        return self.text_bytes().decode("utf-8", errors="replace")

    def _check_open(self) -> None:
        """Raise if the context ended with EOS: no unit can follow it."""
        if self.ended:
            raise RuntimeError(
                f"the context already ended with EOS ({self._ending()}): no {self.UNIT} can "
                f"follow it. Check `ctx.ended` after drawing a {self.UNIT} and call "
                "`self.finish()`."
            )

    def __deepcopy__(self, memo: dict) -> Any:
        clone = copy.copy(self)
        grown = getattr(self, self.GROWING)
        setattr(clone, self.GROWING, type(grown)(grown))
        memo[id(self)] = clone
        return clone


class NextUnit(Distribution):
    """The next unit of a `GrowingContext`; drawing or observing it extends the context."""

    def __init__(self, ctx: Any) -> None:
        self.ctx = ctx
