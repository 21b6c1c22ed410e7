"""JSON schemas: write a JSON document that a schema accepts.

The panel holds small schemas written for this package, two real ones from
SchemaStore (GitHub discussion forms and the issue-template chooser,
Apache-2.0) as vendored by check-jsonschema, with the license in
`data/schemas/`, and then the benchmarks' 57-schema SchemaStore panel
(`eval.domains.json_schema_panel`, licences in `data/schemas/panel/`; one of
its schemas is the discussion-forms one again, shown once): 66 in all. The
prompt shows a schema without its prose (description, title, $comment,
examples), which only lengthens it. The constraint is
`genlm_lab.control.JsonSchema` (llguidance; sound, may over-approximate);
the checker is `jsonschema` with format checking, which has the last word.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from genlm_lab.control import JsonSchema
from genlm_lab.eval.core import Dataset, EvaluationResult, Evaluator, Instance
from genlm_lab.eval.domain import Domain
from genlm_lab.eval.domains.json_schema_panel import load_panel
from genlm_lab.util.jsonschema_import import import_jsonschema

jsonschema = import_jsonschema()

__all__ = [
    "JsonSchemaDataset",
    "JsonSchemaDomain",
    "JsonSchemaEvaluator",
    "JsonSchemaInstance",
    "load_schemas",
]

_OWN: dict[str, dict] = {
    "person": {
        "type": "object",
        "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
        "required": ["name", "age"],
        "additionalProperties": False,
    },
    "point": {
        "type": "object",
        "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
        "required": ["x", "y"],
        "additionalProperties": False,
    },
    "colour": {"type": "string", "enum": ["red", "green", "blue"]},
    "tags": {
        "type": "array",
        "items": {"type": "string", "pattern": "^[a-z]+$"},
        "minItems": 1,
        "maxItems": 3,
    },
    "book": {
        "type": "object",
        "properties": {
            "title": {"type": "string", "minLength": 1},
            "year": {"type": "integer", "minimum": 1450, "maximum": 2030},
            "authors": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        },
        "required": ["title", "year", "authors"],
        "additionalProperties": False,
    },
    "flag": {
        "type": "object",
        "properties": {
            "enabled": {"type": "boolean"},
            "rollout": {"type": "number", "minimum": 0, "maximum": 1},
        },
        "required": ["enabled"],
        "additionalProperties": False,
    },
    "date_event": {
        "type": "object",
        "properties": {"event": {"type": "string"}, "day": {"type": "string", "format": "date"}},
        "required": ["event", "day"],
        "additionalProperties": False,
    },
    "rgb": {
        "type": "array",
        "items": {"type": "integer", "minimum": 0, "maximum": 255},
        "minItems": 3,
        "maxItems": 3,
    },
}

_VENDORED = ("github-discussion", "github-issue-config")
_PROSE = {"description", "title", "$comment", "examples", "$id", "$schema"}
#: Keys whose values map names (of properties, definitions) to schemas: a name is never prose.
_NAMED = {"properties", "patternProperties", "definitions", "$defs", "dependentSchemas"}


class JsonSchemaInstance(Instance):
    """One schema to satisfy."""

    instance_id: str
    json_schema: dict
    source: str = "genlm_lab"

    def __repr__(self) -> str:
        return f"schema {self.instance_id} ({self.source})"


def load_schemas(panel: bool = True, ours: bool = True) -> dict[str, tuple[dict, str]]:
    """name -> (schema, source): ours first (`ours=True`), then the two vendored ones, then
    the SchemaStore panel (`panel=True`; a panel schema equal to one already in is left out)."""
    out = {name: (schema, "genlm_lab") for name, schema in _OWN.items()} if ours else {}
    base = resources.files("genlm_lab.eval").joinpath("data/schemas")
    for name in _VENDORED:
        schema = json.loads(base.joinpath(f"{name}.json").read_text("utf-8"))
        out[name] = (schema, "SchemaStore")
    if panel:
        seen = [schema for schema, _ in out.values()]
        for entry in load_panel():
            if entry.schema not in seen:
                out[entry.id] = (entry.schema, "SchemaStore")
    return out


class JsonSchemaDataset(Dataset[JsonSchemaInstance]):
    """Schemas as instances.

    Args:
        schemas: name -> schema; default: the shipped schemas.
        panel: with the default schemas, whether to add the SchemaStore panel.
        ours: with the default schemas, whether to include the small ones written here
            (False: real-world schemas only, as JSONSchemaBench's are).
    """

    def __init__(
        self, schemas: dict[str, dict] | None = None, panel: bool = True, ours: bool = True
    ) -> None:
        if schemas is None:
            self.items = [(n, s, src) for n, (s, src) in load_schemas(panel, ours).items()]
        else:
            self.items = [(n, s, "user") for n, s in schemas.items()]

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self):
        for name, schema, source in self.items:
            yield JsonSchemaInstance(instance_id=name, json_schema=schema, source=source)

    @property
    def schema(self) -> type[JsonSchemaInstance]:
        return JsonSchemaInstance


class JsonSchemaEvaluator(Evaluator[JsonSchemaInstance]):
    """Score 1 iff the response parses as JSON and the schema accepts it (formats checked)."""

    def evaluate_sample(self, instance: JsonSchemaInstance, response: Any) -> EvaluationResult:
        try:
            document = json.loads(response) if isinstance(response, str) else response
        except json.JSONDecodeError as exc:
            return EvaluationResult(score=0, desc="not JSON", metadata={"error": str(exc)})
        cls = jsonschema.validators.validator_for(instance.json_schema)
        validator = cls(instance.json_schema, format_checker=cls.FORMAT_CHECKER)
        error = jsonschema.exceptions.best_match(validator.iter_errors(document))
        if error is None:
            return EvaluationResult(score=1, desc="valid")
        return EvaluationResult(score=0, desc="invalid", metadata={"error": error.message})


def _without_prose(value: Any) -> Any:
    """The schema without the keys meant for people (descriptions, titles, examples)."""
    if isinstance(value, dict):
        return {
            k: (
                {p: _without_prose(s) for p, s in v.items()}
                if k in _NAMED and isinstance(v, dict)
                else _without_prose(v)
            )
            for k, v in value.items()
            if k not in _PROSE
        }
    if isinstance(value, list):
        return [_without_prose(v) for v in value]
    return value


class JsonSchemaDomain(Domain):
    """JSON documents for schemas; answers end at a newline (compact JSON on one line).

    Args:
        schemas: name -> schema; default: the shipped schemas (66).
        panel: with the default schemas, whether to add the SchemaStore panel
            (False: the 10 schemas shipped before it).
        ours: whether to include the 8 small schemas written here (False: the 58
            SchemaStore ones only, real-world schemas as the AWRS paper's JSON task has).
    """

    name = "json_schema"
    eos = (b"\n",)

    def __init__(
        self, schemas: dict[str, dict] | None = None, panel: bool = True, ours: bool = True
    ) -> None:
        super().__init__(JsonSchemaDataset(schemas, panel, ours), JsonSchemaEvaluator())

    def prompt(self, instance: JsonSchemaInstance) -> str:
        example = json.dumps(_OWN["point"], separators=(",", ":"))
        return (
            "Write one JSON document, on one line, that the JSON schema accepts.\n"
            f'Schema: {example}\nJSON: {{"x": 1.5, "y": -2}}\n'
            f"Schema: {json.dumps(_without_prose(instance.json_schema), separators=(',', ':'))}\nJSON: "
        )

    def constraint(self, instance: JsonSchemaInstance) -> JsonSchema:
        # No whitespace runs (and so no newline) inside the document: the newline ends it.
        return JsonSchema(instance.json_schema, max_whitespace=1)
