"""Small helpers genlm-control code imports from `genlm.control.util`.

`LRUCache` (a bounded dict), `escape` and `string_for_serialization` (tokens
as readable text), `load_trie` (a token-character trie over a vocabulary) and
`BatchAbandoned` (what an `AutoBatched` caller gets when its batch is dropped)
and `flatten_units` (a context of multi-token units as one token list).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Iterable, Sequence
from typing import Any

from genlm_lab.control.core.constant import EndOfSequence
from genlm_lab.control.errors import BatchAbandoned
from genlm_lab.util.escape import escape_bytes

__all__ = [
    "BatchAbandoned",
    "LRUCache",
    "escape",
    "flatten_units",
    "load_trie",
    "string_for_serialization",
]


class LRUCache(OrderedDict):
    """A dict of at most `maxsize` entries; setting one more drops the least recently used.

    `get` and assignment count as uses.

    Raises:
        ValueError: if `maxsize` is not a positive int.
    """

    def __init__(self, maxsize: int) -> None:
        if isinstance(maxsize, bool) or not isinstance(maxsize, int) or maxsize < 1:
            raise ValueError(f"maxsize must be a positive int, got {maxsize!r}")
        super().__init__()
        self.maxsize = maxsize

    def get(self, key: Hashable, default: Any = None) -> Any:
        if key not in self:
            return default
        self.move_to_end(key)
        return self[key]

    def __setitem__(self, key: Hashable, value: Any) -> None:
        super().__setitem__(key, value)
        self.move_to_end(key)
        while len(self) > self.maxsize:
            self.popitem(last=False)


def escape(token: Any) -> str:
    """A token as text: a byte (int) or bytes escaped, text as is, an end marker by its name."""
    if isinstance(token, EndOfSequence):
        return token.name
    if isinstance(token, str):
        return token
    if isinstance(token, int) and not isinstance(token, bool):
        return escape_bytes(bytes([token]))
    return escape_bytes(bytes(token))


def string_for_serialization(context: Iterable[Any]) -> str:
    """A context as one string: each token escaped, joined by `|`."""
    return "|".join(escape(t) for t in context)


def flatten_units(context: Iterable[Any]) -> list[Any]:
    """The tokens of a context whose items may be units (lists of tokens, nested), in order.

    `MultiTokenUnitSampler` grows contexts of units; potentials and subunit
    samplers weigh the flat token list. Only lists nest: bytes, `Token`s,
    strings and EOS are items. A new list, so the caller may extend it.
    """
    flat: list[Any] = []
    stack = [iter(context)]
    while stack:
        for item in stack[-1]:
            if isinstance(item, list):
                stack.append(iter(item))
                break
            flat.append(item)
        else:
            stack.pop()
    return flat


def load_trie(vocab: Sequence[Any], backend: str | None = None, **kwargs: Any) -> Any:
    """A token-character trie over `vocab` (text is encoded as UTF-8).

    Args:
        vocab: one token per id: bytes, `Token`s or str.
        backend: "sequential" (`TokenCharacterTrie`, numba on CPU) or
            "parallel" (`ParallelTokenCharacterTrie`, torch); None picks
            "parallel" where CUDA is available.
        **kwargs: for the parallel trie (`device=`).

    Raises:
        ValueError: for another backend.
    """
    from genlm_lab.tokenization import Token
    from genlm_lab.trie import ParallelTokenCharacterTrie, TokenCharacterTrie

    decode = [
        t if isinstance(t, Token) else Token(i, t.encode("utf-8") if isinstance(t, str) else t)
        for i, t in enumerate(vocab)
    ]
    if backend is None:
        import torch

        backend = "parallel" if torch.cuda.is_available() else "sequential"
    if backend == "sequential":
        return TokenCharacterTrie(decode)
    if backend == "parallel":
        return ParallelTokenCharacterTrie(decode, **kwargs)
    raise ValueError(f"backend must be 'sequential' or 'parallel', got {backend!r}")
