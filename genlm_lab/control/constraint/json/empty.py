"""Whether a JSON schema admits no document at all, and where it contradicts itself.

`why_empty(schema, validator)` reads the schema once, node by node, keeping
for each node the JSON types some value of the node may have (null, boolean,
object, array, integer, non-integer number, string). A keyword removes the
types it rules out: `type`, `enum`/`const` (values that fail the rest of the
node), bounds that cross (`minLength 1 > maxLength 0`, `minimum 5 > maximum
3`, no integer between the bounds), a required property whose schema is
empty or that `additionalProperties: false` forbids, `allOf` branches that
share no type, `anyOf`/`oneOf` whose branches are all empty, `not: {}`. A
node with no type left is empty; the message names its path and the keyword.

It is a sound check, not a decision procedure: it reports a schema empty only
when it is (patterns, `multipleOf`, formats and bounds spread over `allOf`
branches are not intersected); llguidance's "Unsatisfiable schema" verdict,
read by `JsonSchema`, catches more.
"""

from __future__ import annotations

import math
import re
from typing import Any

from genlm_lab.control.constraint.json.reading import resolve_pointer

__all__ = ["why_empty"]

_ALL = frozenset({"null", "boolean", "object", "array", "integer", "fraction", "string"})
_TYPES = {
    "null": {"null"},
    "boolean": {"boolean"},
    "object": {"object"},
    "array": {"array"},
    "integer": {"integer"},
    "number": {"integer", "fraction"},
    "string": {"string"},
}
_NUMBERS = frozenset({"integer", "fraction"})


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        return "integer"
    if isinstance(value, float):
        return "fraction"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class _Reader:
    """One pass over a schema; `types(node, path)` is `(types left, why none are)`."""

    def __init__(self, root: Any, validator: Any) -> None:
        self.root = root
        self.validator = validator
        self._active: set[int] = set()  # nodes being read ($ref cycles count as non-empty)

    def resolve(self, ref: str) -> Any:
        """The subschema `ref` names; True (anything) where it names none we can read."""
        node = resolve_pointer(self.root, ref)
        return True if node is None else node

    def valid(self, value: Any, node: dict) -> bool:
        """Whether `value` satisfies `node` (jsonschema; True where it cannot tell)."""
        try:
            return self.validator.evolve(schema=node).is_valid(value)
        except Exception:  # noqa: BLE001 - an unresolvable $ref: cannot tell, assume valid
            return True

    def types(self, node: Any, path: str) -> tuple[frozenset[str], str]:
        if node is True or not isinstance(node, (dict, bool)):
            return _ALL, ""
        if node is False:
            return frozenset(), f"{path.lstrip('/') or '(the root)'}: the schema false"
        if id(node) in self._active:
            return _ALL, ""
        self._active.add(id(node))
        try:
            return self._types(node, path)
        finally:
            self._active.discard(id(node))

    def _types(self, node: dict, path: str) -> tuple[frozenset[str], str]:
        here = path.lstrip("/") or "(the root)"
        left = _ALL
        if "type" in node:
            named = [node["type"]] if isinstance(node["type"], str) else node["type"]
            if isinstance(named, list):
                left = frozenset(t for n in named if isinstance(n, str) for t in _TYPES.get(n, ()))
                if not left:
                    return left, f"{here}: type {node['type']!r} names no type"
        ref = node.get("$ref")
        if isinstance(ref, str):
            found, why = self.types(self.resolve(ref), f"{path}/$ref")
            if not found:
                return found, why
            left &= found
            if not left:
                return left, f"{here}: $ref {ref!r} allows no type that `type` allows"
        for i, branch in enumerate(node.get("allOf") or []):
            found, why = self.types(branch, f"{path}/allOf/{i}")
            if not found:
                return found, why
            if not left & found:
                return frozenset(), f"{here}: the allOf branches share no type"
            left &= found
        for key in ("anyOf", "oneOf"):
            branches = node.get(key)
            if isinstance(branches, list):
                union: frozenset[str] = frozenset()
                reasons = []
                for i, branch in enumerate(branches):
                    found, why = self.types(branch, f"{path}/{key}/{i}")
                    union |= found
                    reasons.append(why)
                if not union:
                    return union, f"{here}: every {key} branch is empty" + (
                        f" ({'; '.join(r for r in reasons if r)})" if any(reasons) else ""
                    )
                if not left & union:
                    return frozenset(), f"{here}: no {key} branch allows a type that `type` allows"
                left &= union
        if node.get("not") is True or node.get("not") == {}:
            return frozenset(), f"{here}: not {{}} (it refuses every value)"
        for key in ("enum", "const"):
            if key not in node:
                continue
            values = node[key] if key == "enum" else [node[key]]
            if not isinstance(values, list):
                continue
            rest = {k: v for k, v in node.items() if k not in ("enum", "const")}
            kept = [v for v in values if _kind(v) in left and self.valid(v, rest)]
            if not kept:
                what = "enum has no value" if key == "enum" else f"const {values[0]!r} is no value"
                return frozenset(), f"{here}: {what} that the rest of the schema allows"
            return frozenset(_kind(v) for v in kept), ""
        reasons: list[str] = []
        for kinds, why in self._contradictions(node, path):
            if left & kinds:
                reasons.append(why)
                left -= kinds
        if not left:
            return left, reasons[-1] if reasons else f"{here}: no value fits"
        return left, ""

    def _contradictions(self, node: dict, path: str) -> list[tuple[frozenset[str], str]]:
        """`(types ruled out, why)` for each keyword pair of `node` that leaves a type no value."""
        here = path.lstrip("/") or "(the root)"
        out: list[tuple[frozenset[str], str]] = []
        lo, hi = node.get("minLength", 0), node.get("maxLength")
        if _number(lo) and _number(hi) and lo > hi:
            out.append((frozenset({"string"}), f"{here}: minLength {lo} > maxLength {hi}"))
        lo, hi = node.get("minItems", 0), node.get("maxItems")
        if _number(lo) and _number(hi) and lo > hi:
            out.append((frozenset({"array"}), f"{here}: minItems {lo} > maxItems {hi}"))
        out.extend(self._numbers(node, here))
        out.extend(self._arrays(node, path))
        out.extend(self._objects(node, path))
        return out

    @staticmethod
    def _numbers(node: dict, here: str) -> list[tuple[frozenset[str], str]]:
        lo, lo_open, lo_name = -math.inf, False, ""
        hi, hi_open, hi_name = math.inf, False, ""
        for name, value in (("minimum", node.get("minimum")), ("exclusiveMinimum",
                            node.get("exclusiveMinimum"))):  # fmt: skip
            if _number(value):
                opened = name == "exclusiveMinimum" or node.get("exclusiveMinimum") is True
                if value > lo or (value == lo and opened):
                    lo, lo_open, lo_name = value, opened, f"{name} {value}"
        for name, value in (("maximum", node.get("maximum")), ("exclusiveMaximum",
                            node.get("exclusiveMaximum"))):  # fmt: skip
            if _number(value):
                opened = name == "exclusiveMaximum" or node.get("exclusiveMaximum") is True
                if value < hi or (value == hi and opened):
                    hi, hi_open, hi_name = value, opened, f"{name} {value}"
        if lo > hi or (lo == hi and (lo_open or hi_open)):
            sign = ">=" if lo == hi else ">"
            return [(_NUMBERS, f"{here}: {lo_name} {sign} {hi_name}")]
        if math.isfinite(lo) and math.isfinite(hi):
            first = math.floor(lo) + 1 if lo_open else math.ceil(lo)
            last = math.ceil(hi) - 1 if hi_open else math.floor(hi)
            if first > last:
                return [(frozenset({"integer"}), f"{here}: no integer between {lo_name} and "
                         f"{hi_name}")]  # fmt: skip
        return []

    def _arrays(self, node: dict, path: str) -> list[tuple[frozenset[str], str]]:
        need = node.get("minItems", 0)
        if not _number(need) or need <= 0:
            return []
        prefix, items = node.get("prefixItems"), node.get("items", True)
        if isinstance(items, list):
            prefix, items = items, node.get("additionalItems", True)
        prefix = prefix if isinstance(prefix, list) else []
        for i, sub in enumerate(prefix[: int(need)]):
            found, why = self.types(sub, f"{path}/prefixItems/{i}")
            if not found:
                return [(frozenset({"array"}), why)]
        if need > len(prefix):
            found, why = self.types(items, f"{path}/items")
            if not found:
                return [(frozenset({"array"}), why)]
        return []

    def _objects(self, node: dict, path: str) -> list[tuple[frozenset[str], str]]:
        here = path.lstrip("/") or "(the root)"
        required = [r for r in node.get("required") or [] if isinstance(r, str)]
        required = list(dict.fromkeys(required))
        lo, hi = node.get("minProperties", 0), node.get("maxProperties")
        if _number(hi) and (len(required) > hi or (_number(lo) and lo > hi)):
            what = f"minProperties {lo}" if _number(lo) and lo > hi else f"{len(required)} required"
            return [(frozenset({"object"}), f"{here}: {what} > maxProperties {hi}")]
        properties = node.get("properties") or {}
        patterns = node.get("patternProperties") or {}
        for name in required:
            subs = [properties[name]] if name in properties else []
            for pattern, sub in patterns.items():
                try:
                    if re.search(pattern, name):
                        subs.append(sub)
                except re.error:
                    subs.append(True)
            if not subs:
                extra = node.get("additionalProperties", True)
                subs = [extra]
                if extra is False:
                    return [(frozenset({"object"}), f"{here}: '{name}' is required but "
                             "additionalProperties is false")]  # fmt: skip
            for sub in subs:
                where = f"{path}/properties/{name}" if sub is properties.get(name) else path
                found, why = self.types(sub, where)
                if not found:
                    return [(frozenset({"object"}), why)]
        return []


def why_empty(schema: Any, validator: Any) -> str | None:
    """Where and why `schema` admits no JSON value ("properties/a: minLength 1 > maxLength 0"),
    or None where the check finds a value possible.

    Args:
        schema: the JSON schema.
        validator: jsonschema's validator of the schema (to test `enum`/`const` values).
    """
    found, why = _Reader(schema, validator).types(schema, "")
    if found:
        return None
    return why.removeprefix("(the root): ") or "no value fits"
