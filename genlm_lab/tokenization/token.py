"""`Token`: the bytes of one vocabulary entry, tagged with its token id."""

from __future__ import annotations

import operator
from collections.abc import Sequence


class Token(bytes):
    """The byte string of a token, carrying its token id.

    A `Token` behaves like the `bytes` it decodes to (slicing, `len`, `+`,
    `startswith`, `b"a" in vocab`, `dict` keys), but two tokens are equal only
    when their ids are (and their bytes, which one vocabulary never gives two
    ids apart: genlm-backend compares ids alone, which within one vocabulary is
    the same), and tokens sort by id: duplicate byte strings with distinct ids
    stay distinct in sets, dicts and sorted lists. A token equals plain `bytes`
    of the same content, so it hashes like them (Python requires equal objects
    to hash alike; equality by id alone would break that across vocabularies).

    `Token(token_id, byte_string)` takes the id of the token in its
    vocabulary and the exact bytes the token decodes to.
    """

    token_id: int

    def __new__(cls, token_id: int, byte_string: bytes) -> Token:
        if not isinstance(byte_string, (bytes, bytearray)):
            raise TypeError(f"Token byte_string must be bytes, got {type(byte_string).__name__}")
        if isinstance(token_id, bool):
            raise TypeError(f"Token token_id must be an int, got {token_id!r}")
        try:
            token_id = operator.index(token_id)  # ints, numpy and torch integers; not 1.5
        except TypeError:
            raise TypeError(
                f"Token token_id must be an int, got {type(token_id).__name__} {token_id!r}"
            ) from None
        self = super().__new__(cls, byte_string)
        self.token_id = token_id
        return self

    @property
    def byte_string(self) -> bytes:
        """The token's bytes as a plain `bytes` object."""
        return bytes(self)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Token):
            return self.token_id == other.token_id and bytes.__eq__(self, other)
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        if isinstance(other, Token):
            return not self == other
        return NotImplemented

    def __lt__(self, other: object) -> bool:
        if isinstance(other, Token):
            return self.token_id < other.token_id
        return NotImplemented

    def __le__(self, other: object) -> bool:
        if isinstance(other, Token):
            return self.token_id <= other.token_id
        return NotImplemented

    def __gt__(self, other: object) -> bool:
        if isinstance(other, Token):
            return self.token_id > other.token_id
        return NotImplemented

    def __ge__(self, other: object) -> bool:
        if isinstance(other, Token):
            return self.token_id >= other.token_id
        return NotImplemented

    # Hashes as its bytes. The C slot itself, not a method calling it: tokens key
    # dicts of whole vocabularies, and a Python-level __hash__ adds a Python call to each lookup.
    __hash__ = bytes.__hash__

    @staticmethod
    def as_bytes(x: bytes) -> bytes:
        """The plain bytes of a `Token`; any other value is returned as it is."""
        return x.byte_string if isinstance(x, Token) else x

    @staticmethod
    def is_plain_bytes(x: object) -> bool:
        """Whether `x` is `bytes` but not a `Token`."""
        return isinstance(x, bytes) and not isinstance(x, Token)

    def __repr__(self) -> str:
        return f"Token(token_id={self.token_id}, byte_string={bytes(self)!r})"

    def __reduce__(self):
        return (Token, (self.token_id, bytes(self)))


def numbered_tokens(byte_strings: Sequence[bytes]) -> list[Token]:
    """`[Token(i, b) for i, b in enumerate(byte_strings)]` for plain `bytes` known good.

    Skips `Token`'s checks of each id and byte string (a sizeable share of the
    cost over a large vocabulary): the ids are `enumerate`'s ints, and
    `decode_vocab` makes only bytes.
    """
    new = bytes.__new__
    out = []
    for i, b in enumerate(byte_strings):
        token = new(Token, b)
        token.token_id = i
        out.append(token)
    return out
