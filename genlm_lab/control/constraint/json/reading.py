"""Reading what the user gave: a schema from text, its draft's validator, and places in the text.

`JsonSchema` takes a schema as a dict or as JSON text; errors in either name
where they are (`line_column`: a JSON path's line and column in the text), and
documents are parsed refusing repeated keys (`unique_keys`), as the schema's
validator cannot see them once parsed into a dict.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import unquote

from genlm_lab.control.constraint.errors import InvalidGrammar, InvalidSchema

__all__ = [
    "InvalidSchema",
    "RepeatedKey",
    "key_positions",
    "line_column",
    "load_schema",
    "resolve_pointer",
    "unique_keys",
    "validator_for",
]


def resolve_pointer(root: Any, ref: str) -> Any:
    """The subschema a local `$ref` names ("#", "#/a/b~1c"), or None if the schema has none.

    The pointer is read as RFC 6901 in a URI fragment: percent-escapes first,
    then `~1` for `/` and `~0` for `~`. A remote document or an anchor ("#x")
    is not local: None.
    """
    if ref == "#":
        return root
    if not ref.startswith("#/"):
        return None
    node = root
    for part in ref[2:].split("/"):
        part = unquote(part).replace("~1", "/").replace("~0", "~")
        if isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            return None
    return node


class RepeatedKey(Exception):
    """A JSON document that writes a key twice in one object (its first argument: the key)."""


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """`json.loads`'s `object_pairs_hook` that raises `RepeatedKey` on a key written twice."""
    out = dict(pairs)
    if len(out) < len(pairs):
        seen = set()
        for key, _ in pairs:
            if key in seen:
                raise RepeatedKey(key)
            seen.add(key)
    return out


def key_positions(text: str) -> dict[tuple, int]:
    """The offset in `text` (valid JSON) of each value's key (or, in arrays, of the value),
    by path: `{("properties", "price", "type"): 57, ...}`."""
    decoder = json.JSONDecoder()
    out: dict[tuple, int] = {}
    blank = re.compile(r"[ \t\n\r]*")

    def value(i: int, path: tuple) -> int:
        i = blank.match(text, i).end()
        out.setdefault(path, i)
        if text[i] == "{":
            i = blank.match(text, i + 1).end()
            while text[i] != "}":
                start = i
                key, i = json.decoder.scanstring(text, i + 1)
                out[(*path, key)] = start
                i = blank.match(text, i).end() + 1  # the colon
                i = blank.match(text, value(i, (*path, key))).end()
                if text[i] == ",":
                    i = blank.match(text, i + 1).end()
            return i + 1
        if text[i] == "[":
            i, k = blank.match(text, i + 1).end(), 0
            while text[i] != "]":
                i = blank.match(text, value(i, (*path, k))).end()
                k += 1
                if text[i] == ",":
                    i = blank.match(text, i + 1).end()
            return i + 1
        _, end = decoder.raw_decode(text, i)
        return end

    try:
        value(0, ())
    except (ValueError, IndexError):
        pass
    return out


def line_column(text: str, path: Sequence[Any]) -> str:
    """ " (line L, column C)" of the deepest part of `path` found in `text` ("" if none)."""
    found = key_positions(text)
    for cut in range(len(path), -1, -1):
        at = found.get(tuple(path[:cut]))
        if at is not None:
            line = text.count("\n", 0, at) + 1
            column = at - text.rfind("\n", 0, at)
            return f" (line {line}, column {column})"
    return ""


def load_schema(schema: dict | str) -> dict:
    """The schema as a dict (or bool), parsed from text if given as text.

    Raises:
        InvalidGrammar: for text that is not JSON (naming line and column) or not an object.
    """
    if isinstance(schema, str):
        try:
            schema = json.loads(schema)
        except json.JSONDecodeError as error:
            raise InvalidGrammar(
                f"invalid JSON schema at line {error.lineno}, column {error.colno}: {error.msg}"
            ) from None
    if not isinstance(schema, (dict, bool)):
        raise InvalidGrammar(f"a JSON schema is an object, got {type(schema).__name__}")
    return schema


def validator_for(schema: Any, text: str | None = None):
    """jsonschema's validator for the schema's draft, with its format checker.

    Raises:
        InvalidSchema: naming the JSON path of the first keyword the metaschema rejects
            (and its line and column when the schema was given as text).
    """
    import jsonschema

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    error = jsonschema.exceptions.best_match(cls(cls.META_SCHEMA).iter_errors(schema))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(the root)"
        at = "" if text is None else line_column(text, list(error.absolute_path))
        raise InvalidSchema(f"invalid JSON schema at {where}{at}: {error.message}")
    return cls(schema, format_checker=cls.FORMAT_CHECKER)
