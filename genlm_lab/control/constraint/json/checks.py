"""What the metaschema lets through and no mask can read: refused when a `JsonSchema` is built.

jsonschema's metaschema checks each keyword's shape, not its meaning: a `$ref`
to a place the schema does not have, a `pattern` no regex dialect compiles,
and a schema nested too deep for the compilers' recursion all pass it. Each
is one `InvalidGrammar` naming where it is, instead of a mask that admits
what the schema does not, or a `RecursionError`.
"""

from __future__ import annotations

from typing import Any

import regex

from genlm_lab.control.constraint.errors import InvalidGrammar
from genlm_lab.control.constraint.json.reading import line_column, resolve_pointer

__all__ = ["MAX_DEPTH", "check_schema"]

#: Most subschemas nested in one another: arrays of arrays ran out of Python's recursion
#: (in jsonschema's own metaschema check, then in compiling) at about 100 levels.
MAX_DEPTH = 64

#: Keywords whose values are data, not subschemas: a `$ref` or `pattern` inside is text.
_DATA = frozenset({"enum", "const", "default", "examples", "example"})
#: Keywords whose values map names to subschemas: a name may be any word, "enum" or "$ref".
_NAMED = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"}
)


def _where(path: list[Any], text: str | None) -> str:
    at = "" if text is None else line_column(text, path)
    return ("/".join(str(p) for p in path) or "(the root)") + at


def _walk(schema: Any):
    """(path, value, parent key, depth) of every value, data keywords left out.

    `depth` counts the subschemas (objects that are not a map of names) from the root down.
    """
    stack: list[tuple[list[Any], Any, Any, int]] = [([], schema, None, 0)]
    while stack:
        path, value, key, depth = stack.pop()
        if isinstance(value, dict) and key not in _NAMED:
            depth += 1
        yield path, value, key, depth
        if isinstance(value, dict):
            for k, v in value.items():
                if k not in _DATA or key in _NAMED:
                    stack.append(([*path, k], v, k, depth))
        elif isinstance(value, list):
            stack.extend(([*path, i], v, key, depth) for i, v in enumerate(value))


def _compiles(pattern: str) -> str | None:
    """None if the pattern compiles (the `regex` module reads ECMA-262's syntax), else why not."""
    try:
        regex.compile(pattern)
    except (regex.error, ValueError, OverflowError, RecursionError) as error:
        return str(error)
    return None


def check_schema(schema: Any, text: str | None = None) -> None:
    """Refuse a schema with a local `$ref` to nowhere, a pattern that does not compile, or too deep.

    Run it before anything recursive reads the schema (jsonschema's metaschema check is).

    Args:
        schema: the parsed schema (it passed the metaschema).
        text: the schema as the user wrote it, to name lines and columns.

    Raises:
        InvalidGrammar: naming the JSON path (and line and column) of the first problem.
    """
    refs: list[tuple[list[Any], str]] = []
    nested_ids = False  # a subschema opening a resource of its own ($id; `id` before draft 6)
    for path, value, key, depth in _walk(schema):
        if depth > MAX_DEPTH:
            shown = path if len(path) <= 6 else [*path[:2], "...", *path[-3:]]
            raise InvalidGrammar(
                f"the JSON schema nests subschemas more than {MAX_DEPTH} deep (at "
                f"{'/'.join(map(str, shown))}): too deep to compile"
            )
        if not isinstance(value, dict) or key in _NAMED:
            continue
        if path and isinstance(value.get("$id", value.get("id")), str):
            nested_ids = True
        ref = value.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/"):
            refs.append((path, ref))
        pattern = value.get("pattern")
        if isinstance(pattern, str) and (why := _compiles(pattern)) is not None:
            raise InvalidGrammar(
                f"pattern {pattern!r} at {_where([*path, 'pattern'], text)} is not a regular "
                f"expression: {why}"
            )
        for name in value.get("patternProperties") or {}:
            if isinstance(name, str) and (why := _compiles(name)) is not None:
                raise InvalidGrammar(
                    f"patternProperties key {name!r} at "
                    f"{_where([*path, 'patternProperties', name], text)} is not a regular "
                    f"expression: {why}"
                )
    # "#/..." pointers resolve against the root, unless a subschema opened a resource of its
    # own: they resolve against that one then, so none is checked.
    if nested_ids:
        return
    for path, ref in refs:
        if resolve_pointer(schema, ref) is None:
            raise InvalidGrammar(
                f"$ref {ref!r} at {_where([*path, '$ref'], text)} resolves to nothing in the schema"
            )
