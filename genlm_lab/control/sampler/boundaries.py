"""Boundary predicates: when a run of subunits (tokens) is a whole unit.

`MultiTokenUnitSampler` (`genlm_lab.control.sampler.unit`) draws tokens one
at a time and, after each, asks its predicate whether the tokens drawn so far
(the *buffer*) form a complete unit. The predicate sees the units already in
the particle's context too, so a predicate may depend on them; the ones here
do not.

- `TokenSetBoundary`: the unit ends with a token of a given set (a word ends
  at a space), compared by bytes, so a `Token` and plain bytes of the same
  text match alike.
- `FixedLengthBoundary`: every unit has the same number of tokens.
- `CFGBoundary`: the unit's text parses under a Lark grammar.

`SurpriseBoundary` and `CriticBoundary` (`signal_boundaries`) end a unit
where its weight, or a critic's, has moved by a threshold.

After a boundary, `finalize_unit(buffer)` gives the unit the sampler returns;
all three keep every token (dropping one would change which sequence the
weight is for).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from genlm_lab.control.core.tokens import join_bytes

__all__ = ["BoundaryPredicate", "CFGBoundary", "FixedLengthBoundary", "TokenSetBoundary"]

_PARSERS = ("earley", "lalr", "cyk")

if TYPE_CHECKING:
    from lark import Tree


def _lark() -> Any:
    """The `lark` module, imported on first use: only `CFGBoundary` needs it."""
    try:
        import lark
    except ImportError as e:  # pragma: no cover - lark is installed with the test extras
        raise ImportError("CFGBoundary needs the `lark` package: pip install lark") from e
    return lark


class BoundaryPredicate(ABC):
    """Decides whether a buffer of subunits is a complete unit, given the units before it.

    Subclasses implement `__call__`; override `finalize_unit` to change what
    the sampler returns for a complete buffer.
    """

    @abstractmethod
    def __call__(
        self, unit_context: Sequence[Any], subunit_buffer: Sequence[Any], **kwargs: Any
    ) -> bool:
        """Whether `subunit_buffer` (the tokens drawn since the last unit) is a whole unit.

        May be async (return an awaitable bool): the sampler awaits it, so a
        predicate can ask a critic (`CriticBoundary`).

        Args:
            unit_context: the particle's context so far: completed units (lists of tokens).
            subunit_buffer: the subunits of the unit being drawn, in order.
            **kwargs: signals from `MultiTokenUnitSampler`, given only to a
                predicate that declares them (or `**kwargs`): `cumulative_logw`,
                the sum of the log-weights of the buffer's tokens.
        """

    def finalize_unit(self, subunit_buffer: list[Any]) -> list[Any]:
        """The unit returned for a buffer this predicate accepted: the buffer itself by default."""
        return subunit_buffer


def _token_key(token: Any) -> Any:
    """What a subunit is compared by: the bytes of bytes-like tokens, anything else as it is."""
    if isinstance(token, (bytes, bytearray)):
        return bytes(token)
    return token


class TokenSetBoundary(BoundaryPredicate):
    """A unit ends with the first subunit that is in `boundary_tokens` (which the unit keeps).

    Tokens match by their bytes: `Token(220, b" ")` and `b" "` are the same
    boundary. End markers (EOS) match by equality.

    Args:
        boundary_tokens: the tokens that close a unit (a set, list, ...).

    Raises:
        TypeError: if `boundary_tokens` is one bytes/str object rather than a
            collection of tokens, or holds an unhashable item.
        ValueError: if it is empty.
    """

    def __init__(self, boundary_tokens: Iterable[Any]) -> None:
        if isinstance(boundary_tokens, (bytes, bytearray, str)):
            raise TypeError(
                f"boundary_tokens must be a collection of tokens, got the single "
                f"{type(boundary_tokens).__name__} {boundary_tokens!r}; write {{{boundary_tokens!r}}}"
            )
        self.boundary_tokens = set(boundary_tokens)
        if not self.boundary_tokens:
            raise ValueError("TokenSetBoundary needs at least one boundary token")
        self._keys = frozenset(_token_key(t) for t in self.boundary_tokens)

    def __call__(
        self, unit_context: Sequence[Any], subunit_buffer: Sequence[Any], **kwargs: Any
    ) -> bool:
        """Whether the buffer's last subunit is a boundary token (the context is not used)."""
        if not subunit_buffer:
            return False
        try:
            return _token_key(subunit_buffer[-1]) in self._keys
        except TypeError:  # an unhashable subunit is no boundary token
            return False

    def __repr__(self) -> str:
        return f"TokenSetBoundary({self.boundary_tokens!r})"


class FixedLengthBoundary(BoundaryPredicate):
    """A unit is `length` subunits long.

    Args:
        length: subunits per unit.

    Raises:
        TypeError: if `length` is not an int.
        ValueError: if it is not positive.
    """

    def __init__(self, length: int) -> None:
        if isinstance(length, bool) or not isinstance(length, int):
            raise TypeError(f"length must be an int, got {type(length).__name__} {length!r}")
        if length <= 0:
            raise ValueError(f"Length must be positive, got {length}")
        self.length = length

    def __call__(
        self, unit_context: Sequence[Any], subunit_buffer: Sequence[Any], **kwargs: Any
    ) -> bool:
        """Whether the buffer holds `length` subunits (or more)."""
        return len(subunit_buffer) >= self.length

    def __repr__(self) -> str:
        return f"FixedLengthBoundary({self.length})"


class CFGBoundary(BoundaryPredicate):
    """A unit is complete when its text parses under a Lark grammar.

    The buffer's text is its tokens' bytes joined (EOS adds nothing), decoded.
    It is a unit when it has at least `min_length` subunits and characters,
    the whole text parses from `start_rule`, and, if `complete_rules` is
    given, the root of the parse tree is one of them (for an ambiguous parse,
    the root of one of its readings). Parsing is not incremental: each call
    parses the buffer's text anew.

    Args:
        grammar_text: the grammar, in Lark's syntax.
        start_rule: the rule a unit must parse from.
        complete_rules: the rule names a parse's root may have; None accepts any parse.
        min_length: the fewest subunits, and characters, a unit may have.
        parser_type: Lark's parser: "earley" (any grammar), "lalr" (faster,
            LALR(1) grammars only) or "cyk".
        ambiguity: Earley's handling of ambiguous parses ("explicit" or "resolve").
        encoding: how the tokens' bytes decode to text.
        decode_errors: the decoder's `errors` ("ignore" drops bytes that do not
            decode; with "strict" a buffer that ends inside a character is no unit).

    Raises:
        ValueError: if the grammar does not compile ("Failed to create Lark
            parser: ..."), `parser_type` is unknown or `min_length` is negative.
    """

    def __init__(
        self,
        grammar_text: str,
        start_rule: str = "start",
        complete_rules: Iterable[str] | None = None,
        min_length: int = 2,
        parser_type: str = "earley",
        ambiguity: str = "explicit",
        encoding: str = "utf-8",
        decode_errors: str = "ignore",
    ) -> None:
        if parser_type not in _PARSERS:
            raise ValueError(f"parser_type must be one of {_PARSERS}, got {parser_type!r}")
        if isinstance(min_length, bool) or not isinstance(min_length, int) or min_length < 0:
            raise ValueError(f"min_length must be a non-negative int, got {min_length!r}")
        self.grammar_text = grammar_text
        self.start_rule = start_rule
        self.complete_rules = set(complete_rules) if complete_rules else None
        self.min_length = min_length
        self.parser_type = parser_type
        self.encoding = encoding
        self.decode_errors = decode_errors
        options: dict[str, Any] = {"start": start_rule, "parser": parser_type}
        if parser_type == "earley":
            options["ambiguity"] = ambiguity
        lark = _lark()
        self._lark_error = lark.exceptions.LarkError
        try:
            self.parser = lark.Lark(grammar_text, **options)
        except Exception as e:  # Lark raises GrammarError, ConfigurationError, ...
            raise ValueError(f"Failed to create Lark parser: {e}") from e

    def __call__(
        self, unit_context: Sequence[Any], subunit_buffer: Sequence[Any], **kwargs: Any
    ) -> bool:
        """Whether the buffer's text parses (with an accepted root); the context is not used.

        A failed parse (any `LarkError`) means "not yet a unit"; other errors propagate.
        """
        if len(subunit_buffer) < max(self.min_length, 1):
            return False
        try:
            text = join_bytes(subunit_buffer).decode(self.encoding, errors=self.decode_errors)
        except UnicodeDecodeError:
            return False
        if not text or len(text) < self.min_length:
            return False
        try:
            tree = self.parser.parse(text)
        except self._lark_error:
            return False
        return self._accepts_root(tree)

    def _accepts_root(self, tree: Tree) -> bool:
        """Whether the tree's root (any reading's, if ambiguous) is an accepted rule."""
        if self.complete_rules is None:
            return True
        if tree.data == "_ambig":
            return any(hasattr(c, "data") and self._accepts_root(c) for c in tree.children)
        return str(tree.data) in self.complete_rules

    def get_parse_tree(self, text: str) -> Tree | None:
        """The Lark parse tree of `text`, or None when it does not parse."""
        try:
            return self.parser.parse(text)
        except self._lark_error:
            return None

    def __repr__(self) -> str:
        rules = "" if self.complete_rules is None else f", complete_rules={self.complete_rules}"
        return f"CFGBoundary(start={self.start_rule!r}{rules})"
