"""One `AsyncTokenByteTrie` per (model, EOS tokens, options), built once and reused."""

from __future__ import annotations

import weakref
from typing import Any

from genlm_lab.bytes.trie import AsyncTokenByteTrie

_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _key(eos_tokens: Any, trie_opts: dict | None) -> tuple:
    items = (
        (bytes(t), getattr(t, "token_id", None)) if isinstance(t, bytes) else int(t)
        for t in eos_tokens or ()
    )
    eos = tuple(sorted(items, key=repr))
    opts = tuple(sorted((k, repr(v)) for k, v in (trie_opts or {}).items()))
    return eos, opts


def trie_for(model: Any, eos_tokens: Any, trie_opts: dict | None = None) -> AsyncTokenByteTrie:
    """The shared byte trie of `model`'s vocabulary with these EOS tokens and options.

    Building the trie walks the whole vocabulary, so beams over the same model
    share it (keyed weakly by the model object).
    """
    if trie_opts and ({"eos_tokens", "eos_byte_strings"} & set(trie_opts)):
        raise ValueError(
            "trie_opts may not set eos_tokens / eos_byte_strings: the beam's EOS tokens come "
            "from BeamParams(eos_byte_strings=...)"
        )
    key = _key(eos_tokens, trie_opts)
    try:
        per_model = _CACHE.setdefault(model, {})
    except TypeError:  # a model that cannot be weakly referenced: no caching
        per_model = {}
    trie = per_model.get(key)
    if trie is None:
        opts = dict(trie_opts or {})
        opts["eos_byte_strings"] = list(eos_tokens or ())
        trie = AsyncTokenByteTrie.from_vocab(model.byte_vocab, **opts)
        per_model[key] = trie
    return trie
