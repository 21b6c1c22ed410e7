"""`outside_stacklevel`: point a warning at the user's line, not at the library's insides."""

from __future__ import annotations

import sys
import sysconfig
from pathlib import Path

__all__ = ["outside_stacklevel"]

_PACKAGE = str(Path(__file__).resolve().parent.parent)
_STDLIB = str(Path(sysconfig.get_paths()["stdlib"]).resolve())


def _inside(filename: str) -> bool:
    """Whether a frame's file is genlm_lab's or the standard library's (asyncio's loop)."""
    return filename.startswith((_PACKAGE, _STDLIB)) or filename.startswith("<frozen ")


def outside_stacklevel() -> int:
    """The `stacklevel` for `warnings.warn`, called right here, that names the first frame
    outside genlm_lab and the standard library: the user's call, also when it reached us
    through `asyncio.run` (whose frames sit between the user's line and the coroutine).

    Python 3.12's `skip_file_prefixes` does this; the package supports 3.11.
    """
    frame = sys._getframe(1)  # the caller of this function: stacklevel 1 of its warn
    level = 1
    while frame.f_back is not None and _inside(frame.f_code.co_filename):
        frame, level = frame.f_back, level + 1
    return level
