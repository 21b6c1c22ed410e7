"""An import-linter contract of our own: layers meet only at their public seams.

`lint-imports` checks that layers import one way; this contract checks *what*
they import from each other. A module may not import another layer's private
module (a dotted path with a segment that starts with `_`) nor a private name
(`from genlm_lab.trie.base import _helper`). What another layer needs becomes
public in its owner. A "layer" is a direct child of one of `containers`: with
`genlm_lab` and `genlm_lab.control`, both the package's layers and the rooms
of `control` are held to it. Registered in pyproject.toml (`contract_types`).
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

from grimp import ImportGraph
from importlinter import Contract, ContractCheck, fields, output


@dataclass(frozen=True)
class Breach:
    """One import of something private across a seam."""

    importer: str
    imported: str
    line: int
    what: str


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _owner(module: str, containers: list[str]) -> str:
    """The layer (or room) a module belongs to: its ancestor right below the deepest container."""
    best = ""
    for container in containers:
        if module.startswith(container + ".") and len(container) > len(best):
            best = container
    if not best:
        return module
    return best + "." + module[len(best) + 1 :].split(".")[0]


def _private_path(module: str, owner: str) -> bool:
    rest = module[len(owner) :].split(".")
    return any(_is_private(part) for part in rest if part)


def _source(module: str) -> Path | None:
    """The file of `module`, found on sys.path as import would, without importing anything."""
    parts = module.split(".")
    for entry in sys.path:
        base = Path(entry or ".").joinpath(*parts)
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
    return None


def _imports(module: str) -> list[tuple[str, list[str], int]]:
    """`(imported module, names, line)` for every import statement in `module`'s source."""
    path = _source(module)
    if path is None:
        return []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, [], node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            found.append((base, [alias.name for alias in node.names], node.lineno))
    return found


def find_breaches(graph: ImportGraph, containers: list[str]) -> list[Breach]:
    """Every import, in the graph's modules, of another layer's private module or name."""
    breaches = []
    for importer in sorted(graph.modules):
        here = _owner(importer, containers)
        for imported, names, line in _imports(importer):
            if imported not in graph.modules:
                # `from pkg import submodule`: the names may be modules
                continue
            there = _owner(imported, containers)
            if there == here or not any(imported.startswith(c + ".") for c in containers):
                continue
            if _private_path(imported, there):
                breaches.append(Breach(importer, imported, line, f"private module {imported}"))
            for name in names:
                full = f"{imported}.{name}"
                if full in graph.modules and _private_path(full, there):
                    breaches.append(Breach(importer, full, line, f"private module {full}"))
                elif _is_private(name):
                    breaches.append(Breach(importer, imported, line, f"private name {name}"))
    return breaches


class PublicSeamsContract(Contract):
    """No layer imports another layer's private modules or private names.

    Configuration options:
        - containers: packages whose direct children are the layers (or rooms).
    """

    type_name = "public_seams"

    containers = fields.ListField(subfield=fields.StringField())

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        breaches = find_breaches(graph, list(self.containers))  # type: ignore[arg-type]
        return ContractCheck(kept=not breaches, metadata={"breaches": breaches})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for breach in check.metadata["breaches"]:
            output.print_error(f"- {breach.importer} (l.{breach.line}) imports {breach.what}")
        output.new_line()
        output.print("Make what another layer needs public in the module that owns it.")
