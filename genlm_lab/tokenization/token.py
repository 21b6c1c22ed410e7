"""`Token`: the bytes of one vocabulary entry, tagged with its token id."""

from __future__ import annotations


class Token(bytes):
    """The byte string of a token, carrying its token id.

    A `Token` behaves like the `bytes` it decodes to (slicing, `len`, `+`,
    `startswith`), but two tokens are equal, hashed and ordered by their token
    id, so that duplicate byte strings with distinct ids stay distinct in sets,
    dicts and sorted lists.

    Args:
        token_id: the id of the token in its vocabulary.
        byte_string: the exact bytes the token decodes to.
    """

    token_id: int

    def __new__(cls, token_id: int, byte_string: bytes) -> Token:
        if not isinstance(byte_string, (bytes, bytearray)):
            raise TypeError(f"Token byte_string must be bytes, got {type(byte_string).__name__}")
        self = super().__new__(cls, byte_string)
        self.token_id = int(token_id)
        return self

    @property
    def byte_string(self) -> bytes:
        """The token's bytes as a plain `bytes` object."""
        return bytes(self)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Token):
            return self.token_id == other.token_id
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        if isinstance(other, Token):
            return self.token_id != other.token_id
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

    def __hash__(self) -> int:
        return hash(("Token", self.token_id))

    def __repr__(self) -> str:
        return f"Token({self.token_id}, {bytes(self)!r})"

    def __reduce__(self):
        return (Token, (self.token_id, bytes(self)))
