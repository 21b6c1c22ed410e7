"""The schema panel: real-world JSON schemas (SchemaStore, as vendored by check-jsonschema) with documents.

`check-jsonschema` ships the SchemaStore schemas of CI systems and config
files with their licences (`check_jsonschema/builtin_schemas/vendor/`). The
panel takes those that are self-contained (every `$ref` resolves offline),
pairs each with a few valid documents written by hand, and derives invalid
ones by mutation. Every label comes from `jsonschema` with its format
checker; a hand-written document it rejects is a panel bug and raises.

Left out: drone-ci (a `$ref` to kubernetes-definitions.json on the web), and
the very large ones (renovate, azure-pipelines, ...) to keep tests fast.

Use it as

    from schema_panel import panel, panel_names
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest

_NAMES_AND_DOCS: dict[str, list[Any]] = {
    "github-issue-config": [
        {"blank_issues_enabled": False},
        {
            "blank_issues_enabled": True,
            "contact_links": [
                {"name": "Docs", "url": "https://example.org/docs", "about": "Read the docs first"}
            ],
        },
    ],
    "github-discussion": [
        {
            "title": "[Idea] ",
            "labels": ["idea"],
            "body": [
                {
                    "type": "textarea",
                    "id": "idea",
                    "attributes": {"label": "Your idea"},
                    "validations": {"required": True},
                }
            ],
        },
    ],
    "readthedocs": [
        {
            "version": 2,
            "build": {"os": "ubuntu-22.04", "tools": {"python": "3.11"}},
            "sphinx": {"configuration": "docs/conf.py"},
            "python": {"install": [{"requirements": "docs/requirements.txt"}]},
        },
        {
            "version": 2,
            "mkdocs": {"configuration": "mkdocs.yml"},
            "build": {"os": "ubuntu-22.04", "tools": {"python": "3.12"}},
            "formats": ["pdf"],
        },
    ],
    "codecov": [
        {
            "coverage": {
                "precision": 2,
                "round": "down",
                "range": "70...100",
                "status": {"project": {"default": {"target": "80%", "threshold": "1%"}}},
            },
            "comment": {"layout": "reach,diff,flags", "behavior": "default"},
        },
    ],
    "dependabot": [
        {
            "version": 2,
            "updates": [
                {"package-ecosystem": "pip", "directory": "/", "schedule": {"interval": "weekly"}}
            ],
        },
        {
            "version": 2,
            "updates": [
                {
                    "package-ecosystem": "npm",
                    "directory": "/web",
                    "schedule": {"interval": "daily"},
                    "allow": [{"dependency-name": "react"}],
                    "open-pull-requests-limit": 5,
                }
            ],
        },
    ],
    "github-actions": [
        {
            "name": "Greet",
            "description": "Says hello",
            "inputs": {"who": {"description": "whom", "required": True, "default": "World"}},
            "runs": {"using": "node20", "main": "dist/index.js"},
        },
        {
            "name": "Composite",
            "description": "Runs a script",
            "runs": {"using": "composite", "steps": [{"run": "echo hi", "shell": "bash"}]},
        },
    ],
    "cloudbuild": [
        {
            "steps": [
                {
                    "name": "gcr.io/cloud-builders/docker",
                    "args": ["build", "-t", "gcr.io/p/app", "."],
                }
            ],
            "images": ["gcr.io/p/app"],
            "timeout": "600s",
        },
    ],
    "taskfile": [
        {"version": "3", "tasks": {"build": {"cmds": ["go build ./..."], "desc": "Build"}}},
    ],
    "citation-file-format": [
        {
            "cff-version": "1.2.0",
            "message": "If you use this software, please cite it as below.",
            "title": "My Research Software",
            "authors": [{"family-names": "Lovelace", "given-names": "Ada"}],
            "version": "1.0.0",
            "date-released": "2021-08-11",
        },
    ],
    "github-workflows": [
        {
            "name": "CI",
            "on": {
                "push": {"branches": ["main"]},
                "workflow_dispatch": {
                    "inputs": {
                        "level": {
                            "description": "Log level",
                            "type": "choice",
                            "options": ["info", "debug"],
                        }
                    }
                },
            },
            "jobs": {
                "test": {
                    "runs-on": "ubuntu-latest",
                    "steps": [{"uses": "actions/checkout@v4"}, {"run": "make test"}],
                }
            },
        },
    ],
}
MAX_MUTANTS = 10  # per schema, so the test stays fast


@dataclass(frozen=True)
class Entry:
    """One schema of the panel and its documents, labelled by jsonschema."""

    name: str
    schema: dict
    valid: list[Any]
    invalid: list[Any]


def _vendor_dir() -> Path:
    vendor = pytest.importorskip(
        "check_jsonschema.builtin_schemas.vendor", reason="pip install check-jsonschema"
    )
    return Path(vendor.__file__).parent


def _validator(schema: dict):
    import jsonschema

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def _wrong_type(value: Any) -> Any:
    if isinstance(value, str):
        return 12345
    if isinstance(value, bool | int | float) or value is None:
        return "x"
    if isinstance(value, dict):
        return []
    return {"x": 1}


def mutants(doc: Any) -> list[Any]:
    """Documents derived from `doc`: each top-level key dropped or given a wrong type, an
    unknown key added, the whole document as an array."""
    out: list[Any] = [[], {**doc, "zz-unknown-key": True}] if isinstance(doc, dict) else [[]]
    for key in doc if isinstance(doc, dict) else []:
        out.append({k: v for k, v in doc.items() if k != key})
        out.append({**doc, key: _wrong_type(doc[key])})
    return out


def panel_names() -> list[str]:
    return list(_NAMES_AND_DOCS)


@cache
def panel(name: str) -> Entry:
    """The schema `name` with its documents: hand-written ones (must be valid) and mutants,
    sorted into valid and invalid by jsonschema."""
    schema = json.loads((_vendor_dir() / f"{name}.json").read_text())
    check = _validator(schema)
    valid, invalid = [], []
    for doc in _NAMES_AND_DOCS[name]:
        if not check.is_valid(doc):
            raise AssertionError(f"panel bug: {name} document is invalid: {doc}")
        valid.append(doc)
    for doc in _NAMES_AND_DOCS[name]:
        for mutant in mutants(doc):
            if mutant in valid or mutant in invalid:
                continue
            (valid if check.is_valid(mutant) else invalid).append(mutant)
    return Entry(name, schema, valid, invalid[:MAX_MUTANTS])
