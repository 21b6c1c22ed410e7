"""How evaluation numbers read in tables and sentences: counts with their nouns, rounded values.

The data (`summarize`, `compare`, the store) keeps full precision; only what
is printed for a reader goes through here, so the CLI, the report and the
live view say the same thing the same way ("1 pair", "unsizeable", 0.03).
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["mde_text", "plural", "readable"]


def plural(n: int, noun: str, nouns: str | None = None) -> str:
    """ "1 pair", "3 pairs", "0 pairs"; `nouns` for an irregular plural ("1 child", "2 children")."""
    return f"{n} {noun if n == 1 else (nouns or noun + 's')}"


def readable(value: Any, digits: int = 3) -> Any:
    """A float rounded for reading to `digits` significant digits (at most 12 decimals);
    anything else as it is. 0.030000000000000006 -> 0.03, 8.30734834294999 -> 8.31,
    1234.5678 -> 1235.0; NaN and infinities stay as they are.
    """
    if isinstance(value, bool) or not isinstance(value, float):
        return value
    if not math.isfinite(value) or value == 0:
        return value
    magnitude = math.floor(math.log10(abs(value)))
    decimals = max(digits - 1 - magnitude, 0)
    return round(value, min(decimals, 12))


def mde_text(mde: float, n: int) -> str:
    """The minimum detectable effect as every view prints it: "0.123", or "unsizeable (...)".

    NaN is unsizeable: no difference of accuracies, whose largest is 1, is detectable
    from n pairs (`genlm_lab.eval.stats.detectable_difference`).
    """
    if mde is not None and math.isfinite(mde):
        return f"{mde:.3f}"
    if n < 1:
        return "unsizeable (no pairs)"
    return f"unsizeable ({plural(n, 'pair')} cannot detect even a difference of 1)"
