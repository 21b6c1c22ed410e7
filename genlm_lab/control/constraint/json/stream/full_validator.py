"""`FullValidatorJsonSchema`: a JSON schema checked by `jsonschema` on prefixes and documents.

A finished document is parsed and validated exactly. A prefix is cut back
to its last `,`, `]` or `}` (`prune_to_validatable_prefix`: the members
before such a byte are finished, and checking there keeps the cache of
checks small); the finished values in it are validated, and the prefix is
refused only on errors that no continuation can mend (`partial_document`).

Before either, cheap checks refuse what a model should not start: more
than two spaces or newlines before the value, a blank line, and ASCII
control characters other than the newline (tabs and carriage returns
included, though JSON allows them between values).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import regex

from genlm_lab.control.constraint.json.reading import validator_for
from genlm_lab.control.constraint.json.stream.partial_document import CUT, fixable, read_partial
from genlm_lab.control.potential import Potential

__all__ = ["FullValidatorJsonSchema", "prune_to_validatable_prefix"]

#: At most two spaces or newlines, then the first byte of a JSON value.
_START = regex.compile(rb'[ \n]{0,2}[\[{"\-0-9nft]')
#: A blank line (two line breaks with only whitespace between).
_BLANK_LINE = regex.compile(rb"\n[ \t\r\x0b\x0c]*\n")
_CONTROL = regex.compile(rb"[\x00-\x09\x0b-\x1f]")


def prune_to_validatable_prefix(context: bytes) -> bytes:
    """`context` up to its last `,`, `]` or `}` (b"" if none), less an unfinished last character.

    Raises:
        UnicodeDecodeError: if `context` holds bytes no UTF-8 text has there.
    """
    try:
        context.decode("utf-8")
    except UnicodeDecodeError as error:
        if error.reason != "unexpected end of data":
            raise
        context = context[: error.start]
    cut = max(context.rfind(b","), context.rfind(b"]"), context.rfind(b"}"))
    return context[: cut + 1]


def _refuse_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _precheck(context: bytes) -> str | None:
    """Why `context` is refused before parsing, or None."""
    if _START.match(context, partial=True) is None:
        return f"a document cannot start {context[:5]!r}"
    blank = _BLANK_LINE.search(context, 1)  # the first two bytes may be "\n\n"
    if blank is not None:
        return f"a blank line at {blank.start()}"
    control = _CONTROL.search(context)
    if control is not None:
        return f"the control character {control.group()!r} at {control.start()}"
    return None


class FullValidatorJsonSchema(Potential):
    """A constraint over bytes: documents valid under `schema`, prefixes not yet invalid.

    Args:
        schema: the JSON schema (its `$schema` picks the draft; 2020-12 by default).

    Raises:
        InvalidGrammar: if the schema is not a valid JSON schema.
    """

    is_boolean = True

    def __init__(self, schema: Any) -> None:
        super().__init__(list(range(256)))
        self.schema = schema
        self.validator = validator_for(schema)
        self._prefix_ok = lru_cache(maxsize=1024)(self._finished_part_ok)

    def _finished_part_ok(self, pruned: bytes) -> bool:
        try:
            value, open_paths = read_partial(pruned.decode("utf-8"))
        except ValueError:
            return False
        if value is CUT:
            return True
        return all(fixable(e, open_paths) for e in self.validator.iter_errors(value))

    async def prefix(self, context: Sequence[int]) -> float:
        context = bytes(context)
        if _precheck(context) is not None:
            return -math.inf
        try:
            pruned = prune_to_validatable_prefix(context)
        except UnicodeDecodeError:
            return -math.inf
        return 0.0 if self._prefix_ok(pruned) else -math.inf

    async def complete(self, context: Sequence[int]) -> float:
        context = bytes(context)
        if _precheck(context) is not None:
            return -math.inf
        try:
            document = json.loads(context.decode("utf-8"), parse_constant=_refuse_constants)
        except ValueError:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
            return -math.inf
        return 0.0 if self.validator.is_valid(document) else -math.inf

    def spawn(self) -> FullValidatorJsonSchema:
        return FullValidatorJsonSchema(self.schema)

    def __repr__(self) -> str:
        return f"FullValidatorJsonSchema({json.dumps(self.schema)[:60]})"
