"""`JsonSchema`: JSON documents valid under a schema, as a constraint over bytes."""

from __future__ import annotations

import json
from typing import Any

import llguidance

from genlm_lab.control._guidance import InvalidGrammar, check_grammar
from genlm_lab.control.grammar_base import GrammarPotential

__all__ = ["JsonSchema"]

_WHITESPACE = "[\\x20\\x0A\\x0D\\x09]"


def _load(schema: dict | str) -> dict:
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


def _check_against_metaschema(schema: Any) -> None:
    """InvalidGrammar naming the JSON path of the first keyword the metaschema rejects."""
    import jsonschema

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    error = jsonschema.exceptions.best_match(cls(cls.META_SCHEMA).iter_errors(schema))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(the root)"
        raise InvalidGrammar(f"invalid JSON schema at {where}: {error.message}")


class JsonSchema(GrammarPotential):
    """JSON text valid under `schema`, as a constraint over bytes.

    Args:
        schema: the JSON schema (a dict, or its JSON text).
        max_whitespace: the longest run of whitespace allowed between JSON
            tokens (None: unbounded, as the spec allows; 0: compact JSON).
            A cap stops a model from padding forever, a known failure mode.

    Raises:
        InvalidGrammar (a ValueError): for invalid JSON, a schema the JSON-Schema
            metaschema rejects (naming the path), or a feature llguidance lacks.
    """

    def __init__(self, schema: dict | str, max_whitespace: int | None = 8) -> None:
        self.schema = _load(schema)
        _check_against_metaschema(self.schema)
        if max_whitespace is None:
            options: dict[str, Any] = {"whitespace_flexible": True}
        else:
            if isinstance(max_whitespace, bool) or not isinstance(max_whitespace, int):
                raise ValueError(
                    f"max_whitespace must be an int >= 0 or None, got {max_whitespace!r}"
                )
            if max_whitespace < 0:
                raise ValueError(f"max_whitespace must be >= 0, got {max_whitespace}")
            options = (
                {"whitespace_flexible": False}
                if max_whitespace == 0
                else {
                    "whitespace_flexible": True,
                    "whitespace_pattern": f"{_WHITESPACE}{{0,{max_whitespace}}}",
                }
            )
        self.max_whitespace = max_whitespace
        text = json.dumps(self.schema)
        try:
            grammar = llguidance.LLMatcher.grammar_from_json_schema(self.schema, overrides=options)
        except ValueError as error:
            raise InvalidGrammar(f"invalid JSON schema: {error}") from None
        check_grammar(grammar, "JSON schema", text)
        super().__init__(grammar, text, "JSON schema")

    def validate(self, text: str | bytes) -> bool:
        """Whether `text` parses as JSON and `jsonschema` finds it valid (the reference check)."""
        import jsonschema

        try:
            value = json.loads(text)
        except (json.JSONDecodeError, UnicodeDecodeError):
            return False
        return jsonschema.validators.validator_for(self.schema)(self.schema).is_valid(value)
