"""What the start of a JSON document already says: the finished values of a prefix.

`read_partial(text)` reads a prefix of a JSON document into a Python value
in which every object and array that is still open holds only its finished
members (a member whose value was cut is left out), and names the paths of
the open ones. `fixable(error, open_paths)` says whether a `jsonschema`
error on that value could still go away as the document goes on: a missing
required key or too few items of an open container can, a wrong type or a
value inside a finished member cannot. A prefix whose errors are all
fixable may still be completed into a valid document, as far as a
validator can see.
"""

from __future__ import annotations

import json
from typing import Any

import regex

__all__ = ["CUT", "fixable", "read_partial"]

#: `read_partial`'s value for a prefix that holds no finished value yet.
CUT: Any = type("Cut", (), {"__repr__": lambda self: "CUT"})()

_NUMBER = regex.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_STRING = regex.compile(r'"(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"')
_LITERALS = {"true": True, "false": False, "null": None}
_SPACE = " \t\n\r"

#: Keywords whose failure on an open container more members may still mend.
_GROWING = frozenset(
    {
        "required",
        "minItems",
        "minProperties",
        "contains",
        "minContains",
        "dependencies",
        "dependentRequired",
        "dependentSchemas",
        "enum",
        "const",
        "not",
    }
)


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.open: set[tuple] = set()

    def fail(self, what: str) -> ValueError:
        return ValueError(f"not the start of a JSON document: {what} at {self.pos}")

    def space(self) -> bool:
        """Skip whitespace; True if text is left."""
        while self.pos < len(self.text) and self.text[self.pos] in _SPACE:
            self.pos += 1
        return self.pos < len(self.text)

    def value(self, path: tuple) -> Any:
        if not self.space():
            return CUT
        c = self.text[self.pos]
        if c == "{":
            return self.object(path)
        if c == "[":
            return self.array(path)
        if c == '"':
            return self.string()
        return self.scalar()

    def string(self) -> Any:
        found = _STRING.match(self.text, self.pos, partial=True)
        if found is None:
            raise self.fail("a bad string")
        self.pos = found.end()
        return CUT if found.partial else json.loads(found.group())

    def scalar(self) -> Any:
        rest = self.text[self.pos : self.pos + 6]
        for word, value in _LITERALS.items():
            if rest.startswith(word):
                self.pos += len(word)
                return value
            if word.startswith(rest) and self.pos + len(rest) == len(self.text):
                self.pos = len(self.text)
                return CUT
        found = _NUMBER.match(self.text, self.pos, partial=True)
        if found is None:
            raise self.fail(f"{rest!r}")
        self.pos = found.end()
        if found.end() == len(self.text):  # the number may go on
            return CUT
        return json.loads(found.group())

    def members(self, path: tuple, close: str, container: Any, member: Any) -> Any:
        """Read members with `member(i)` until `close`; an open container stops at the end."""
        self.pos += 1
        if not self.space():
            self.open.add(path)
            return container
        if self.text[self.pos] == close:
            self.pos += 1
            return container
        i = 0
        while True:
            if not member(i):
                self.open.add(path)
                return container
            if not self.space():
                self.open.add(path)
                return container
            c = self.text[self.pos]
            self.pos += 1
            if c == close:
                return container
            if c != ",":
                raise self.fail(f"{c!r} after a member")
            i += 1

    def object(self, path: tuple) -> dict:
        result: dict[str, Any] = {}

        def member(_: int) -> bool:
            if not self.space():
                return False
            if self.text[self.pos] != '"':
                raise self.fail("a key that is not a string")
            key = self.string()
            if key is CUT or not self.space():
                return False
            if self.text[self.pos] != ":":
                raise self.fail("a key without ':'")
            self.pos += 1
            value = self.value((*path, key))
            if value is CUT:
                return False
            result[key] = value
            return (*path, key) not in self.open

        return self.members(path, "}", result, member)

    def array(self, path: tuple) -> list:
        result: list[Any] = []

        def member(i: int) -> bool:
            value = self.value((*path, i))
            if value is CUT:
                return False
            result.append(value)
            return (*path, i) not in self.open

        return self.members(path, "]", result, member)


def read_partial(text: str) -> tuple[Any, frozenset[tuple]]:
    """The finished part of the document `text` starts, and the paths of its open containers.

    Returns:
        `(value, open_paths)`; `value` is `CUT` if no value has started or
        the only one is unfinished (a string, number or literal cut short).

    Raises:
        ValueError: if `text` is not the start of any JSON document.
    """
    reader = _Reader(text)
    value = reader.value(())
    if reader.space():
        raise reader.fail("text after the document")
    return value, frozenset(reader.open)


def fixable(error: Any, open_paths: frozenset[tuple]) -> bool:
    """Whether a `jsonschema` error on `read_partial`'s value may vanish as the document goes on.

    Only an error on an open container can, and only for keywords that more
    members may satisfy; `anyOf` / `oneOf` when one of their branches has
    only such errors.
    """
    if tuple(error.absolute_path) not in open_paths:
        return False
    if error.validator in ("anyOf", "oneOf"):
        if not error.context:  # oneOf: several branches fit so far; more text may tell them apart
            return True
        branches: dict[Any, list] = {}
        for sub in error.context:
            branches.setdefault(sub.relative_schema_path[0], []).append(sub)
        return any(all(fixable(e, open_paths) for e in errs) for errs in branches.values())
    return error.validator in _GROWING
