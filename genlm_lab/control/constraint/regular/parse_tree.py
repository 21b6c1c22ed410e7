"""Reading a regex with Python's own parser (`re._parser`): one walk over its parse tree.

Whoever asks what a pattern is made of (whether it is plain, whether it can
only match ASCII, which characters it spells) parses it here and visits its
nodes with `nodes`, instead of walking `re`'s tree by hand.
"""

from __future__ import annotations

import re._parser as sre
import warnings
from collections.abc import Iterator
from typing import Any

__all__ = ["nodes", "parse"]


def parse(pattern: str, strict: bool = True) -> Any | None:
    """`pattern` as `re`'s parse tree, or None where `re` cannot read it (the `regex`
    module's own syntax, say). `strict`: a warning (a nested set) counts as unreadable."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error" if strict else "ignore")
            return sre.parse(pattern)
    except Exception:  # noqa: BLE001 - whatever `re` cannot read, the callers cannot either
        return None


def nodes(tree: Any) -> Iterator[tuple[str, Any]]:
    """Every `(name, argument)` node of a parse tree, in the pattern's order (depth first):
    the items of sets, branches, groups, repeats, look-arounds and conditionals included."""
    stack: list[Any] = [tree]
    while stack:
        item = stack.pop()
        if isinstance(item, sre.SubPattern):
            stack.extend(reversed(item.data))
        elif isinstance(item, tuple) and item and hasattr(item[0], "name"):
            yield item[0].name, (item[1] if len(item) > 1 else None)
            stack.extend(reversed(item[1:]))
        elif isinstance(item, (list, tuple)):
            stack.extend(reversed(item))
