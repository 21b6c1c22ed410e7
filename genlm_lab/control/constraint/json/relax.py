"""A JSON schema rewritten so that llguidance's mask over-approximates it (never blocks a valid document).

llguidance compiles most of JSON Schema into a fast token mask, but some of
what it compiles departs from the specification, and some keywords it lacks:

- object properties must come in the schema's order (JSON objects are unordered);
- strings: llguidance's JSON lexer takes no `\\u` escape of a character that
  needs none (`"\\u00e9"` is refused where `"é"` is accepted), whatever the
  schema; documents must write non-ASCII text as UTF-8 (`ensure_ascii=False`),
  as models do. This is the one departure the rewrite cannot undo. Its `\\d`
  is ASCII where Python's `re` (which `jsonschema` uses) also reads other
  scripts' digits;
- `integer` refuses `1.0`, and `enum` / `const` compare texts, not values;
- `oneOf`, `not`, `uniqueItems`, `if`, `dependentRequired`, ... are missing,
  and some of its formats are stricter than `jsonschema`'s format checker
  (`email`, `ipv6`, `hostname`, `duration`): dates, times and e-mail
  addresses go into the mask as patterns of exactly the checker's strings
  (`PATTERN_FORMATS`), `ipv4` and `uuid` as llguidance's formats.

`relax` rewrites a schema into one whose language contains the original's
(object keys in any order, the rest widened or dropped), and records where
each constraint is enforced: "mask" (while generating) or "completion" (by
`jsonschema` on the finished document, which `JsonSchema.complete` runs).
`required` and unique keys, which llguidance cannot say in any key order,
are enforced in the mask by `json.keys` on top of llguidance's mask.
"""

from __future__ import annotations

import copy
from typing import Any

import llguidance

from genlm_lab.control.constraint.json.reading import resolve_pointer

__all__ = ["relax"]

_ANNOTATIONS = {
    "title", "description", "default", "examples", "$comment", "readOnly", "writeOnly",
    "deprecated", "contentMediaType", "$schema", "$vocabulary", "$dynamicAnchor", "example",
}  # fmt: skip
_COMPLETION_ONLY = {
    "not": "no negation in the mask",
    "if": "conditionals are checked at completion",
    "then": "conditionals are checked at completion",
    "else": "conditionals are checked at completion",
    "uniqueItems": "uniqueness is checked at completion",
    "contains": "checked at completion",
    "minContains": "checked at completion",
    "maxContains": "checked at completion",
    "dependentRequired": "checked at completion",
    "dependentSchemas": "checked at completion",
    "dependencies": "checked at completion",
    "propertyNames": "checked at completion",
    "unevaluatedProperties": "checked at completion",
    "unevaluatedItems": "checked at completion",
    "format": "formats are checked by jsonschema's format checker at completion",
    "contentEncoding": "checked at completion",
    "contentSchema": "checked at completion",
    "$dynamicRef": "checked at completion",
    "$recursiveRef": "checked at completion",
}
_KEEP = {
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
    "minItems", "maxItems", "minProperties", "maxProperties", "$ref", "$id", "$anchor",
    "minLength", "maxLength",
    "id",
}  # fmt: skip
_META = set(r"\.+*?()|[]{}^$#&-~")
# Formats read in the mask, each as a pattern whose language is exactly the strings
# jsonschema's format checker accepts (dates: days per month and leap years, no year 0;
# times: RFC 3339 without leap seconds, as rfc3339-validator; e-mail: an "@" somewhere),
# or as llguidance's own format where that contains the checker's language (ipv4; uuid
# in its canonical 8-4-4-4-12 spelling, see `MASK_FORMATS`). Measured: llguidance's
# email, ipv6, hostname and duration refuse strings the checker takes ("a@",
# "::ffff:1.2.3.4", "a.", "P1.5D"): those stay at completion.
_YEAR = "(?:[0-9]{3}[1-9]|[0-9]{2}[1-9][0-9]|[0-9][1-9][0-9]{2}|[1-9][0-9]{3})"
_LEAP = "(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:0[48]|[2468][048]|[13579][26])00)"
_MONTH_DAY = (
    "(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)"
    "|02-(?:0[1-9]|1[0-9]|2[0-8]))"
)
_DATE = f"(?:{_YEAR}-{_MONTH_DAY}|{_LEAP}-02-29)"
_TIME = (
    "(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\\.[0-9]+)?"
    "(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])"
)
PATTERN_FORMATS = {  # anchored: a JSON-Schema pattern matches anywhere in the string
    "date": f"^{_DATE}$",
    "time": f"^{_TIME}$",
    "date-time": f"^{_DATE}[Tt]{_TIME}$",
    "email": "@",
    "idn-email": "@",
}
# llguidance's own: ipv4 exactly the checker's; uuid only the canonical spelling (Python's
# UUID also reads braces, "urn:uuid:", underscores and extra dashes, which the mask refuses).
MASK_FORMATS = frozenset({"ipv4", "uuid"})


def _rust_literal(text: str) -> str:
    """`text` as a regex that matches it exactly (Rust syntax: only metacharacters escaped)."""
    return "".join("\\" + c if c in _META else c for c in text)


def _rust_regex_ok(pattern: str) -> bool:
    try:
        grammar = llguidance.LLMatcher.grammar_from_regex(pattern)
    except (ValueError, TypeError):
        return False
    message = llguidance.LLMatcher.validate_grammar(grammar)
    return not message or message.startswith("WARNING")


class Relaxer:
    """One pass over a schema: the relaxed copy and the coverage rows."""

    def __init__(
        self, ordered: bool = False, strict: bool = False, formats: frozenset[str] = frozenset()
    ) -> None:
        self.rows: list[dict[str, str]] = []
        self.ordered = ordered
        self.strict = strict
        self.formats = formats

    def note(self, path: str, keyword: str, where: str, why: str = "") -> None:
        self.rows.append({"path": path or "/", "keyword": keyword, "where": where, "note": why})

    # ------------------------------------------------------------ values
    def values(self, values: list[Any], path: str, keyword: str) -> dict[str, Any]:
        """`enum`/`const` values as a schema the mask reads by value, not by text."""
        exact, widened = [], []
        for v in values:
            if isinstance(v, bool) or v is None:
                exact.append(v)
            elif isinstance(v, (int, float)):
                widened.append({"type": "number", "minimum": v, "maximum": v})
            elif isinstance(v, str):
                exact.append(v)
            else:
                widened.append({"type": "object" if isinstance(v, dict) else "array"})
        if widened:
            self.note(path, keyword, "completion", "numbers, objects and arrays are widened "
                      "in the mask (1 and 1.0 are the same value; keys in any order)")  # fmt: skip
        else:
            self.note(path, keyword, "mask")
        branches = ([{"enum": exact}] if exact else []) + widened
        return branches[0] if len(branches) == 1 else {"anyOf": branches or [False]}

    # ------------------------------------------------------------ schemas
    def schema(self, node: Any, path: str = "") -> Any:
        if isinstance(node, bool):
            return node
        if not isinstance(node, dict):
            return True
        out: dict[str, Any] = {}
        extra: list[Any] = []
        for key, value in node.items():
            where = f"{path}/{key}"
            if key in _ANNOTATIONS or key.startswith("x-"):
                continue
            if key in ("$defs", "definitions") and isinstance(value, dict):
                out[key] = {k: self.schema(v, f"{where}/{k}") for k, v in value.items()}
            elif key == "type":
                types = [value] if isinstance(value, str) else list(value)
                if "integer" in types and self.strict:
                    self.note(path, "type", "mask", "strict: integers without fraction or "
                              "exponent (1.0 and 1e2 are refused though jsonschema takes them)")  # fmt: skip
                elif "integer" in types:
                    self.note(path, "type: integer", "completion", "the mask allows any number "
                              "(1.0 is an integer)")  # fmt: skip
                    types = ["number" if t == "integer" else t for t in types]
                    types = list(dict.fromkeys(types))
                else:
                    self.note(path, "type", "mask")
                out["type"] = types[0] if len(types) == 1 else types
            elif key in ("enum", "const"):
                extra.append(self.values(value if key == "enum" else [value], path, key))
            elif key in ("anyOf", "allOf", "oneOf"):
                branches = [self.schema(v, f"{where}/{i}") for i, v in enumerate(value)]
                if key == "oneOf":
                    self.note(path, "oneOf", "completion", "read as anyOf in the mask")
                else:
                    self.note(path, key, "mask")
                if key == "allOf":
                    extra.extend(branches)
                else:
                    extra.append({"anyOf": branches})
            elif key == "pattern":
                if _rust_regex_ok(value):
                    out["pattern"] = value
                    self.note(path, "pattern", "mask")
                else:
                    self.note(path, "pattern", "completion", "llguidance cannot read it "
                              "(lookarounds, backreferences)")  # fmt: skip
            elif key in ("items", "additionalItems", "prefixItems"):
                self.items(node, key, value, out, where)
            elif key in ("properties", "patternProperties", "additionalProperties"):
                continue  # read together below
            elif key in _KEEP:
                out[key] = value
                self.note(path, key, "mask")
            elif key == "required":
                branch = "/anyOf/" in where or "/oneOf/" in where
                self.note(path, "required", "mask", "keys in any order; an object closes only "
                          "once its required keys are present" + (" (under anyOf/oneOf: those "
                          "of some branch; the rest at completion)" if branch else ""))  # fmt: skip
            elif key == "format" and value in self.formats and value in MASK_FORMATS:
                out["format"] = value
                self.note(path, "format", "mask", f"llguidance's {value!r}" + (" (canonical "
                          "spelling only)" if value == "uuid" else ""))  # fmt: skip
            elif key == "format" and value in self.formats and value in PATTERN_FORMATS:
                # its own `pattern` keyword where the node has none: llguidance decides
                # the liveness of one regex exactly, of an intersection of two not always
                if "pattern" in node and _rust_regex_ok(node["pattern"]):
                    extra.append({"pattern": PATTERN_FORMATS[value]})
                else:
                    out["pattern"] = PATTERN_FORMATS[value]
                self.note(path, "format", "mask", f"{value!r}: exactly the checker's strings")
            elif key == "format" and value not in self.formats:
                self.note(path, "format", "annotation", f"{value!r} is not checked by this draft's "
                          "format checker: an annotation")  # fmt: skip
            elif key in _COMPLETION_ONLY:
                self.note(path, key, "completion", _COMPLETION_ONLY[key])
        if isinstance(node.get("exclusiveMaximum"), bool) or isinstance(
            node.get("exclusiveMinimum"), bool
        ):
            self.draft4_bounds(node, out)
        if any(k in node for k in ("properties", "patternProperties", "additionalProperties")):
            self.objects(node, out, path)
        if extra:
            out["allOf"] = extra
        return out

    @staticmethod
    def draft4_bounds(node: dict, out: dict) -> None:
        """Draft-4 boolean exclusive bounds as the numeric ones llguidance reads."""
        for bound, flag in (("maximum", "exclusiveMaximum"), ("minimum", "exclusiveMinimum")):
            if node.get(flag) is True and bound in node:
                out.pop(bound, None)
                out[flag] = node[bound]
            elif isinstance(node.get(flag), bool):
                out.pop(flag, None)

    def items(self, node: dict, key: str, value: Any, out: dict, where: str) -> None:
        if key == "prefixItems":
            out["prefixItems"] = [self.schema(v, f"{where}/{i}") for i, v in enumerate(value)]
        elif key == "items" and isinstance(value, list):  # draft 4-7 tuples
            out["prefixItems"] = [self.schema(v, f"{where}/{i}") for i, v in enumerate(value)]
            if "additionalItems" in node:
                out["items"] = self.schema(node["additionalItems"], where + "/additionalItems")
        elif key == "items":
            out["items"] = self.schema(value, where)
        # a lone additionalItems (items not a list) has no effect

    def objects(self, node: dict, out: dict, path: str) -> None:
        """Properties as exact-name key patterns: keys in any order, each with its value schema."""
        properties = node.get("properties") or {}
        patterns = node.get("patternProperties") or {}
        closed = self.strict and properties and not patterns  # xgrammar's strict mode
        additional = node.get("additionalProperties", not closed)
        if closed and "additionalProperties" not in node:
            self.note(path, "additionalProperties", "mask", "strict: no keys but the listed "
                      "properties (jsonschema takes others)")  # fmt: skip
        if len(properties) <= 1 and additional is False and not patterns:
            out["properties"] = {
                k: self.schema(v, f"{path}/properties/{k}") for k, v in properties.items()
            }
            out["additionalProperties"] = False
            if "required" in node:
                out["required"] = [k for k in node["required"] if k in properties]
                self.rows = [r for r in self.rows if not (r["path"] == (path or "/")
                             and r["keyword"] == "required")]  # fmt: skip
                self.note(path, "required", "mask")
            self.note(path, "properties", "mask")
            return
        by_key: dict[str, Any] = {}
        loose: list[Any] = []
        ordered: dict[str, Any] = {}
        for name, schema in properties.items():
            relaxed = self.schema(schema, f"{path}/properties/{name}")
            if self.ordered:
                ordered[name] = relaxed
            elif not patterns:
                by_key["^" + _rust_literal(name) + "$"] = relaxed
            else:
                loose.append(relaxed)
        for pattern, schema in patterns.items():
            loose.append(self.schema(schema, f"{path}/patternProperties/{pattern}"))
        if patterns:
            self.note(path, "patternProperties", "completion", "key patterns are checked at "
                      "completion; the mask allows their value schemas under any key")  # fmt: skip
        rest = self.schema(additional, f"{path}/additionalProperties")
        if loose:
            rest = {"anyOf": [rest, *loose]} if rest is not False else {"anyOf": loose}
        if by_key:
            out["patternProperties"] = by_key
        if ordered:
            out["properties"] = ordered
            required = node.get("required")
            if isinstance(required, list):
                out["required"] = [k for k in required if k in ordered]
        out["additionalProperties"] = rest
        order = "in the schema's order, then other keys" if self.ordered else "in any order"
        self.note(path, "properties", "mask", "keys " + order)


def _hoist_deep_refs(schema: Any) -> Any:
    """A copy in which each `$ref` into the inside of a subschema ("#/definitions/a/properties/b")
    points to a copy of its target under the definitions instead.

    The rewrite moves properties, items and branches, so such pointers would no
    longer resolve in the relaxed schema; pointers to whole definitions
    ("#/definitions/a") and to the root still do and are left alone.
    """
    if not isinstance(schema, dict):
        return schema
    root = copy.deepcopy(schema)
    container = "definitions" if "definitions" in root else "$defs"
    hoisted: dict[str, str] = {}
    pending = [root]
    while pending:
        node = pending.pop()
        if isinstance(node, list):
            pending.extend(node)
            continue
        if not isinstance(node, dict):
            continue
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/") and ref.count("/") > 2:
            if ref not in hoisted:
                target = resolve_pointer(schema, ref)
                if target is not None:
                    name = f"_relax_ref_{len(hoisted)}"
                    root.setdefault(container, {})[name] = copy.deepcopy(target)
                    hoisted[ref] = f"#/{container}/{name}"
                    pending.append(root[container][name])
            node["$ref"] = hoisted.get(ref, ref)
        pending.extend(v for k, v in node.items() if k not in ("enum", "const"))
    return root


def relax(
    schema: Any, ordered: bool = False, strict: bool = False, formats: frozenset[str] = frozenset()
) -> tuple[Any, list[dict[str, str]]]:
    """`(relaxed schema, coverage rows)`; see the module docstring.

    Args:
        schema: the JSON schema.
        ordered: object properties in the schema's order (then other keys), as
            llguidance, outlines and xgrammar generate; the language no longer
            contains documents with their keys in another order.
        strict: as xgrammar's strict mode generates: an object that lists properties
            takes no other keys unless `additionalProperties` says so, and integers
            are written without fraction or exponent.
        formats: the formats the schema's format checker tests; those of `MASK_FORMATS`
            and `PATTERN_FORMATS` go into the mask, the others are checked at completion.
    """
    relaxer = Relaxer(ordered, strict, formats)
    relaxer.note("", "(unique keys)", "mask", "no key twice in one object")
    out = relaxer.schema(_hoist_deep_refs(schema))
    return out, relaxer.rows
