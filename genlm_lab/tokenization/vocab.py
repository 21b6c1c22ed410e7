"""`decode_vocab`: the exact bytes of every token id of a tokenizer.

Tokenizers store their vocabulary as strings in one of a few encodings:

* byte-level BPE (GPT-2, Llama 3, Qwen, SmolLM2): every byte is spelled as one
  printable character (`Ġ` for a space, `Ċ` for a newline);
* SentencePiece with byte fallback (Llama 2, Gemma, Mistral): `▁` is a
  space, bytes no piece covers are tokens named `<0xXX>`;
* tokenizers that hold the bytes themselves (a `byte_decoder` dict from
  characters to bytes, a tiktoken-style `decoder` from ids to bytes or
  `mergeable_ranks` from bytes to ids).

Added tokens that are not special (Gemma's whitespace runs `▁▁`, Qwen's
`<think>`) are what the tokenizer's own decoder makes of them; special tokens
(BOS, chat markers) are their UTF-8 text, as in genlm-backend, and control
potentials never allow them. Ids that no strategy can map (a hole in the
vocabulary, a piece outside the byte alphabet) still load: they get bytes
starting with 0xFF, which no UTF-8 text contains, and one warning lists them.

The strategy is the first whose bytes reproduce what the tokenizer itself
produces on sample strings: its own `decode` of its own `encode` (so a
normaliser such as Qwen's NFC, or a dummy-prefix space, is the tokenizer's
business, not a mismatch). One clear error is raised if none does.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from genlm_lab.tokenization import _pieces
from genlm_lab.tokenization._source import (
    Source,
    decode_text,
    encode_text,
    tokenizer_name,
    vocab_length,
)
from genlm_lab.tokenization.bytes import ByteVocabError, decoder_kinds
from genlm_lab.tokenization.token import Token, numbered_tokens
from genlm_lab.util.gc_pause import gc_paused

__all__ = ["SAMPLES", "VocabDecoding", "decode_vocab", "get_byte_vocab", "inspect_vocab"]

#: Strings the chosen strategy must round-trip: spaces, whitespace runs, newlines,
#: tabs, accents, CJK, emoji (4-byte UTF-8 that byte-level vocabularies split),
#: combining marks (which NFC normalisers compose) and code.
SAMPLES: tuple[str, ...] = (
    "Hello, world! The capital of France is Paris.",
    "  two leading spaces,\ttabs\tand trailing  ",
    "line one\nline two\n\n  indented\r\n",
    "naïve café — déjà vu « quotes » ß",
    "日本語のテキスト, 中文, 한국어",
    "emoji 😀🎉👩\u200d💻 and flags 🇫🇷",
    "e\u0301 combining, \u00a0non-breaking, zero\u200bwidth",
    "def f(x):\n        return {'a': [x, 42 * 3.14]}  # code\n\t\tpass",
    "runs:    four,        eight, \n\n\n three newlines",
)

_FALLBACKS = ("tokenizer", "latin1", "replace")


@dataclass
class VocabDecoding:
    """What `inspect_vocab` found: the strategy, the bytes, and the ids it could not map.

    Attributes:
        strategy: the decoding that reproduced the tokenizer (e.g. "byte-level BPE").
        byte_vocab: the bytes of every id in `range(len(tokenizer))`.
        pieces: the tokenizer's raw token strings (None where an id has none).
        special_ids: ids the tokenizer calls special (their bytes are their text).
        unmapped: id -> kind, for ids that got 0xFF-led bytes.
        tried: the strategies tried before the chosen one.
        seconds: how long the decoding took.
    """

    strategy: str
    byte_vocab: list[bytes]
    pieces: list[str | None]
    special_ids: list[int]
    unmapped: dict[int, str] = field(default_factory=dict)
    tried: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def unmapped_summary(self) -> str:
        """One line: how many ids have no bytes, by kind, with a few examples."""
        if not self.unmapped:
            return "every id has bytes"
        kinds: dict[str, list[int]] = {}
        for i, kind in self.unmapped.items():
            kinds.setdefault(kind, []).append(i)
        parts = []
        for kind, ids in sorted(kinds.items(), key=lambda kv: -len(kv[1])):
            shown = ", ".join(_label(i, self.pieces[i]) for i in ids[:4])
            parts.append(f"{len(ids)} {kind} ({shown}{', ...' if len(ids) > 4 else ''})")
        return f"{len(self.unmapped)} of {len(self.byte_vocab)} ids have no bytes: " + "; ".join(
            parts
        )


def _label(i: int, piece: str | None) -> str:
    return f"{i}" if piece is None else f"{i}={piece!r}"


def _kind(piece: str | None) -> str:
    """A readable kind for an unmapped id, for the warning and the report."""
    if piece is None:
        return "ids without a token"
    low = piece.lower()
    if "unused" in low or "reserved" in low or "placeholder" in low:
        return "unused slots"
    if any(w in low for w in ("image", "img", "vision", "audio", "video")):
        return "multimodal tokens"
    if piece[:1] in "<[" and piece[-1:] in ">]":
        return "control tokens"
    return "pieces outside the byte alphabet"


class _Strategy:
    """One way to turn ids into bytes; `bytes_of(i)` returns bytes or None (unmapped)."""

    def __init__(self, name: str, src: Source, piece_bytes: Callable[[int], bytes | None]):
        self.name = name
        self.src = src
        self.piece_bytes = piece_bytes

    def bytes_of(self, i: int) -> bytes | None:
        src = self.src
        if i in src.special:
            text = src.special_text.get(i)
            return text.encode("utf-8") if text is not None else None
        if i in src.added_text:
            text = src.added_text[i]
            if text is not None:
                return text.encode("utf-8")
        return self.piece_bytes(i)

    def build(self) -> tuple[list[bytes], dict[int, str]]:
        out: list[bytes] = []
        unmapped: dict[int, str] = {}
        for i in range(self.src.n):
            b = self.bytes_of(i)
            if b is None:
                piece = self.src.pieces[i]
                unmapped[i] = _kind(piece)
                b = _pieces.unmapped_bytes(i, piece)
            out.append(b)
        return out, unmapped


def _converting(src: Source, convert: _pieces.Converter) -> Callable[[int], bytes | None]:
    def piece_bytes(i: int) -> bytes | None:
        piece = src.pieces[i]
        if piece is None:
            return None
        try:
            return convert(piece)
        except KeyError:
            return None

    return piece_bytes


def _strategies(src: Source) -> list[_Strategy]:
    """Candidate decodings: the tokenizer's own bytes first, then by its declared decoder."""
    found = []
    id_bytes = _pieces.own_id_bytes(src.tokenizer)
    if id_bytes is not None:
        found.append(_Strategy("own id-to-bytes table", src, id_bytes.get))
    byte_decoder = _pieces.own_byte_decoder(src.tokenizer)
    if byte_decoder is not None:
        convert = _pieces.char_map(byte_decoder)
        found.append(_Strategy("own byte_decoder", src, _converting(src, convert)))
    byte_level = _Strategy(
        "byte-level BPE", src, _converting(src, _pieces.char_map(_pieces.gpt2_unicode_to_byte()))
    )
    spiece = _Strategy("SentencePiece", src, _converting(src, _pieces.sentencepiece))
    if src.decoder_types & {"ByteFallback", "Metaspace", "Replace"}:
        found += [spiece, byte_level]
    else:
        found += [byte_level, spiece]
    return found


def _per_token_decode(src: Source) -> _Strategy:
    """Last resort, for vocabularies whose every token is whole UTF-8 text."""
    texts = {}

    def piece_bytes(i: int) -> bytes | None:
        if i not in texts:
            texts[i] = decode_text(src.tokenizer, [i])
        return None if "\ufffd" in texts[i] else texts[i].encode("utf-8")

    return _Strategy("per-token decode", src, piece_bytes)


def _reproduces(strategy: _Strategy, references: list[tuple[list[int], bytes]]) -> bool:
    """Whether the strategy's bytes equal the tokenizer's own decoding of every sample.

    A tokenizer whose decoder strips the dummy-prefix space (Llama 2) passes
    when the bytes are that one space longer.
    """
    for ids, expected in references:
        parts = [strategy.bytes_of(i) for i in ids]
        if any(p is None for p in parts):
            return False
        joined = b"".join(parts)
        if joined != expected and joined != b" " + expected:
            return False
    return True


def _references(tokenizer: Any, n: int) -> list[tuple[list[int], bytes]]:
    """`(ids, decode(ids) as UTF-8)` of each sample (ids below `n`); raises if plain ASCII text is lost."""
    refs = []
    for text in SAMPLES:
        ids = encode_text(tokenizer, text)
        if any(not 0 <= i < n for i in ids):
            raise ValueError(
                f"tokenizer {tokenizer_name(tokenizer)} encodes {text!r} to ids out of range"
            )
        refs.append((ids, decode_text(tokenizer, ids).encode("utf-8")))
    plain = SAMPLES[0].encode()
    if refs[0][1] not in (plain, b" " + plain):
        raise ValueError(
            f"tokenizer {tokenizer_name(tokenizer)} does not reproduce plain ASCII text: it decodes "
            f"{SAMPLES[0]!r} as {refs[0][1].decode()!r} (does it lowercase, or map words to "
            "an unknown token?); genlm_lab needs a tokenizer that keeps text as it is"
        )
    return refs


def _declared_decoder(tokenizer: Any) -> str:
    """A clause naming the tokenizer's declared decoder when it is neither ByteLevel nor SentencePiece."""
    kinds = decoder_kinds(tokenizer)
    if kinds and not kinds & {"ByteLevel", "ByteFallback", "Metaspace"}:
        return (
            f"; its declared decoder ({', '.join(sorted(kinds))}) is neither ByteLevel "
            "nor SentencePiece"
        )
    return ""


def inspect_vocab(tokenizer: Any) -> VocabDecoding:
    """Decode a tokenizer's vocabulary and say how: strategy, special and unmapped ids.

    Args:
        tokenizer: an HF tokenizer (anything with `encode`, `decode`, `__len__`
            and `convert_ids_to_tokens`), or an object whose `vocab` is a list of bytes.

    Returns:
        A `VocabDecoding`; `decode_vocab` is its `byte_vocab` as `Token`s.

    Raises:
        ByteVocabError: (a ValueError) if no strategy reproduces the tokenizer's
            own decoding of the sample strings (the error names the tokenizer,
            the strategies, and a declared decoder that is neither ByteLevel
            nor SentencePiece).
            It is raised too if the tokenizer does not keep plain text as it is.
    """
    start = time.perf_counter()
    if not hasattr(tokenizer, "convert_ids_to_tokens"):
        raw = getattr(tokenizer, "vocab", None)
        if isinstance(raw, list) and raw and all(isinstance(v, bytes) for v in raw):
            # A tokenizer that already holds its bytes (ToyTokenizer): nothing to infer.
            vocab = [bytes(v) for v in raw]
            special = [i for i in (getattr(tokenizer, "eos_token_id", None),) if i is not None]
            return VocabDecoding("own bytes", vocab, [None] * len(vocab), special)
    n = vocab_length(tokenizer)  # get_vocab() builds a dict of the whole vocabulary: read it once
    try:
        references = _references(tokenizer, n)
    except ValueError as e:
        raise ByteVocabError(f"{e}{_declared_decoder(tokenizer)}") from e
    src = Source(tokenizer, n)
    tried = []
    for strategy in [*_strategies(src), _per_token_decode(src)]:
        if _reproduces(strategy, references):
            vocab, unmapped = strategy.build()
            seconds = time.perf_counter() - start
            special = sorted(src.special)
            return VocabDecoding(
                strategy.name, vocab, src.pieces, special, unmapped, tried, seconds
            )
        tried.append(strategy.name)
    declared = _declared_decoder(tokenizer)
    raise ByteVocabError(
        f"could not decode the vocabulary of tokenizer {tokenizer_name(tokenizer)} to bytes: no "
        f"strategy ({', '.join(tried)}) reproduces its own decoding of sample strings{declared}; "
        "genlm_lab supports byte-level BPE, SentencePiece with byte fallback, and "
        "tokenizers that hold their bytes (byte_decoder, tiktoken-style ranks)"
    )


def _to_str(pieces: Sequence[str | None], vocab: Sequence[bytes], fallback: str) -> list[str]:
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
            piece = pieces[i]
            out.append(piece if piece is not None else b.decode("latin1"))
    return out


def decode_vocab(
    tokenizer: Any, byte2str_fallback: str = "tokenizer"
) -> tuple[list[Token], list[str]]:
    """The exact bytes and a readable string of every token id of a tokenizer.

    Each id in `range(len(tokenizer))` gets a `Token` (HF tokenizers may have
    added tokens beyond `vocab_size`). Special tokens are their UTF-8 text;
    distinct ids may share bytes. Ids no strategy can map get bytes led by
    0xFF (never in UTF-8 text) and one `UserWarning` lists them by kind.

    Args:
        tokenizer: an HF tokenizer (or any object with `encode`, `decode`,
            `__len__` and `convert_ids_to_tokens`, or a `vocab` list of bytes).
        byte2str_fallback: how `str_vocab` shows tokens that are not valid
            UTF-8 on their own: `"tokenizer"` (the tokenizer's own piece, e.g.
            `"ðŁ"`; Latin-1 for a tokenizer without pieces), `"latin1"`, or
            `"replace"` (U+FFFD).

    Returns:
        `(byte_vocab, str_vocab)`: `byte_vocab[i]` is a `Token` with id `i`;
        `str_vocab[i]` is its text.

    Raises:
        ValueError: for an unknown `byte2str_fallback`, or if no strategy
            reproduces the tokenizer (the error names the tokenizer).
    """
    if byte2str_fallback not in _FALLBACKS:
        raise ValueError(
            f"byte2str_fallback={byte2str_fallback!r} is not one of {', '.join(_FALLBACKS)}"
        )
    try:
        with gc_paused():  # a few objects per token, none of them garbage
            found = inspect_vocab(tokenizer)
    except ByteVocabError as e:
        raise ValueError(f"Could not decode byte representation: {e}") from e
    if found.unmapped:
        warnings.warn(
            f"decode_vocab({tokenizer_name(tokenizer)}): {found.unmapped_summary()}; they get bytes "
            "led by 0xFF, which no UTF-8 text contains, so no constraint allows them",
            UserWarning,
            stacklevel=2,
        )
    with gc_paused():
        byte_vocab = numbered_tokens(found.byte_vocab)
        return byte_vocab, _to_str(found.pieces, found.byte_vocab, byte2str_fallback)


def get_byte_vocab(tokenizer: Any) -> list[bytes]:
    """The bytes of every token id (genlm-backend's name): `inspect_vocab(tokenizer).byte_vocab`.

    Raises:
        ByteVocabError: if no strategy decodes the vocabulary.
    """
    return inspect_vocab(tokenizer).byte_vocab
