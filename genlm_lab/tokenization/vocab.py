"""`decode_vocab`: the exact bytes of every token id of a tokenizer.

Tokenizers store their vocabulary as strings in one of a few encodings:

* byte-level BPE (GPT-2, LLaMA-3, SmolLM2): every byte is mapped to a printable
  unicode character (`Ġ` for a space, `Ċ` for a newline);
* SentencePiece with byte fallback (LLaMA-2, Mistral): text pieces use `▁` for
  a space, and bytes that no piece covers are tokens named `<0xXX>`;
* tokenizers that carry their own byte decoder (a `byte_decoder` dict from
  characters to bytes, or a `decoder` dict from ids to raw bytes).

`decode_vocab` tries each encoding, keeps the first whose bytes reproduce
the tokenizer's own encoding of sample strings exactly, and raises one clear
error if none does, rather than returning a vocabulary that silently differs
from what the model was trained on.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

from genlm_lab.tokenization.bytes import ByteVocabError, decoder_kinds
from genlm_lab.tokenization.token import Token

__all__ = ["decode_vocab", "get_byte_vocab"]

#: Strings the chosen strategy must round-trip: spaces, newlines, tabs,
#: accents, CJK, emoji (4-byte UTF-8 that byte-level vocabularies split) and
#: combining marks.
_SAMPLES: tuple[str, ...] = (
    "Hello, world! The capital of France is Paris.",
    "  two leading spaces,\ttabs\tand trailing  ",
    "line one\nline two\n\n  indented\r\n",
    "naïve café — déjà vu « quotes » ß",
    "日本語のテキスト, 中文, 한국어",
    "emoji 😀🎉👩\u200d💻 and flags 🇫🇷",
    "e\u0301 combining, \u00a0non-breaking, zero\u200bwidth",
    "x = f(y) + 42 * 3.14 # code {}[]<>",
)

_BYTE_TOKEN = re.compile(r"^<0x([0-9A-Fa-f]{2})>$")
_SPIECE_SPACE = "\u2581"

_FALLBACKS = ("tokenizer", "latin1", "replace")


@cache
def _gpt2_unicode_to_byte() -> dict[str, int]:
    """The GPT-2 map from printable characters back to the 256 byte values.

    Printable Latin-1 bytes map to themselves; the 68 others (controls,
    space, soft hyphen, ...) map to code points 256, 257, ... in byte order.
    """
    printable = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    chars = {b: chr(b) for b in printable}
    shift = 0
    for b in range(256):
        if b not in chars:
            chars[b] = chr(256 + shift)
            shift += 1
    return {c: b for b, c in chars.items()}


class _Source:
    """What every strategy reads from the tokenizer, fetched once."""

    def __init__(self, tokenizer: Any, n: int) -> None:
        self.tokenizer = tokenizer
        self.n = n
        decoder = getattr(tokenizer, "added_tokens_decoder", None) or {}
        # Added and special tokens are matched as raw text, so their bytes are their text.
        self.added = {int(i): str(getattr(t, "content", t)) for i, t in decoder.items()}
        self._pieces: list[str | None] | None = None

    @property
    def pieces(self) -> list[str | None]:
        """The raw token strings by id (None where an id has no token)."""
        if self._pieces is None:
            self._pieces = list(self.tokenizer.convert_ids_to_tokens(list(range(self.n))))
        return self._pieces


def _char_map(char_to_byte: dict[str, int]) -> Callable[[str], bytes]:
    """A piece converter for vocabularies that spell each byte as one character."""
    table = {ord(c): chr(b) for c, b in char_to_byte.items()}
    alphabet = frozenset(char_to_byte)

    def convert(piece: str) -> bytes:
        if not alphabet.issuperset(piece):
            raise KeyError(f"piece {piece!r} has characters outside the byte alphabet")
        return piece.translate(table).encode("latin-1")

    return convert


def _sentencepiece(piece: str) -> bytes:
    match = _BYTE_TOKEN.match(piece)
    if match:
        return bytes([int(match.group(1), 16)])
    return piece.replace(_SPIECE_SPACE, " ").encode("utf-8")


def _decode_with(src: _Source, convert: Callable[[str], bytes]) -> list[bytes]:
    """Decode every id with a per-piece converter; added tokens are their UTF-8 text.

    A SentencePiece `<0xXX>` piece stays a byte even where a tokenizer lists it
    among its added tokens.
    """
    out: list[bytes] = []
    for i, piece in enumerate(src.pieces):
        if piece is None:
            out.append(f"<unused_{i}>".encode())
        elif i in src.added and not (convert is _sentencepiece and _BYTE_TOKEN.match(piece)):
            out.append(src.added[i].encode("utf-8"))
        else:
            out.append(convert(piece))
    return out


def _id_bytes(src: _Source, id_decoder: dict) -> list[bytes]:
    """Vocabularies that map ids straight to bytes (tiktoken-style `decoder`)."""
    out = []
    for i in range(src.n):
        if i in src.added:
            out.append(src.added[i].encode("utf-8"))
        elif i in id_decoder:
            out.append(bytes(id_decoder[i]))
        else:
            out.append(f"<unused_{i}>".encode())
    return out


def _per_token_decode(src: _Source) -> list[bytes]:
    """Last resort, for vocabularies whose every token is whole UTF-8 text."""
    return [src.tokenizer.decode([i]).encode("utf-8") for i in range(src.n)]


def _strategies(src: _Source) -> list[tuple[str, Callable[[], list[bytes]]]]:
    """Candidate decodings, most specific first."""
    tokenizer = src.tokenizer
    found: list[tuple[str, Callable[[], list[bytes]]]] = []
    byte_decoder = getattr(tokenizer, "byte_decoder", None)
    if isinstance(byte_decoder, dict) and byte_decoder:
        found.append(("own byte_decoder", lambda: _decode_with(src, _char_map(byte_decoder))))
    id_decoder = tokenizer.__dict__.get("decoder") if hasattr(tokenizer, "__dict__") else None
    if isinstance(id_decoder, dict) and id_decoder:
        if all(isinstance(v, bytes) for v in id_decoder.values()):
            found.append(("own id-to-bytes decoder", lambda: _id_bytes(src, id_decoder)))
    found.append(("byte-level BPE", lambda: _decode_with(src, _char_map(_gpt2_unicode_to_byte()))))
    found.append(("SentencePiece", lambda: _decode_with(src, _sentencepiece)))
    found.append(("per-token decode", lambda: _per_token_decode(src)))
    return found


def _encode(tokenizer: Any, text: str) -> list[int]:
    try:
        return list(tokenizer.encode(text, add_special_tokens=False))
    except TypeError:
        return list(tokenizer.encode(text))


def _round_trips(tokenizer: Any, vocab: Sequence[bytes]) -> bool:
    """Whether the vocabulary's bytes reproduce every sample string.

    A SentencePiece tokenizer that prepends a space to its input ("dummy
    prefix") passes when the bytes equal the string with that one space.
    """
    for text in _SAMPLES:
        try:
            ids = _encode(tokenizer, text)
            joined = b"".join(vocab[i] for i in ids)
        except (IndexError, ValueError, TypeError):
            return False
        expected = text.encode("utf-8")
        if joined != expected and joined != b" " + expected:
            return False
    return True


def _tokenizer_name(tokenizer: Any) -> str:
    name = getattr(tokenizer, "name_or_path", None) or ""
    return f"{type(tokenizer).__name__}({name!r})" if name else type(tokenizer).__name__


def _to_str(src: _Source | None, vocab: Sequence[bytes], fallback: str) -> list[str]:
    """Readable text of each token; `fallback` handles bytes that are not UTF-8."""
    out = []
    for i, b in enumerate(vocab):
        try:
            out.append(b.decode("utf-8"))
            continue
        except UnicodeDecodeError:
            pass
        if fallback == "latin1":
            out.append(b.decode("latin1"))
        elif fallback == "replace":
            out.append(b.decode("utf-8", errors="replace"))
        else:
            piece = src.pieces[i] if src is not None else None
            out.append(piece if piece is not None else b.decode("latin1"))
    return out


def decode_vocab(
    tokenizer: Any, byte2str_fallback: str = "tokenizer"
) -> tuple[list[Token], list[str]]:
    """The exact bytes and a readable string of every token id of a tokenizer.

    Each id in `range(len(tokenizer))` gets a `Token` (HF tokenizers may have
    added tokens beyond `vocab_size`). Special and added tokens are their
    UTF-8 text; distinct ids may share bytes. The decoding strategy (byte-level
    BPE, SentencePiece `<0xXX>` / `▁`, or the tokenizer's own byte decoder) is
    the first one that round-trips sample strings through `tokenizer.encode`.

    Args:
        tokenizer: an HF tokenizer (or any object with `encode`, `__len__` and
            `convert_ids_to_tokens`, or a `vocab` list of bytes).
        byte2str_fallback: how `str_vocab` shows tokens that are not valid
            UTF-8 on their own: `"tokenizer"` (the tokenizer's own piece, e.g.
            `"ðŁ"`; Latin-1 for a tokenizer without pieces), `"latin1"`, or
            `"replace"` (U+FFFD).

    Returns:
        `(byte_vocab, str_vocab)`: `byte_vocab[i]` is a `Token` with id `i`;
        `str_vocab[i]` is its text.

    Raises:
        ValueError: for an unknown `byte2str_fallback`, or if no strategy
            round-trips (the error names the tokenizer).
    """
    if byte2str_fallback not in _FALLBACKS:
        raise ValueError(
            f"byte2str_fallback={byte2str_fallback!r} is not one of {', '.join(_FALLBACKS)}"
        )
    if not hasattr(tokenizer, "convert_ids_to_tokens"):
        raw = getattr(tokenizer, "vocab", None)
        if isinstance(raw, list) and raw and all(isinstance(v, bytes) for v in raw):
            # A tokenizer that already holds its bytes (ToyTokenizer): nothing to infer.
            vocab = [bytes(v) for v in raw]
            strs = _to_str(None, vocab, byte2str_fallback)
            return [Token(i, b) for i, b in enumerate(vocab)], strs
    try:
        vocab = get_byte_vocab(tokenizer)
    except ByteVocabError as e:
        raise ValueError(
            f"Could not decode byte representation of the vocabulary of "
            f"{_tokenizer_name(tokenizer)}: {e}"
        ) from e
    src = _Source(tokenizer, len(vocab))
    return [Token(i, b) for i, b in enumerate(vocab)], _to_str(src, vocab, byte2str_fallback)


def get_byte_vocab(tokenizer: Any) -> list[bytes]:
    """The bytes of every token id of an HF tokenizer (see `decode_vocab`).

    Raises:
        ByteVocabError: if no decoding strategy reproduces the tokenizer's
            encoding of sample strings (the error names the tokenizer, and its
            declared decoder when that is neither ByteLevel nor SentencePiece).
    """
    src = _Source(tokenizer, len(tokenizer))
    tried = []
    for name, build in _strategies(src):
        try:
            vocab = build()
        except (KeyError, ValueError, TypeError, AttributeError):
            tried.append(name)
            continue
        if len(vocab) == src.n and _round_trips(tokenizer, vocab):
            return vocab
        tried.append(name)
    kinds = decoder_kinds(tokenizer)
    declared = ""
    if kinds and not kinds & {"ByteLevel", "ByteFallback", "Metaspace"}:
        declared = (
            f"; its declared decoder ({', '.join(sorted(kinds))}) is neither ByteLevel "
            "nor SentencePiece"
        )
    raise ByteVocabError(
        f"could not decode the vocabulary of tokenizer {_tokenizer_name(tokenizer)} to bytes: "
        f"no strategy ({', '.join(tried)}) reproduces its encoding of sample strings{declared}; "
        "genlm_lab supports byte-level BPE, SentencePiece with byte fallback, and "
        "tokenizers with a byte decoder"
    )
