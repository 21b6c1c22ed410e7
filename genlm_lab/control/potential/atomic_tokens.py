"""`split_with_atomic_tokens`: bytes cut into single bytes, except for tokens kept whole.

A byte-level context can hold multi-byte tokens that must stay one piece,
such as the EOS strings of the two models in a byte ensemble. Reading the
bytes left to right, each position starts the shortest atomic token found
there, or else is one byte. genlm-control main names this helper in its
ensemble module, and `genlm_lab.control.potential.ensemble` serves it there.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable

__all__ = ["split_with_atomic_tokens"]


def _atomic_set(atomic_tokens: Iterable[bytes]) -> list[bytes]:
    """The distinct atomic tokens, shortest first; ValueError / TypeError naming a bad one."""
    if isinstance(atomic_tokens, (bytes, bytearray, str)):
        raise TypeError(
            f"atomic_tokens must be a list of bytes tokens, got one {type(atomic_tokens).__name__}"
        )
    tokens: set[bytes] = set()
    for t in atomic_tokens:
        if not isinstance(t, (bytes, bytearray)):
            raise TypeError(f"atomic token {t!r} is {type(t).__name__}, not bytes")
        if not t:
            raise ValueError("an atomic token must hold at least one byte, got b''")
        tokens.add(bytes(t))
    return sorted(tokens, key=lambda t: (len(t), t))


def split_with_atomic_tokens(data: bytes, atomic_tokens: list[bytes]) -> list[int | bytes]:
    """Split `data` into atomic tokens (as bytes) and single bytes (as ints), left to right.

    At each position the shortest atomic token that starts there is taken
    whole; where none starts, the byte there is taken alone. Joining the
    pieces gives `data` back.

    Args:
        data: the bytes to split.
        atomic_tokens: tokens never cut apart (repeats count once).

    Returns:
        The pieces in order: `bytes` for an atomic token, `int` for a byte.

    Raises:
        TypeError: if `data` or a token is not bytes.
        ValueError: if a token is empty.

    Warns:
        UserWarning: once, if one token is a prefix of another (the longer one
            can never be taken where the shorter one matches).
    """
    if not isinstance(data, (bytes, bytearray)):
        raise TypeError(f"data must be bytes, got {type(data).__name__}")
    tokens = _atomic_set(atomic_tokens)
    overlap = next(
        ((s, t) for i, s in enumerate(tokens) for t in tokens[i + 1 :] if t.startswith(s)), None
    )
    if overlap is not None:
        warnings.warn(
            f"Overlapping atomic tokens detected: {overlap[0]!r} is a prefix of {overlap[1]!r}; "
            "the shorter one is taken wherever both match",
            UserWarning,
            stacklevel=2,
        )
    data = bytes(data)
    pieces: list[int | bytes] = []
    i = 0
    while i < len(data):
        token = next((t for t in tokens if data.startswith(t, i)), None)
        if token is None:
            pieces.append(data[i])
            i += 1
        else:
            pieces.append(token)
            i += len(token)
    return pieces
