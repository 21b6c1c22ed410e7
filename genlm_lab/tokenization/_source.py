"""What every decoding strategy reads from a tokenizer: pieces, special and added tokens.

Also the tokenizer's own `encode`/`decode` called the one way genlm_lab
compares against (specials kept, no space clean-up), shared by `vocab.py`
and `report.py`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any


def vocab_length(tokenizer: Any) -> int:
    """How many ids to decode: `len(tokenizer)`, or past it where its vocabulary has holes.

    A vocabulary with holes (ids without a token) can hold ids beyond
    `len(tokenizer)`, which counts entries: every id the tokenizer can emit
    gets a byte string, so indexing by id never fails.
    """
    n = len(tokenizer)
    get_vocab = getattr(tokenizer, "get_vocab", None)
    if callable(get_vocab):
        try:
            ids = [int(i) for i in get_vocab().values()]
        except (TypeError, ValueError, AttributeError, NotImplementedError):
            ids = []
        n = max(n, max(ids, default=-1) + 1)
    return n


class Source:
    """What every strategy reads from the tokenizer, fetched once."""

    def __init__(self, tokenizer: Any, n: int | None = None) -> None:
        self.tokenizer = tokenizer
        self.n = vocab_length(tokenizer) if n is None else n
        self.pieces = _all_pieces(tokenizer, self.n)
        added = getattr(tokenizer, "added_tokens_decoder", None) or {}
        special = {int(i) for i in getattr(tokenizer, "all_special_ids", None) or ()}
        special.update(int(i) for i, t in added.items() if getattr(t, "special", False))
        self.special = {i for i in special if 0 <= i < self.n}
        #: Special tokens are their text; other added tokens are what the decoder makes of them.
        self.special_text = {
            i: str(getattr(added[i], "content", added[i])) if i in added else self.pieces[i]
            for i in self.special
        }
        plain_added = sorted(
            int(i) for i in added if int(i) not in self.special and int(i) < self.n
        )
        self.added_text = _decoded_in_context(tokenizer, plain_added)
        self.decoder_types = _decoder_types(tokenizer)


def _all_pieces(tokenizer: Any, n: int) -> list[str | None]:
    try:
        pieces = list(tokenizer.convert_ids_to_tokens(list(range(n))))
    except (IndexError, KeyError, TypeError, ValueError, OverflowError):
        pieces = []
        for i in range(n):
            try:
                pieces.append(tokenizer.convert_ids_to_tokens(i))
            except (IndexError, KeyError, TypeError, ValueError, OverflowError):
                pieces.append(None)
    return [p if isinstance(p, str) else None for p in pieces]


def decode_text(tokenizer: Any, ids: Sequence[int]) -> str:
    """The tokenizer's own text for ids: specials kept, no clean-up of spaces."""
    try:
        return tokenizer.decode(
            list(ids), skip_special_tokens=False, clean_up_tokenization_spaces=False
        )
    except TypeError:
        return tokenizer.decode(list(ids))


def encode_text(tokenizer: Any, text: str) -> list[int]:
    try:
        return list(tokenizer.encode(text, add_special_tokens=False))
    except TypeError:
        return list(tokenizer.encode(text))


def _decoded_in_context(tokenizer: Any, ids: list[int]) -> dict[int, str | None]:
    """Each id's text as the tokenizer decodes it after a plain token.

    Decoding after an anchor token ("a") sidesteps rules that apply only to
    the first token (SentencePiece strips one leading space there). None where
    the decode is not whole text (it holds U+FFFD) or the anchor is unusable.
    """
    if not ids:
        return {}
    anchor, head = None, ""
    for text in ("a", "x", "0", "."):
        found = encode_text(tokenizer, text)
        if len(found) == 1:
            anchor, head = found, decode_text(tokenizer, found)
            break
    out: dict[int, str | None] = {}
    for i in ids:
        if anchor is None:
            text = decode_text(tokenizer, [i])
        else:
            both = decode_text(tokenizer, [*anchor, i])
            text = both[len(head) :] if both.startswith(head) else None
        out[i] = None if text is None or "\ufffd" in text else text
    return out


def _decoder_types(tokenizer: Any) -> set[str]:
    """Type names in the fast tokenizer's decoder (e.g. {"ByteLevel"}), to order strategies."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    decoder = getattr(backend, "decoder", None)
    if decoder is None:
        return set()
    try:
        spec = json.loads(decoder.__getstate__())
    except (AttributeError, TypeError, ValueError):
        return set()
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("type"), str):
                found.add(node["type"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(spec)
    return found


def tokenizer_name(tokenizer: Any) -> str:
    name = getattr(tokenizer, "name_or_path", None) or ""
    return f"{type(tokenizer).__name__}({name!r})" if name else type(tokenizer).__name__
