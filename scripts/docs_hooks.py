"""mkdocs hook: the layer diagram of docs/architecture.md, drawn from the code's imports at build time.

The layers and their order come from the import-linter layers contract in
pyproject.toml (the one `lint-imports` enforces); the arrows are the imports
grimp finds between genlm_lab's subpackages, one arrow per pair, labelled with
how many module-to-module imports cross it. graphviz's `dot` lays it out as
SVG, inlined where the page says `<!-- layer-diagram -->`. So the picture can
neither drift from the code nor from the contract.
"""

from __future__ import annotations

import re
import tomllib
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "genlm_lab"
MARKER = "<!-- layer-diagram -->"


def contract_layers(pyproject: Path = ROOT / "pyproject.toml") -> list[list[str]]:
    """The layers contract's layers, highest first, each a list of its module names."""
    config = tomllib.loads(pyproject.read_text(encoding="utf-8"))["tool"]["importlinter"]
    contract = next(c for c in config["contracts"] if c["type"] == "layers")
    # "cli : (eval) | workshop": siblings split on ":" or "|", "(name)" marks an optional one
    return [
        [n.strip().strip("()") for n in re.split(r"[:|]", layer)] for layer in contract["layers"]
    ]


def layer_imports(package: str = PACKAGE) -> tuple[Counter, Counter]:
    """Modules per subpackage, and module-to-module imports per (importer, imported) subpackage.

    Function-level imports count too (grimp reads them all), as for the contract.
    """
    import grimp

    graph = grimp.build_graph(package, cache_dir=None)
    sizes: Counter = Counter()
    edges: Counter = Counter()
    for module in graph.modules:
        parts = module.split(".")
        if len(parts) < 2:  # the package's own __init__
            continue
        sizes[parts[1]] += 1
        for imported in graph.find_modules_directly_imported_by(module):
            target = imported.split(".")
            if len(target) >= 2 and target[1] != parts[1]:
                edges[(parts[1], target[1])] += 1
    return sizes, edges


def layer_diagram_svg() -> str:
    """The diagram as an inline <svg> element: layers top (highest) to bottom, imports as arrows."""
    import graphviz

    layers = contract_layers()
    sizes, edges = layer_imports()
    dot = graphviz.Digraph(
        "layers",
        graph_attr={"rankdir": "TB", "bgcolor": "transparent", "nodesep": "0.25", "ranksep": "0.3"},
        node_attr={
            "shape": "box",
            "style": "rounded,filled",
            "fillcolor": "#e8eaf6",
            "fontname": "Helvetica",
            "fontsize": "11",
        },
        edge_attr={"fontname": "Helvetica", "fontsize": "9", "color": "#5c6bc0"},
    )
    present = [[n for n in names if n in sizes] for names in layers]
    present = [names for names in present if names]
    for i, names in enumerate(present):
        with dot.subgraph(name=f"layer_{i}") as rank:
            rank.attr(rank="same")
            for name in names:
                count = sizes[name]
                rank.node(name, f"{name}\n{count} module{'s' if count != 1 else ''}")
    for upper, lower in zip(present, present[1:], strict=False):  # keep the contract's order
        dot.edge(upper[0], lower[0], style="invis")
    for (importer, imported), count in sorted(edges.items()):
        dot.edge(importer, imported, label=f" {count}", tooltip=f"{importer} imports {imported}")
    svg = dot.pipe(format="svg", encoding="utf-8")
    return svg[svg.index("<svg") :]  # without the XML prolog and doctype


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    """mkdocs event: put the diagram where a page marks it."""
    if MARKER not in html:
        return html
    return html.replace(MARKER, f'<div class="layer-diagram">{layer_diagram_svg()}</div>')
