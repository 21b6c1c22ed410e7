"""`JsonSchema`: JSON documents valid under a schema, as a constraint over bytes.

Two checks work together. The mask (llguidance, compiled from the schema as
`json.relax.relax` rewrites it, plus the object-key rules of `json.keys`:
required keys before `}`, no key twice) enforces as much of the schema as it
can; with `key_order="any"` and whitespace allowed it never blocks a byte that
some valid document could continue with. The completion check (`jsonschema`
with its format checker, on the parsed document) is exact whatever the
options. `coverage` lists which constraint is enforced where. A schema that
admits no document is refused when it is built (`json.empty`).
"""

from __future__ import annotations

import json
import re
import warnings
from typing import Any

import llguidance

from genlm_lab.control.constraint.budget import BudgetHooks, Closing
from genlm_lab.control.constraint.errors import FinishWarning, InvalidGrammar
from genlm_lab.control.constraint.json.budget import JSON_CLOSING
from genlm_lab.control.constraint.json.checks import check_schema
from genlm_lab.control.constraint.json.empty import why_empty
from genlm_lab.control.constraint.json.engine import KeyedEngine
from genlm_lab.control.constraint.json.finish import finish, formats
from genlm_lab.control.constraint.json.keys import KeyRules
from genlm_lab.control.constraint.json.reading import (
    RepeatedKey,
    line_column,
    load_schema,
    unique_keys,
    validator_for,
)
from genlm_lab.control.constraint.json.relax import relax
from genlm_lab.control.constraint.llg.engine import check_grammar
from genlm_lab.control.constraint.llg.grammar import GrammarPotential
from genlm_lab.util.stack import outside_stacklevel

#: Stuck finishes explained in a row without a new message before `finish` stops naming them.
_EXPLAINS = 64

__all__ = ["FinishWarning", "JsonSchema"]

_BLANK = "[\\x20\\x09]"


def _whitespace(max_whitespace: int | None, max_indent: int, line_breaks: int) -> dict[str, Any]:
    """llguidance's whitespace options: blank runs bounded on a line, indentation after a break."""
    if max_whitespace is None:
        return {"whitespace_flexible": True}
    for name, value in (("max_whitespace", max_whitespace), ("line_breaks", line_breaks)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be an int >= 0, got {value!r}")
    if max_whitespace == 0:
        return {"whitespace_flexible": False}
    pattern = f"{_BLANK}{{0,{max_whitespace}}}"
    if line_breaks:
        pattern += f"(\\r?\\n{_BLANK}{{0,{max_indent}}}){{0,{line_breaks}}}"
    return {"whitespace_flexible": True, "whitespace_pattern": pattern}


def _compile(schema: Any, options: dict[str, Any]) -> tuple[str, str | None]:
    """llguidance's grammar for the relaxed schema; `(grammar, fallback reason or None)`.

    If llguidance still refuses it, the mask falls back to any JSON value
    (sound: the completion check is exact whatever the mask).
    """
    for candidate, reason in ((schema, None), ({}, "llguidance refused the schema")):
        try:
            grammar = llguidance.LLMatcher.grammar_from_json_schema(
                candidate, overrides={**options, "lenient": True}
            )
            check_grammar(grammar, "JSON schema", json.dumps(candidate)[:200])
        except (ValueError, TypeError) as error:
            if reason is not None:
                raise
            last = str(error).splitlines()[0][:200]
            continue
        return grammar, None if reason is None else f"{reason}: {last}"
    raise AssertionError("unreachable")


def _refuse_empty(why: str | None, source: str | None) -> None:
    """Raise `InvalidGrammar` saying where the schema admits no document (if `why` says so)."""
    if why is None:
        return
    at = ""
    if source is not None:
        where, _, reason = why.rpartition(": ") if ": " in why else ("", "", why)
        parts = [int(p) if p.isdigit() else p for p in where.split("/") if p]
        keyword = re.match(r"[$\w]+", reason)  # "minimum 5 > maximum 3": at `minimum`
        at = line_column(source, parts + ([keyword.group(0)] if keyword else []))
    raise InvalidGrammar(f"the JSON schema admits no document{at}: {why}")


class JsonSchema(GrammarPotential, BudgetHooks):
    """JSON text valid under `schema`, as a constraint over bytes.

    Every schema `jsonschema` accepts works: the mask enforces what llguidance
    can, and while the document is written an object closes only once its
    required keys are present and no key appears twice; the rest is checked
    when the document ends (`coverage` says which is which), so `complete`
    and the EOS weight are exactly `jsonschema`'s verdict with its format
    checker (a document repeating a key in one object is refused too).

    The defaults are for generation (docs/json-schemas.md has the
    measurements): object keys in the schema's order, as outlines, xgrammar
    and llguidance generate, and whitespace on one line only (`{"a": 1, "b":
    2}`, no pretty-printing); after the top-level value only EOS may follow.
    Objects that list properties take no others unless `additionalProperties`
    says so, and integers have no fraction (`strict`, xgrammar's default). A
    small model otherwise pretty-prints, wanders into other keys or endless
    decimals and is cut at `max_tokens`. To accept every valid document byte
    by byte (checking documents rather than writing them), pass
    `key_order="any", line_breaks=2, strict=False` (`max_whitespace=None`:
    any whitespace at all).

    Args:
        schema: the JSON schema (a dict, or its JSON text).
        max_whitespace: the longest run of blanks (spaces, tabs) on one line between
            JSON tokens (16). None: any whitespace, as the spec allows; 0: compact
            JSON only. A cap stops a model from padding forever, a known failure mode.
        max_indent: the most blanks after a line break (indentation).
        key_order: "schema" (the default): an object's properties in the schema's
            order, then any other keys it allows; "any": keys in any order.
        line_breaks: the most line breaks in one whitespace run, each followed by up
            to `max_indent` blanks: 0 (the default) keeps documents on one line, 2
            lets pretty-printed documents of any nesting depth pass.
        strict: as xgrammar's strict mode (its default) generates: an object that
            lists `properties` takes no other keys unless `additionalProperties`
            says so, and integers are written without fraction or exponent.

    Formats jsonschema checks go into the mask where it reads them exactly or
    more loosely (`date`, `time`, `date-time`, `email`, `idn-email` as patterns
    of exactly the checker's strings; `ipv4`, `uuid` as llguidance's formats);
    `coverage` says which. `finish` writes values of those formats.

    Raises:
        InvalidGrammar (a ValueError): for invalid JSON, a schema the JSON-Schema
            metaschema rejects (naming the path and, for JSON text, the line and
            column of the keyword), a local `$ref` to nowhere, a `pattern` that
            is not a regex, a schema nested past `json.checks.MAX_DEPTH`, or a
            schema that admits no document
            ("properties/a: minLength 1 > maxLength 0"; see `json.empty`, and
            llguidance's "Unsatisfiable schema" verdict).
    """

    def __init__(
        self,
        schema: dict | str,
        max_whitespace: int | None = 16,
        max_indent: int = 1024,
        key_order: str = "schema",
        line_breaks: int = 0,
        strict: bool = True,
    ) -> None:
        if key_order not in ("any", "schema"):
            raise ValueError(f"key_order must be 'any' or 'schema', got {key_order!r}")
        source = schema if isinstance(schema, str) else None
        self.schema = load_schema(schema)
        check_schema(self.schema, source)  # first: the metaschema check recurses too
        self._validator = validator_for(self.schema, source)
        _refuse_empty(why_empty(self.schema, self._validator), source)
        options = _whitespace(max_whitespace, max_indent, line_breaks)
        self.max_whitespace = max_whitespace
        self.key_order = key_order
        self.strict = strict
        draft3 = type(self._validator).__name__ == "Draft3Validator"  # its own `time`
        formats = frozenset() if draft3 else frozenset(self._validator.FORMAT_CHECKER.checkers)
        ordered = key_order == "schema"
        self.relaxed, rows = relax(self.schema, ordered=ordered, strict=strict, formats=formats)
        grammar, fallback = _compile(self.relaxed, options)
        if fallback is not None and "Unsatisfiable" in fallback:
            # llguidance finds the relaxed schema empty: the schema is, unless `strict` or the
            # key order made it so; then the mask reads the schema without them.
            self.relaxed, rows = relax(self.schema, formats=formats)
            grammar, fallback = _compile(self.relaxed, options)
            if fallback is not None and "Unsatisfiable" in fallback:
                _refuse_empty(fallback.split("Unsatisfiable schema: ")[-1][:160], source)
            rows.append({"path": "/", "keyword": "strict, key_order", "where": "completion",
                         "note": "with them no document fits the mask: read without"})  # fmt: skip
        if fallback is not None:
            rows.append({"path": "/", "keyword": "(all)", "where": "completion", "note": fallback})
        self._coverage = rows
        self.exact_mask = all(r["where"] in ("mask", "annotation") for r in rows)
        text = json.dumps(self.schema)
        super().__init__(grammar, text, "JSON schema", final=self._final_check)
        self.key_rules = KeyRules(self.schema)
        self.engine = KeyedEngine(self.engine, self.key_rules, self._final_check)
        self._unfinishable: set[str] = set()
        self._explains_left = _EXPLAINS  # stuck finishes to explain before the next new message
        if not self.engine.mask(b"").any():
            _refuse_empty("no byte can start a document the mask allows", source)

    def _coerce_tokens(self, vocab, eos, special=None):
        """The schema over a vocabulary of byte strings: llguidance's mask and the key rules."""
        coerced = super()._coerce_tokens(vocab, eos, special)
        if coerced is not None:
            coerced.engine = KeyedEngine(coerced.engine, self.key_rules, self._final_check)
        return coerced

    @property
    def coverage(self) -> list[dict[str, str]]:
        """One row per constraint: its JSON path, keyword, where it is enforced
        ("mask" while generating, "completion" on the finished document) and why."""
        return [dict(r) for r in self._coverage]

    def _final_check(self, text: bytes) -> bool:
        return self.explain(text) is None

    def explain(self, text: str | bytes) -> str | None:
        """Why `text` is not a valid document, with its JSON path; None if it is valid.

        - a schema violation: "at $.city, keyword maxLength: 'Pitcairn Islands'
          is too long" (jsonschema's best error: its path and keyword);
        - a document that stops early: "unfinished: inside a string at
          $.name" (or "inside the object at $", "after the key $.rank", ...);
        - other broken JSON: "not JSON (inside the array at $.items, at item 2):
          Expecting ',' delimiter ...";
        - a repeated key: "the key 'city' appears twice in one object".
        """

        def path(parts: Any) -> str:
            out = "$"
            for part in parts:
                if isinstance(part, int):
                    out += f"[{part}]"
                elif isinstance(part, str) and part.isidentifier():
                    out += f".{part}"
                else:
                    out += f"[{json.dumps(part)}]"
            return out

        def where(prefix: str) -> str:
            # The prefix's open containers: [kind, key or index, expecting a key].
            stack: list[list[Any]] = []
            start = None  # where the open string starts
            escaped = False
            for i, char in enumerate(prefix):
                if start is not None:
                    if escaped:
                        escaped = False
                    elif char == "\\":
                        escaped = True
                    elif char == '"':
                        if stack and stack[-1][0] == "object" and stack[-1][2]:
                            try:
                                stack[-1][1] = json.loads(prefix[start : i + 1])
                            except json.JSONDecodeError:
                                stack[-1][1] = prefix[start + 1 : i]
                        start = None
                elif char == '"':
                    start = i
                elif char == "{":
                    stack.append(["object", None, True])
                elif char == "[":
                    stack.append(["array", 0, False])
                elif char in "]}" and stack:
                    stack.pop()
                elif char == ":" and stack:
                    stack[-1][2] = False
                elif char == "," and stack:
                    if stack[-1][0] == "array":
                        stack[-1][1] += 1
                    else:
                        stack[-1][1:] = [None, True]
            keys = [frame[1] for frame in stack if frame[1] is not None]
            if start is not None:
                if stack and stack[-1][0] == "object" and stack[-1][2]:
                    return f"inside a key of the object at {path(keys)}"
                return f"inside a string at {path(keys)}"
            if not stack:
                return "before the value at $" if not prefix.strip() else "inside a value at $"
            kind, _, expecting_key = stack[-1]
            if kind == "object" and expecting_key:
                return f"inside the object at {path(keys)}"
            if kind == "object":
                return f"after the key {path(keys)}"
            return f"inside the array at {path(keys[:-1])}, at item {keys[-1]}"

        if isinstance(text, bytes):
            try:
                text = text.decode("utf-8")
            except UnicodeDecodeError as error:
                if error.reason == "unexpected end of data":  # cut inside a character
                    return f"unfinished: {where(text[: error.start].decode('utf-8'))}"
                return f"not JSON: invalid UTF-8 at byte {error.start}"
        try:
            value = json.loads(text, object_pairs_hook=unique_keys)
        except json.JSONDecodeError as error:
            if error.pos >= len(text.rstrip()) or error.msg.startswith("Unterminated string"):
                return f"unfinished: {where(text)}"
            return f"not JSON ({where(text[: error.pos])}): {error}"
        except RepeatedKey as error:
            return f"the key {error.args[0]!r} appears twice in one object"
        try:
            import jsonschema

            error = jsonschema.exceptions.best_match(self._validator.iter_errors(value))
        except Exception as error:  # noqa: BLE001 - e.g. a $ref nobody can resolve offline
            return f"jsonschema could not check it: {type(error).__name__}: {error}"
        if error is None:
            return None
        return f"at {path(error.absolute_path)}, keyword {error.validator}: {error.message}"

    def finish(self, prefix: str | bytes, limit: int = 1024) -> bytes | None:
        """A short completion that makes `prefix` a valid document (None if none is found).

        Found greedily along the mask (close what is open, add missing required
        keys with the smallest values, write the rest of a `date`, `time`,
        `date-time`, `uuid`, `ipv4` or e-mail value): short, not always the
        shortest. Where a live prefix cannot be finished, a `FinishWarning` names
        the JSON path and keyword, once per schema ("$.date: format 'date'
        cannot be finished by the mask"), so a budget never switches off silently.
        Naming them takes a `jsonschema` check, so after 64 stuck finishes in a
        row that named nothing new, no more are named.
        """
        if isinstance(prefix, str):
            prefix = prefix.encode("utf-8")
        stuck: list = []
        found = finish(self.engine, prefix, limit, stuck)
        if found is None and stuck and self._explains_left > 0 and self.engine.alive(prefix):
            self._warn_unfinishable(*stuck[0])
        return found

    def closing(self) -> Closing:
        """How a JSON document closes, for token budgets (`json.budget`)."""
        return JSON_CLOSING

    def finish_still_completes(self, text: bytes, finish: bytes) -> bool:
        """Whether `finish` (closing the string `text` is inside) completes `text`."""
        state = self.engine.key_state(text)
        if state is None or not self.engine.rules.in_string(state):
            return False
        matcher = self.engine.inner.state(text + finish)  # the grammar alone: no final check
        return matcher is not None and matcher.is_accepting()

    @property
    def unfinishable(self) -> list[str]:
        """What `finish` could not complete so far, one line per JSON path and keyword
        ("$.date: format 'date' cannot be finished by the mask"), for alarms and views."""
        return sorted(self._unfinishable)

    def _warn_unfinishable(self, text: bytes, state: Any) -> None:
        where = self.explain(text) or ""
        at = re.search(r"at (\$\S*)", where)
        path = at.group(1).rstrip(",") if at else "$"
        names = formats(state) if state is not None else []
        checked = re.search(r"keyword (\w+)", where)
        if checked and not where.startswith("unfinished"):
            keyword = checked.group(1)
        elif names:
            keyword = f"format {names[0]!r}"
        elif state is not None and any("pattern" in d for conj in state[2] for d in conj):
            keyword = "pattern"
        else:
            keyword = "its schema"
        message = f"{path}: {keyword} cannot be finished by the mask"
        self._explains_left -= 1
        if message not in self._unfinishable:
            self._explains_left = _EXPLAINS
            self._unfinishable.add(message)
            warnings.warn(
                f"{message} (JsonSchema.finish found no completion: a budget cannot "
                "tell whether such a prefix ends in time)",
                FinishWarning,
                stacklevel=outside_stacklevel(),
            )

    def validate(self, text: str | bytes) -> bool:
        """Whether `text` parses as JSON and `jsonschema` finds it valid (the reference check)."""
        return self.explain(text) is None
