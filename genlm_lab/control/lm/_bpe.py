"""A tokenizer's byte-pair-encoding merges, and how BPE builds each token from them.

`CanonicalTokenization` decides whether two adjacent tokens are what the
tokenizer's BPE would produce from their joined text. That needs the ordered
merge list (read here from a fast tokenizer's JSON, or a slow tokenizer's
`bpe_ranks`) and, for every token, the merge BPE applies last when it encodes
the token's own text: its derivation. Derivations come from running BPE on
each token's piece, so a token that several merges could make, or that BPE
never makes (an unreachable vocabulary entry), is handled as BPE handles it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["BPEMerges", "Derivations", "extract_bpe_merges", "read_bpe_merges"]


@dataclass(frozen=True)
class BPEMerges:
    """A tokenizer's merges as token ids, in the order BPE tries them.

    Attributes:
        vocab: token piece (the tokenizer's own spelling, e.g. `"Ġthe"`) -> id.
        merges: `(left_id, right_id, merged_id)`, highest priority first.
    """

    vocab: dict[str, int]
    merges: list[tuple[int, int, int]]


def _pairs(raw: Sequence[Any]) -> list[tuple[str, str]]:
    """Merge pairs from a tokenizer JSON: `["a", "b"]` lists or older `"a b"` strings."""
    out = []
    for item in raw:
        if isinstance(item, str):
            left, _, right = item.partition(" ")
            out.append((left, right))
        else:
            left, right = item
            out.append((str(left), str(right)))
    return out


def _from_json(tokenizer: Any) -> tuple[dict[str, int], list[tuple[str, str]], str] | None:
    """Pieces, merge pairs and subword prefix from a fast tokenizer's serialised model."""
    for name in ("backend_tokenizer", "_tokenizer", "to_str"):
        backend = tokenizer if name == "to_str" else getattr(tokenizer, name, None)
        try:
            model = json.loads(backend.to_str())["model"]
        except Exception:  # tokenizer internals differ; try the next source
            continue
        if not isinstance(model, dict) or "merges" not in model:
            continue
        vocab = _vocab_of(tokenizer) or dict(model.get("vocab") or {})
        return vocab, _pairs(model["merges"]), str(model.get("continuing_subword_prefix") or "")
    return None


def _vocab_of(tokenizer: Any) -> dict[str, int]:
    try:
        vocab = tokenizer.get_vocab()
    except Exception:  # a raw `tokenizers.Tokenizer` needs an argument
        try:
            vocab = tokenizer.get_vocab(with_added_tokens=True)
        except Exception:
            return {}
    return dict(vocab) if isinstance(vocab, Mapping) else {}


def _from_bpe_ranks(tokenizer: Any) -> tuple[dict[str, int], list[tuple[str, str]], str] | None:
    """Pieces and merge pairs of a slow (Python) tokenizer: its `bpe_ranks`, sorted by rank."""
    ranks = getattr(tokenizer, "bpe_ranks", None)
    if not isinstance(ranks, Mapping):
        return None
    pairs = sorted(ranks, key=ranks.__getitem__)
    return _vocab_of(tokenizer), [(str(u), str(v)) for u, v in pairs], ""


def read_bpe_merges(tokenizer: Any) -> BPEMerges:
    """The merges of `tokenizer`, as ids: from a fast tokenizer's JSON, else `bpe_ranks`.

    A pair whose pieces (or merged piece) are not in the vocabulary is
    dropped. A source whose pairs all drop is skipped for the next one.

    Raises:
        ValueError: if no source gives merges (not a BPE tokenizer, or no
            merge maps onto the vocabulary).
    """
    for source in (_from_json, _from_bpe_ranks):
        try:
            found = source(tokenizer)
        except Exception:  # tokenizer internals differ; try the next source
            found = None
        if found is None:
            continue
        vocab, pairs, prefix = found
        merges = []
        for left, right in pairs:
            joined = left + (right[len(prefix) :] if prefix and right.startswith(prefix) else right)
            ids = vocab.get(left), vocab.get(right), vocab.get(joined)
            if None not in ids:
                merges.append(ids)
        if merges or not pairs:
            return BPEMerges(vocab, merges)
    raise ValueError(
        f"Could not determine BPE merges of {type(tokenizer).__name__}: it has no readable "
        "merge list (a fast tokenizer's BPE model or a slow tokenizer's bpe_ranks) whose pieces "
        "are in its vocabulary"
    )


def extract_bpe_merges(tokenizer: Any) -> list[tuple[int, int, int]]:
    """The ordered merges `(left_id, right_id, merged_id)` of a BPE tokenizer.

    Raises:
        ValueError: see `read_bpe_merges`.
    """
    return read_bpe_merges(tokenizer).merges


class Derivations:
    """For each token id: whether BPE makes it from its own text, and with which last merge.

    Args:
        vocab: token piece -> id (the merges' alphabet: byte-level characters,
            or characters for SentencePiece-style BPE).
        merges: `(left, right, merged)` ids, highest priority first.
        size: the number of token ids (ids at or past it are ignored).

    Attributes:
        rank: `(left, right)` -> priority of the merge (lower first).
        left, right: the two tokens BPE joins last to make a token; -1 for a
            token no merge makes (a byte, a special token): an atom.
        made_at: the rank of that last merge (`INF` for an atom).
        canonical: whether BPE encodes the token's piece as the token itself.
        well_formed: whether every merge comes after the merges making its
            two parts, as in every trained BPE; the bigram test is exact then.
    """

    def __init__(self, vocab: Mapping[str, int], merges: Sequence[tuple[int, int, int]], size: int):
        self.size = size
        self.INF = len(merges) + 1
        self.rank: dict[tuple[int, int], int] = {}
        self._joins: dict[tuple[int, int], int] = {}
        for r, (u, v, uv) in enumerate(merges):
            if max(u, v, uv) < size and (u, v) not in self.rank:
                self.rank[(u, v)] = r
                self._joins[(u, v)] = uv
        made = set(self._joins.values())
        self.left = np.full(size, -1, dtype=np.int64)
        self.right = np.full(size, -1, dtype=np.int64)
        self.made_at = np.full(size, self.INF, dtype=np.int64)
        self.canonical = np.ones(size, dtype=bool)
        for piece, token in vocab.items():
            if 0 <= token < size and token in made:
                self._derive(token, [vocab.get(c, -1) for c in piece])
        first_made = {}
        for (u, v), r in self.rank.items():
            first_made.setdefault(self._joins[(u, v)], r)
        self.well_formed = all(
            r > first_made.get(u, -1) and r > first_made.get(v, -1)
            for (u, v), r in self.rank.items()
        )

    def _derive(self, token: int, symbols: list[int]) -> None:
        """Run BPE on `symbols` (lowest rank first, leftmost on ties); record the last merge."""
        rank = self.rank
        last = None
        while len(symbols) > 1:
            best, at = self.INF, -1
            for i in range(len(symbols) - 1):
                r = rank.get((symbols[i], symbols[i + 1]))
                if r is not None and r < best:
                    best, at = r, i
            if at < 0:
                break
            last = (symbols[at], symbols[at + 1], best)
            symbols[at : at + 2] = [self._joins[(symbols[at], symbols[at + 1])]]
        if symbols != [token] or last is None:
            self.canonical[token] = False
            return
        self.left[token], self.right[token], self.made_at[token] = last

    def right_spine(self, token: int) -> list[tuple[int, int]]:
        """`(node, until)` down the right edge of `token`'s derivation, `token` first.

        `node` is the last token of the left part while BPE builds `token`,
        until the merge of rank `until` (`INF` for `token` itself) absorbs it.
        """
        return self._spine(token, self.right)

    def left_spine(self, token: int) -> list[tuple[int, int]]:
        """`(node, until)` down the left edge of `token`'s derivation (see `right_spine`)."""
        return self._spine(token, self.left)

    def _spine(self, token: int, child: Any) -> list[tuple[int, int]]:
        """`(node, until)` from `token` down one side (`child`: `left` or `right`) of its derivation."""
        out, until = [], self.INF
        while token >= 0:
            out.append((token, until))
            until = int(self.made_at[token])
            token = int(child[token])
        return out
