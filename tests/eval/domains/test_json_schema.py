"""The JSON domain with the SchemaStore panel: every panel schema ships with its licence, its
example is valid (jsonschema) and accepted by the domain's constraint, and the shipped panel is
what the benchmarks' builder selects."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jsonschema
import pytest

from genlm_lab.eval import load_domain
from genlm_lab.eval.domains.json_schema import load_schemas
from genlm_lab.eval.domains.json_schema_panel import load_panel, reachable_definitions

ROOT = Path(__file__).resolve().parents[3]
PANEL_DIR = ROOT / "genlm_lab" / "eval" / "data" / "schemas" / "panel"


@pytest.fixture(scope="module")
def panel():
    return load_panel()


def _validator(schema: dict):
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def _resolve(schema: dict, ref: str):
    """The node a local `$ref` points at (a JSON pointer walked by hand), or KeyError."""
    node = schema
    for part in ref[2:].split("/") if ref != "#" else []:
        part = part.replace("~1", "/").replace("~0", "~")
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


def _refs(node) -> list[str]:
    if isinstance(node, dict):
        return [v for k, v in node.items() if k == "$ref"] + [
            r for k, v in node.items() if k != "$ref" for r in _refs(v)
        ]
    return [r for v in node for r in _refs(v)] if isinstance(node, list) else []


def test_the_panel_ships_57_schemas_from_18_files_with_their_licences(panel):
    assert len(panel) == 57
    assert len({e.id for e in panel}) == 57
    assert len({e.source for e in panel}) == 18
    for entry in panel:
        assert entry.id.startswith(entry.source + ":")
        assert (PANEL_DIR / entry.licence_file).is_file(), entry.licence_file
        assert entry.licence
    licences = {e.source: e.licence for e in panel}
    assert licences["azure-pipelines"] == "MIT (Microsoft)"
    assert licences["snapcraft"].startswith("GPL-3.0")
    assert licences["mergify"] == "Apache-2.0 (SchemaStore)"
    notice = (ROOT / "genlm_lab" / "eval" / "data" / "NOTICE.md").read_text("utf-8")
    assert "schemas/panel/" in notice


def test_every_example_is_valid_and_every_ref_resolves(panel):
    refs = 0
    for entry in panel:
        errors = list(_validator(entry.schema).iter_errors(entry.example))
        assert not errors, (entry.id, errors[0].message)
        for ref in _refs(entry.schema):
            _resolve(entry.schema, ref)  # KeyError if pruning lost a definition
            refs += 1
    assert refs > 500


async def test_the_domains_constraint_and_checker_accept_each_panel_example(panel):
    domain = load_domain("json_schema")
    examples = {e.id: json.dumps(e.example, separators=(",", ":")) for e in panel}
    accepted = 0
    for instance in domain.dataset:
        if instance.instance_id not in examples:
            continue
        doc = examples[instance.instance_id]
        assert domain.evaluator.evaluate_sample(instance, doc).score == 1, instance.instance_id
        constraint = domain.constraint(instance)
        assert await constraint.complete(list(doc.encode())) == 0.0, instance.instance_id
        accepted += 1
    # Every panel schema but the discussion-forms one, already in as "github-discussion".
    assert accepted == 56
    assert len(domain) == 66


def test_the_default_schemas_put_the_panel_after_ours_and_drop_its_duplicate(panel):
    with_panel, without = load_schemas(), load_schemas(panel=False)
    assert list(with_panel)[: len(without)] == list(without) and len(without) == 10
    added = [n for n in with_panel if n not in without]
    assert added == [e.id for e in panel if e.id != "github-discussion:(root)"]
    duplicate = next(e for e in panel if e.id == "github-discussion:(root)")
    assert duplicate.schema == without["github-discussion"][0]
    assert len(load_domain("json_schema", panel=False)) == 10


def test_prompts_keep_definition_names_that_look_like_prose():
    schema = {
        "type": "object",
        "title": "drop me",
        "properties": {"title": {"$ref": "#/definitions/description"}},
        "definitions": {"description": {"type": "string", "description": "drop me too"}},
    }
    domain = load_domain("json_schema", schemas={"s": schema})
    prompt = domain.prompt(next(iter(domain.dataset)))
    assert '"definitions":{"description":{"type":"string"}}' in prompt
    assert '"properties":{"title":{"$ref":"#/definitions/description"}}' in prompt
    assert "drop me" not in prompt


def test_reachable_definitions_keeps_what_refs_reach_and_nothing_else():
    schema = {
        "$schema": "https://json-schema.org/draft-07/schema#",
        "properties": {"a": {"$ref": "#/definitions/a"}, "self": {"$ref": "#"}},
        "definitions": {
            "a": {"items": {"$ref": "#/definitions/b~1c"}},
            "b/c": {"$ref": "#/definitions/a"},  # a cycle
            "unused": {"$ref": "#/definitions/also_unused"},
            "also_unused": {},
        },
    }
    pruned = reachable_definitions(schema)
    assert list(pruned) == ["$schema", "properties", "definitions"]
    assert set(pruned["definitions"]) == {"a", "b/c"}
    assert reachable_definitions({"type": "string"}) == {"type": "string"}
    none_used = {"type": "object", "$defs": {"x": {}}}
    assert reachable_definitions(none_used) == {"type": "object"}
    with pytest.raises(ValueError, match="not a JSON pointer"):
        reachable_definitions({"$ref": "https://example.org/s.json"})
    with pytest.raises(ValueError, match="names no definition"):
        reachable_definitions({"$ref": "#/definitions/x", "definitions": {}})


@pytest.fixture(scope="module")
def bench():
    pytest.importorskip("check_jsonschema", reason="pip install check-jsonschema")
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_json_gen

    return bench_json_gen


def test_each_shipped_schema_is_its_builders_candidate_with_its_shortest_document(panel, bench):
    """Without compiling (the slow part of the builder): each entry's schema and example are
    what the builder makes of that candidate; the licence texts are check-jsonschema's."""
    vendor = bench._vendor()
    candidates = {}
    for source in {e.source for e in panel}:
        schema = json.loads((vendor / f"{source}.json").read_text())
        candidates.update({i: s for i, s, _ in bench._candidates(source, schema)})
    for entry in panel:
        standalone = candidates[entry.id]
        assert entry.schema == reachable_definitions(standalone), entry.id
        assert entry.example == bench.minimal(standalone, standalone), entry.id
        assert _validator(standalone).is_valid(entry.example), entry.id
        text = (PANEL_DIR / entry.licence_file).read_bytes()
        assert text == (vendor / "licenses" / entry.licence_file).read_bytes()
    assert len(panel) == 57


@pytest.mark.slow
def test_the_shipped_panel_is_exactly_what_the_builder_selects(bench):
    sys.path.insert(0, str(ROOT / "scripts"))
    import build_schema_panel

    files = build_schema_panel.panel_files()
    shipped = {p.name: json.loads(p.read_text("utf-8")) for p in PANEL_DIR.glob("*.json")}
    assert shipped == files
    assert sum(len(f["schemas"]) for f in files.values()) == 57
