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
ROOMS_MARKER = "<!-- control-rooms-diagram -->"
ROOMS_TABLE_MARKER = "<!-- control-rooms-table -->"


def contract_layers(
    pyproject: Path = ROOT / "pyproject.toml", container: str = PACKAGE
) -> list[list[str]]:
    """The layers contract's layers for `container`, highest first, each a list of module names."""
    config = tomllib.loads(pyproject.read_text(encoding="utf-8"))["tool"]["importlinter"]
    contract = next(
        c
        for c in config["contracts"]
        if c["type"] == "layers" and c.get("containers", [PACKAGE]) == [container]
    )
    # "cli : (eval) | workshop": siblings split on ":" or "|", "(name)" marks an optional one
    return [
        [n.strip().strip("()") for n in re.split(r"[:|]", layer)] for layer in contract["layers"]
    ]


def layer_imports(container: str = PACKAGE) -> tuple[Counter, Counter]:
    """Modules per child of `container`, and module-to-module imports between those children.

    Function-level imports count too (grimp reads them all), as for the contract.
    """
    import grimp

    graph = grimp.build_graph(PACKAGE, cache_dir=None)
    depth = container.count(".") + 1
    sizes: Counter = Counter()
    edges: Counter = Counter()
    for module in graph.modules:
        parts = module.split(".")
        if len(parts) <= depth or not module.startswith(container + "."):
            continue  # outside the container, or its own __init__
        sizes[parts[depth]] += 1
        for imported in graph.find_modules_directly_imported_by(module):
            target = imported.split(".")
            if (
                imported.startswith(container + ".")
                and len(target) > depth
                and target[depth] != parts[depth]
            ):
                edges[(parts[depth], target[depth])] += 1
    return sizes, edges


def layer_diagram_svg(container: str = PACKAGE) -> str:
    """The diagram as an inline <svg> element: layers top (highest) to bottom, imports as arrows."""
    import graphviz

    layers = contract_layers(container=container)
    sizes, edges = layer_imports(container)
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


def rooms_table(container: str = "genlm_lab.control") -> str:
    """An HTML table of `container`'s rooms: each module with its docstring's first line."""
    import ast
    import html as html_lib

    base = ROOT.joinpath(*container.split("."))
    rows = []
    for names in contract_layers(container=container):
        for room in names:
            folder = base / room
            modules = []
            for path in sorted(folder.glob("*.py")):
                if path.name == "__init__.py":
                    continue
                doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
                first = html_lib.escape(doc.strip().splitlines()[0] if doc.strip() else "")
                modules.append(f"<code>{path.stem}</code>: {first}")
            rows.append(f"<tr><td><code>{room}/</code></td><td>{'<br>'.join(modules)}</td></tr>")
    return f"<table><tr><th>room</th><th>modules</th></tr>{''.join(rows)}</table>"


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    """mkdocs event: put the diagrams and the rooms' table where a page marks them."""
    if MARKER in html:
        html = html.replace(MARKER, f'<div class="layer-diagram">{layer_diagram_svg()}</div>')
    if ROOMS_MARKER in html:
        svg = layer_diagram_svg("genlm_lab.control")
        html = html.replace(ROOMS_MARKER, f'<div class="layer-diagram">{svg}</div>')
    if ROOMS_TABLE_MARKER in html:
        html = html.replace(ROOMS_TABLE_MARKER, rooms_table())
    return html
