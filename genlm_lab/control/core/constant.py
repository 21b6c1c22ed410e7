"""`EOS` and `EOT`: end markers; every potential's `vocab_eos` ends with its EOS."""

from __future__ import annotations

__all__ = ["EOS", "EOT", "EndOfSequence"]


class EndOfSequence:
    """A marker for the end of a sequence, distinct from every token.

    Potentials weigh it in `logw_next` like a token; a context that ends with
    it is complete. Two markers are equal when their names are, so a copy
    (e.g. one unpickled in another process) still ends the sequence.
    """

    def __init__(self, name: str = "EOS") -> None:
        self.name = name

    @property
    def type_(self) -> str:
        """genlm-control's name for `name`."""
        return self.name

    def __radd__(self, other: object) -> list | tuple:
        """`context + EOS`: a list (str and bytes become their characters / byte values).

        Raises:
            TypeError: for anything that is not a str, bytes, list or tuple.
        """
        if isinstance(other, (str, bytes, bytearray, list)):
            return [*other, self]
        if isinstance(other, tuple):
            return (*other, self)
        raise TypeError(f"Cannot concatenate {type(other)} with {type(self)}")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EndOfSequence) and other.name == self.name

    def __hash__(self) -> int:
        return hash(("EndOfSequence", self.name))

    def __repr__(self) -> str:
        return self.name

    def __reduce__(self):
        return (EndOfSequence, (self.name,))

    def __len__(self) -> int:  # joins and decodes treat it as empty text
        return 0

    def __iter__(self):
        return iter(())

    def __bytes__(self) -> bytes:
        return b""


#: The default end-of-sequence marker.
EOS = EndOfSequence()
#: The end-of-turn marker (chat potentials end a turn with it).
EOT = EndOfSequence("EOT")
