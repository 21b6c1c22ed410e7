"""The SchemaStore panel: 57 real-world JSON schemas (CI and configuration files), shipped as data.

The benchmarks' panel (`benchmarks/bench_json_gen.py`, `build_panel`) takes
the SchemaStore schemas that check-jsonschema 0.39.0 vendors, and from each
file its root and its definitions that are objects with `properties` and
`required` keys (at most five a file, at most 2500 characters each), keeping
those that `JsonSchema` compiles without falling back and whose shortest
document (required keys only, smallest values) it accepts. Those 57 ship in
`data/schemas/panel/`, one JSON file per source file, so that the eval
domain needs no test dependency at run time. Each entry holds its schema
with only the definitions it reaches through `$ref` (the rest of a file's
definitions cannot change what it accepts: Azure Pipelines' holds 600 kB of
them) and its shortest document as `example`. Each file names its licence,
and the licence texts sit beside it (`LICENSE.<name>`; see
`data/NOTICE.md`): Apache-2.0 for SchemaStore's own schemas, MIT, CC-BY-4.0
or GPL-3.0 for those their projects publish. The tests check that the
shipped panel is what the builder selects. Rewrite it with
`python scripts/build_schema_panel.py`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from typing import Any

__all__ = ["PanelSchema", "load_panel", "reachable_definitions"]

_CONTAINERS = ("$defs", "definitions")


@dataclass(frozen=True)
class PanelSchema:
    """One schema of the panel.

    Attributes:
        id: "<source file>:<definition>" ("(root)" for a file's root schema).
        source: the vendored file it comes from (e.g. "azure-pipelines").
        licence: the licence of that file, in words (e.g. "MIT (Microsoft)").
        licence_file: the licence text's file name in `data/schemas/panel/`.
        schema: the schema, with the definitions it reaches.
        example: its shortest document (valid under the schema).
    """

    id: str
    source: str
    licence: str
    licence_file: str
    schema: dict
    example: Any


def load_panel() -> list[PanelSchema]:
    """The 57 panel schemas, in the builder's order (by source file, then definition)."""
    folder = resources.files("genlm_lab.eval").joinpath("data/schemas/panel")
    files = sorted((f for f in folder.iterdir() if f.name.endswith(".json")), key=lambda f: f.name)
    out = []
    for file in files:
        data = json.loads(file.read_text("utf-8"))
        for entry in data["schemas"]:
            out.append(
                PanelSchema(
                    id=entry["id"],
                    source=data["source"],
                    licence=data["licence"],
                    licence_file=data["licence_file"],
                    schema=entry["schema"],
                    example=entry["example"],
                )
            )
    return out


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        own = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return own + [r for k, v in node.items() if k != "$ref" for r in _refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []


def reachable_definitions(schema: dict) -> dict:
    """`schema` with only the top-level definitions that its `$ref`s reach, transitively.

    Raises:
        ValueError: for a `$ref` that is not "#" or a JSON pointer into the
            schema ("#/..."), or one to a definition the schema does not have.
    """
    container = next((c for c in _CONTAINERS if c in schema), None)
    defs = schema.get(container, {}) if container else {}
    body = {k: v for k, v in schema.items() if k != container}
    kept: dict[str, None] = {}
    todo = [body]
    while todo:
        for ref in _refs(todo.pop()):
            if ref == "#":
                continue  # the schema itself
            if not ref.startswith("#/"):
                raise ValueError(f"$ref {ref!r} is not a JSON pointer into the schema")
            parts = ref[2:].split("/")
            if parts[0] != container:
                continue  # a pointer into the rest of the schema, which is kept whole
            if len(parts) < 2:
                raise ValueError(f"$ref {ref!r} points at all the {container}, not one")
            name = parts[1].replace("~1", "/").replace("~0", "~")
            if name not in defs:
                raise ValueError(f"$ref {ref!r} names no definition")
            if name not in kept:
                kept[name] = None
                todo.append(defs[name])
    if container is None:
        return dict(schema)
    pruned = {k: v for k, v in defs.items() if k in kept}
    out = {}
    for key, value in schema.items():  # the original key order
        if key != container:
            out[key] = value
        elif pruned:
            out[key] = pruned
    return out
