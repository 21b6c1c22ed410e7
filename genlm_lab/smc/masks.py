"""Sets of token ids ("masks") for `LMContext.mask_dist`, as boolean arrays.

A mask is a numpy bool array with one entry per token id (True = in the set).
Arrays make `mask_dist` cost microseconds over a 49k-token vocabulary, where
Python sets would cost milliseconds per particle per step. `as_mask` accepts
sets and lists of ids too.
"""

from __future__ import annotations

import string
import weakref
from collections.abc import Iterable
from typing import Any

import numpy as np

__all__ = ["TokenMasks", "as_mask", "token_masks"]

_WHITESPACE = frozenset(string.whitespace.encode())
_MID_PUNCTUATION = {b",", b":", b";", b"-", b'"'}
_END_PUNCTUATION = {b".", b"!", b"?"}
_PUNCTUATION_BYTES = frozenset(string.punctuation.encode())


def _is_bool(x: Any) -> bool:
    return isinstance(x, (bool, np.bool_))


def _token_id_of(x: Any, vocab_size: int) -> int:
    token_id = getattr(x, "token_id", x)
    if _is_bool(token_id) or not hasattr(token_id, "__index__"):
        raise ValueError(
            f"mask holds {x!r}, which is not a token id: a mask is a bool array with one "
            f"entry per token id ({vocab_size}) or an iterable of int token ids"
        )
    return int(token_id)


def as_mask(mask: Any, vocab_size: int) -> np.ndarray:
    """A boolean array of length `vocab_size` from bools (one per token id) or token ids.

    Accepts a numpy / torch bool array, a list of bools of length `vocab_size`,
    or an iterable of int token ids (or `Token`s).

    Raises:
        ValueError: for bools of the wrong length, ids outside the vocabulary,
            or anything else (floats, text): a float array of 0s and 1s would
            otherwise read as the token ids 0 and 1.
    """
    if isinstance(mask, np.ndarray) and mask.dtype == np.bool_:
        if mask.shape != (vocab_size,):
            raise ValueError(
                f"mask has shape {mask.shape}, expected ({vocab_size},) (one entry per token id)"
            )
        return mask
    if hasattr(mask, "detach"):  # a torch tensor
        return as_mask(mask.detach().cpu().numpy(), vocab_size)
    if isinstance(mask, np.ndarray):
        if mask.dtype.kind not in "iu":
            raise ValueError(
                f"mask array has dtype {mask.dtype}: pass a bool array (one entry per token id) "
                "or integer token ids"
            )
        ids = mask.astype(np.int64).ravel()
    elif isinstance(mask, (str, bytes, bytearray)) or not hasattr(mask, "__iter__"):
        raise ValueError(
            f"a mask is a bool array (one entry per token id) or an iterable of token ids, "
            f"got {mask!r}; for tokens by their bytes use `token_masks(lm)`"
        )
    else:
        items = list(mask)
        if items and all(_is_bool(x) for x in items):
            return as_mask(np.array(items, dtype=bool), vocab_size)
        ids = np.fromiter((_token_id_of(x, vocab_size) for x in items), dtype=np.int64)
    if ids.size and (ids.min() < 0 or ids.max() >= vocab_size):
        bad = int(ids.min()) if ids.min() < 0 else int(ids.max())
        raise ValueError(f"mask holds token id {bad}, outside the vocabulary ({vocab_size} tokens)")
    out = np.zeros(vocab_size, dtype=bool)
    out[ids] = True
    return out


class TokenMasks:
    """Common masks of one LM's vocabulary, computed once (read-only arrays).

    Combine them into new arrays (`masks.ALL_TOKENS & ~masks.EOS`); writing
    into one raises, as it would change the mask for every user of this LM.

    Attributes:
        ALL_TOKENS: every token id.
        EOS: the end-of-sequence ids.
        SPECIAL: BOS and EOS ids (their byte length counts as 0).
        CONTAINS_WHITESPACE: tokens holding a space, tab or newline byte.
        STARTS_NEW_WORD: tokens of the form " word" (space then a letter or digit).
        CONTINUES_CURRENT_WORD: tokens made only of letters and apostrophes.
        MID_PUNCTUATION: the tokens `,` `:` `;` `-` `"`.
        END_PUNCTUATION: the tokens `.` `!` `?`.
        PUNCTUATION: MID_PUNCTUATION | END_PUNCTUATION.
        CONTAINS_PUNCTUATION: tokens holding any ASCII punctuation byte.
    """

    def __init__(self, lm: Any) -> None:
        vocab = [bytes(t) for t in lm.byte_vocab]
        n = len(vocab)
        self.vocab_size = n
        special = {i for i in [lm.bos_token_id, *lm.eos_token_ids] if i is not None}
        self.ALL_TOKENS = np.ones(n, dtype=bool)
        self.EOS = as_mask(list(lm.eos_token_ids), n)
        self.SPECIAL = as_mask(sorted(special), n)
        normal = ~self.SPECIAL
        self.CONTAINS_WHITESPACE = self._where(vocab, lambda v: any(b in _WHITESPACE for b in v))
        self.CONTAINS_WHITESPACE &= normal
        self.STARTS_NEW_WORD = self._where(
            vocab, lambda v: len(v) > 1 and v[:1] == b" " and _text(v[1:])[:1].isalnum()
        )
        self.CONTINUES_CURRENT_WORD = normal & self._where(
            vocab, lambda v: len(v) > 0 and all(c == "'" or c.isalpha() for c in _text(v))
        )
        self.MID_PUNCTUATION = normal & self._where(vocab, lambda v: v in _MID_PUNCTUATION)
        self.END_PUNCTUATION = normal & self._where(vocab, lambda v: v in _END_PUNCTUATION)
        self.PUNCTUATION = self.MID_PUNCTUATION | self.END_PUNCTUATION
        self.CONTAINS_PUNCTUATION = normal & self._where(
            vocab, lambda v: any(b in _PUNCTUATION_BYTES for b in v)
        )
        self.token_lengths = np.array([len(v) for v in vocab], dtype=np.int64)
        self.token_lengths[self.SPECIAL] = 0
        self._vocab = vocab
        self._normal = normal
        for value in vars(self).values():  # cached per LM and shared: never edited in place
            if isinstance(value, np.ndarray):
                value.flags.writeable = False

    @staticmethod
    def _where(vocab: list[bytes], keep: Any) -> np.ndarray:
        return np.fromiter((bool(keep(v)) for v in vocab), dtype=bool, count=len(vocab))

    def token_length_mask(self, min: int | None = None, max: int | None = None) -> np.ndarray:
        """Tokens whose length in bytes lies in [min, max] (special tokens have length 0)."""
        lo = 0 if min is None else min
        hi = np.iinfo(np.int64).max if max is None else max
        return (self.token_lengths >= lo) & (self.token_lengths <= hi)

    def without_bytes(
        self, chars: str | bytes | Iterable[int], keep_special: bool = True
    ) -> np.ndarray:
        """Tokens containing none of the given bytes (e.g. `without_bytes("eE")` for a lipogram).

        Args:
            chars: the forbidden characters (ASCII text) or byte values.
            keep_special: count BOS/EOS as allowed whatever their surface text.
        """
        forbidden = chars.encode() if isinstance(chars, str) else bytes(chars)
        # translate(None, forbidden) deletes those bytes in C: unchanged length = none present
        out = self._where(self._vocab, lambda v: len(v.translate(None, forbidden)) == len(v))
        if keep_special:
            out |= self.SPECIAL
        else:
            out &= self._normal
        return out

    def containing(self, chars: str | bytes | Iterable[int]) -> np.ndarray:
        """Non-special tokens containing at least one of the given bytes."""
        return self._normal & ~self.without_bytes(chars, keep_special=False)

    def from_ids(self, ids: Iterable[int]) -> np.ndarray:
        """A mask from token ids."""
        return as_mask(ids, self.vocab_size)


def _text(v: bytes) -> str:
    return v.decode("utf-8", errors="replace")


_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def token_masks(lm: Any) -> TokenMasks:
    """The `TokenMasks` of `lm`, built on first use and cached per LM object."""
    try:
        return _CACHE[lm]
    except (KeyError, TypeError):
        pass
    masks = TokenMasks(lm)
    try:
        _CACHE[lm] = masks
    except TypeError:
        pass
    return masks
