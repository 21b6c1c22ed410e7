"""Keyword arguments renamed upstream: take the new name, accept the old one with a warning."""

from __future__ import annotations

import warnings
from typing import Any

__all__ = ["renamed_argument"]


def renamed_argument(owner: str, new: str, new_value: Any, old: str, old_value: Any) -> Any:
    """The value of a keyword argument that GenLM renamed from `old` to `new`.

    Args:
        owner: what takes the argument, for messages (e.g. "BeamParams").
        new, new_value: the current name and what was passed under it (None: not given).
        old, old_value: the deprecated name and what was passed under it.

    Returns:
        new_value, or old_value (after a `DeprecationWarning`) when only that was given.

    Raises:
        TypeError: if both names were given (as genlm-bytes 0.2 does).
    """
    if old_value is None:
        return new_value
    if new_value is not None:
        raise TypeError(
            f"Cannot specify both {new} and the deprecated {old} of {owner}: "
            f"{old} is the old name of {new}; give {new} only"
        )
    warnings.warn(
        f"{owner}({old}=...) is deprecated: {old} is now {new}", DeprecationWarning, stacklevel=3
    )
    return old_value
