"""`json_schema_parser`: a streaming parser for the documents of a JSON schema.

The parser enforces what can be checked while reading: each value's type,
`const` and `enum`, string `pattern`s, the keys an object may hold
(`properties`; others only where `additionalProperties` allows), required
keys before the `}`, no key twice, and `anyOf` as alternatives. Everything
else (bounds, formats, `$ref`, `oneOf`, ...) is left to a full validation
of the finished document. Where it cannot tell, it accepts: a type list,
or a numeric `enum`, reads any value of those types.

Unlike JSON Schema, an object schema that lists `properties` and says
nothing about `additionalProperties` accepts only the listed keys: when
generating, extra keys are almost never wanted.
"""

from __future__ import annotations

import json
from typing import Any

from genlm_lab.control.constraint.json.stream.parsers import (
    BOOL_PARSER,
    FLOAT_PARSER,
    INTEGER_PARSER,
    NULL_PARSER,
    STRING_LITERAL_PARSER,
    AltParser,
    ConstParser,
    FixedSetParser,
    Parser,
    StringLiteralMatchingPatternParser,
)
from genlm_lab.control.constraint.json.stream.text_input import Input, ParseError

__all__ = [
    "ARBITRARY_JSON",
    "ArraySchemaParser",
    "EnumParser",
    "ObjectSchemaParser",
    "json_schema_parser",
]


def EnumParser(values: list[Any]) -> Parser[Any]:  # noqa: N802 (genlm-control's name)
    """One of `values`, written as `json.dumps` writes it (with or without `\\u` escapes)."""
    spellings = {json.dumps(v, ensure_ascii=ascii) for v in values for ascii in (True, False)}
    if len(spellings) == 1:
        return ConstParser(values[0])
    return FixedSetParser(sorted(spellings)).map(json.loads)


def _schema_of(value: Any) -> Parser[Any] | None:
    """A parser for a subschema given as a schema (dict); None for True or absent."""
    return json_schema_parser(value) if isinstance(value, dict) else None


class ObjectSchemaParser(Parser[dict]):
    """A JSON object whose keys and values the schema allows (see the module docstring)."""

    def __init__(self, schema: dict) -> None:
        self.schema = schema
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties", not properties)
        self.empty_object = extra is False and not properties
        self.child_parsers = {k: json_schema_parser(v) for k, v in properties.items()}
        self.extra_parser = _schema_of(extra) if extra is not False else None
        self.allow_extra = extra is not False
        self.required_keys = frozenset(schema.get("required", ()))
        if self.allow_extra or self.empty_object:
            self.key_parser: Parser[str] = STRING_LITERAL_PARSER
        else:
            self.key_parser = EnumParser(list(properties))

    def __repr__(self) -> str:
        return f"ObjectSchemaParser({self.schema!r})"

    def _value_parser(self, key: str) -> Parser[Any]:
        child = self.child_parsers.get(key)
        return child or self.extra_parser or ARBITRARY_JSON

    async def parse(self, input: Input) -> dict:
        await input.skip_whitespace()
        await input.expect("{")
        result: dict[str, Any] = {}
        while True:
            await input.skip_whitespace()
            if await input.current_char() == "}":
                missing = self.required_keys - result.keys()
                if missing:
                    raise ParseError(f"the object closes without {sorted(missing)!r}")
                await input.read(1)
                return result
            if self.empty_object:
                raise ParseError("the schema allows only the empty object {}")
            if result:
                await input.expect(",")
                await input.skip_whitespace()
            key = await input.parse(self.key_parser)
            if key in result:
                raise ParseError(f"the key {key!r} is there twice")
            await input.skip_whitespace()
            await input.expect(":")
            await input.skip_whitespace()
            result[key] = await input.parse(self._value_parser(key))


class ArraySchemaParser(Parser[list]):
    """A JSON array whose items `items` allows (any items if it is absent or not a schema)."""

    def __init__(self, schema: dict) -> None:
        self.schema = schema
        self.items_parser = _schema_of(schema.get("items"))

    def __repr__(self) -> str:
        return f"ArraySchemaParser({self.schema!r})"

    async def parse(self, input: Input) -> list:
        await input.skip_whitespace()
        await input.expect("[")
        items = self.items_parser or ARBITRARY_JSON
        result: list[Any] = []
        while True:
            await input.skip_whitespace()
            if await input.current_char() == "]":
                await input.read(1)
                return result
            if result:
                await input.expect(",")
                await input.skip_whitespace()
            result.append(await input.parse(items))


#: Any JSON value.
ARBITRARY_JSON: Parser[Any] = AltParser(
    NULL_PARSER,
    BOOL_PARSER,
    FLOAT_PARSER,
    STRING_LITERAL_PARSER,
    ArraySchemaParser({}),
    ObjectSchemaParser({"additionalProperties": True}),
)

_OF_TYPE: dict[str, Parser[Any]] = {
    "null": NULL_PARSER,
    "boolean": BOOL_PARSER,
    "integer": INTEGER_PARSER,
    "number": FLOAT_PARSER,
    "string": STRING_LITERAL_PARSER,
}
_JSON_TYPE = {type(None): "null", bool: "boolean", int: "number", float: "number", str: "string"}


def _of_types(types: list[str]) -> Parser[Any]:
    """Any value of one of `types` (numbers read as numbers when both kinds are listed)."""
    if "number" in types:
        types = [t for t in types if t != "integer"]
    parsers = []
    for name in dict.fromkeys(types):
        if name in _OF_TYPE:
            parsers.append(_OF_TYPE[name])
        elif name == "object":
            parsers.append(ObjectSchemaParser({"additionalProperties": True}))
        elif name == "array":
            parsers.append(ArraySchemaParser({}))
        else:
            return ARBITRARY_JSON
    return AltParser(*parsers) if parsers else ARBITRARY_JSON


def json_schema_parser(schema: Any) -> Parser[Any]:
    """A streaming parser for (a superset of) the documents `schema` accepts.

    `True`, `{}` and schemas without a type read any JSON value.
    """
    if not isinstance(schema, dict):
        return ARBITRARY_JSON
    if "const" in schema:
        return ConstParser(schema["const"])
    if "enum" in schema:
        values = schema["enum"]
        kinds = {_JSON_TYPE.get(type(v), "any") for v in values}
        if "number" in kinds:  # 1 is a prefix of 10: read by type, the validator checks the value
            return _of_types(sorted(kinds))
        return EnumParser(values)
    if "anyOf" in schema:
        return AltParser(*(json_schema_parser(s) for s in schema["anyOf"]))
    kind = schema.get("type")
    if isinstance(kind, list):
        return _of_types(kind)
    if kind == "string":
        pattern = schema.get("pattern")
        return (
            STRING_LITERAL_PARSER
            if pattern is None
            else StringLiteralMatchingPatternParser(pattern)
        )
    if kind == "object":
        return ObjectSchemaParser(schema)
    if kind == "array":
        return ArraySchemaParser(schema)
    return _OF_TYPE.get(kind, ARBITRARY_JSON)
