"""`gc_paused`: no cyclic garbage collection while a big acyclic structure is built.

Building a trie or a byte trie over a 100k+ token vocabulary allocates
millions of dicts, lists and bytes that all stay alive. CPython's collector
runs every 700 allocations and, as they pile up, walks them (and everything
else alive: torch, transformers) again and again, which takes a large share
of the build time. Nothing built there is garbage, so nothing is lost by
pausing it.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["gc_paused"]


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Disable the cyclic garbage collector inside the block (as it was, after)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
