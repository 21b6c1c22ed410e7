"""Benchmarks import public names only: a contract, like the layers' in pyproject.toml.

A benchmark that imports `_private` helpers measures code a user cannot call,
and breaks whenever that helper is renamed. Read from the code (ast): an import
of a genlm_lab module with a `_`-led part (`genlm_lab.bytes._beam_ext`), of a
`_`-led name from a genlm_lab module, or a `module._name` read through an
imported genlm_lab module, is refused. The benchmarks' own `_`-led helper
modules (benchmarks/_row.py) are theirs to share.
"""

from __future__ import annotations

import ast
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def _private(dotted: str) -> bool:
    return any(part.startswith("_") for part in dotted.split("."))


def private_uses(source: str) -> list[str]:
    """The private genlm_lab names `source` imports or reads through an imported module."""
    tree = ast.parse(source)
    found, modules = [], set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "genlm_lab":
                    if _private(alias.name):
                        found.append(alias.name)
                    modules.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "genlm_lab":
            for alias in node.names:
                if _private(node.module) or alias.name.startswith("_"):
                    found.append(f"{node.module}.{alias.name}")
                modules.add(alias.asname or alias.name)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
        ):
            root = node.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in modules and root.id[:1].islower():
                found.append(f"{ast.unparse(node.value)}.{node.attr}")
    return found


def test_benchmarks_use_public_names_only():
    scripts = sorted(BENCHMARKS.glob("*.py"))
    assert len(scripts) > 10
    found = {path.name: uses for path in scripts if (uses := private_uses(path.read_text("utf-8")))}
    assert not found, f"benchmarks import private genlm_lab names: {found}"


def test_the_contract_refuses_each_kind_of_private_use():
    assert private_uses("from genlm_lab.control.constraint.python_regex import _ByteLevels") == [
        "genlm_lab.control.constraint.python_regex._ByteLevels"
    ]
    assert private_uses("from genlm_lab.bytes._beam_ext import grow") == [
        "genlm_lab.bytes._beam_ext.grow"
    ]
    assert private_uses("import genlm_lab.smc._run") == ["genlm_lab.smc._run"]
    assert private_uses("import genlm_lab.smc as smc\nsmc._run.go()") == ["smc._run"]
    assert private_uses("from genlm_lab.control import PythonRegex, InvalidGrammar") == []
    assert private_uses("from _row import row\nrow._fields") == []  # the benchmarks' own helper
