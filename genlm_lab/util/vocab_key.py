"""A digest of a vocabulary's byte strings, the key of caches of what is built from one."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence

import numpy as np

__all__ = ["vocabulary_key"]


def vocabulary_key(tokens: Sequence[bytes | Iterable[int]], *extra: object) -> str:
    """A digest of each token's bytes, where each token ends, and `extra` (its repr).

    Where tokens end goes in with their bytes: two vocabularies whose bytes run together
    alike but are cut in other places (`[b"a\\0", b"b"]` and `[b"a", b"\\0b"]`) get two
    keys. A token may be bytes or a list of byte values: equal bytes give equal keys.
    """
    raw = [t if isinstance(t, bytes) else bytes(t) for t in tokens]
    digest = hashlib.blake2b(digest_size=16)
    digest.update(np.fromiter(map(len, raw), dtype=np.int64, count=len(raw)).tobytes())
    digest.update(b"".join(raw))
    digest.update(repr(extra).encode())
    return digest.hexdigest()
