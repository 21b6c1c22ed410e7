"""Pictures of a trie: `subtrie_data` (plain data) and `visualize` (graphviz).

A 49k-token trie is far too big to draw whole, so both functions look at the
subtrie under a byte prefix, a few levels deep, keeping the heaviest children
of each node. `subtrie_data` returns plain Python data that any renderer can
draw (`visualize` here, the browser widget elsewhere); `visualize` turns it
into a `graphviz.Digraph` whose SVG shows in Jupyter.
"""

from __future__ import annotations

import html
import shutil
from collections import deque
from typing import Any

import numpy as np

from genlm_lab.trie.structure import EOS
from genlm_lab.util import escape_bytes


def dot_available() -> bool:
    """Whether the graphviz `dot` binary (needed to render a Digraph) is on PATH."""
    return shutil.which("dot") is not None


def _node_masses(trie: Any, ws: Any, mode: Any) -> np.ndarray | None:
    if ws is None:
        return None
    arr = np.asarray(ws.detach().cpu() if hasattr(ws, "detach") else ws, dtype=np.float64)
    if arr.ndim == 1 and len(arr) == trie.n_nodes:
        return arr  # already node masses
    if mode is None:
        return trie.weight_sum(arr)
    if not hasattr(trie, "eos_node"):  # only a TokenByteTrie has modes
        raise ValueError(
            f"mode {mode!r} is for a TokenByteTrie; a {type(trie).__name__} has no modes"
        )
    return trie.weight_sum(arr, mode)


def _edge_kind(trie: Any, key: Any, child: int) -> str:
    if child in trie.leaf2token_id:
        return "eot"
    if key == EOS and child == getattr(trie, "eos_node", None):
        return "eos"
    return "atomic" if isinstance(key, bytes) else "byte"


def _edge_label(trie: Any, kind: str, key: Any, child: int) -> str:
    if kind == "eot":
        return f"EOT #{trie.leaf2token_id[child]}"
    if kind == "eos":
        return "EOS"
    if kind == "atomic":
        return escape_bytes(key, visible_space=True)
    return escape_bytes(bytes([key]), visible_space=True)


def _count(name: str, value: Any, least: int) -> int | None:
    """`value` as an int >= `least` (None stays None), or one ValueError naming it."""
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not hasattr(value, "__index__") or int(value) < least:
        raise ValueError(f"{name} must be an int >= {least} or None, got {value!r}")
    return int(value)


def subtrie_data(
    trie: Any,
    ws: Any = None,
    prefix: bytes | str = b"",
    depth: int | None = None,
    top_k: int | None = None,
    mode: Any = None,
) -> dict:
    """The subtrie under `prefix` as plain data, ready to draw.

    Args:
        trie: a `TokenCharacterTrie` (or subclass) or `TokenByteTrie`.
        ws: None, token weights (one per token id; their `weight_sum` is used),
            or node masses (one per node, e.g. from `weight_sum`).
        prefix: bytes (or str, UTF-8 encoded) naming the subtrie's root.
        depth: levels below the subtrie root to include (None: all).
        top_k: keep at most this many children per node, heaviest first when
            masses are known, else in edge order (None: all).
        mode: for a `TokenByteTrie`, the `TrieMode` used with token weights.

    Returns:
        A dict with
        - "root": node id of the subtrie root; "prefix": its bytes;
        - "total": mass of the whole trie's root (None without ws);
        - "nodes": list, parents before children, of dicts with
          "id" (trie node id), "parent" (id or None), "depth" (levels below
          the subtrie root), "prefix" (bytes), "label" (readable prefix; for a
          leaf the token text), "edge" (readable label of the edge from the
          parent: a byte, "EOT #id", "EOS" or an atomic token), "kind" ("root",
          "byte", "atomic", "eot", "eos"), "is_leaf", "token_id" (leaf's token
          id or None), "is_eos" (the EOS node, or a leaf of an EOS token),
          "mass" and "prob" (mass / total; None without ws), "children" (ids
          of the children shown) and "hidden" / "hidden_mass" (count and
          mass of children left out by depth or top_k);
        - "edges": list of {"source", "target", "label", "kind"}.

    Raises:
        ValueError: if no node spells `prefix`, or depth/top_k are negative.
    """
    if isinstance(prefix, str):
        prefix = prefix.encode("utf-8")
    depth = _count("depth", depth, 0)
    top_k = _count("top_k", top_k, 1)
    start = trie.find(prefix)
    if start is None:
        raise ValueError(f"no token starts with prefix {prefix!r}: it is not a node of the trie")
    mass = _node_masses(trie, ws, mode)
    total = None if mass is None else float(mass[trie.root])
    eos_ids = set(getattr(trie, "eos_token_ids", ()))
    eos_node = getattr(trie, "eos_node", None)

    def node_record(node: int, parent: int | None, level: int, key: Any) -> dict:
        kind = "root" if parent is None else _edge_kind(trie, key, node)
        token_id = trie.leaf2token_id.get(node)
        node_prefix = trie._node_prefix[node]
        if kind == "eos":
            label = "EOS"
        elif token_id is not None:
            label = f"{escape_bytes(node_prefix, visible_space=True)} #{token_id}"
        else:
            label = escape_bytes(node_prefix, visible_space=True) or "ε"
        m = None if mass is None else float(mass[node])
        return {
            "id": node,
            "parent": parent,
            "depth": level,
            "prefix": node_prefix,
            "label": label,
            "edge": "" if parent is None else _edge_label(trie, kind, key, node),
            "kind": kind,
            "is_leaf": token_id is not None,
            "token_id": token_id,
            "is_eos": node == eos_node or token_id in eos_ids,
            "mass": m,
            "prob": None if m is None or not total else m / total,
            "children": [],
            "hidden": 0,
            "hidden_mass": None if mass is None else 0.0,
        }

    nodes = [node_record(start, None, 0, None)]
    edges = []
    frontier = deque([nodes[0]])
    while frontier:
        record = frontier.popleft()
        kids = list(trie.children[record["id"]].items())
        if mass is not None:
            kids.sort(key=lambda kv: -mass[kv[1]])
        keep = kids if depth is None or record["depth"] < depth else []
        if top_k is not None:
            keep = keep[:top_k]
        kept = {child for _, child in keep}
        dropped = [child for _, child in kids if child not in kept]
        record["hidden"] = len(dropped)
        if mass is not None:
            record["hidden_mass"] = float(sum(mass[c] for c in dropped))
        for key, child in keep:
            child_record = node_record(child, record["id"], record["depth"] + 1, key)
            record["children"].append(child)
            nodes.append(child_record)
            frontier.append(child_record)
            edges.append(
                {
                    "source": record["id"],
                    "target": child,
                    "label": child_record["edge"],
                    "kind": child_record["kind"],
                }
            )
    return {"root": start, "prefix": prefix, "total": total, "nodes": nodes, "edges": edges}


def _dot(text: str) -> str:
    """Escape text for a graphviz label (backslashes are escapes, & starts an entity)."""
    return text.replace("\\", "\\\\").replace("&", "&amp;")


def _fill(share: float) -> tuple[str, str]:
    """Fill and font colours for a node holding `share` of the subtrie root's mass."""
    t = float(np.clip(share, 0.0, 1.0)) ** 0.5  # sqrt: small masses stay visible
    lo, hi = np.array([255, 255, 255]), np.array([37, 99, 235])
    rgb = (lo + (hi - lo) * t).round().astype(int)
    return "#{:02x}{:02x}{:02x}".format(*rgb), ("white" if t > 0.6 else "black")


def render_digraph(data: dict) -> Any:
    """A `graphviz.Digraph` of `subtrie_data` output (left to right, shaded by mass)."""
    import graphviz

    g = graphviz.Digraph("trie", graph_attr={"rankdir": "LR", "fontname": "Helvetica"})
    g.attr("node", fontname="Helvetica", fontsize="10", style="filled,rounded", shape="box")
    g.attr("edge", fontname="Helvetica", fontsize="9")
    by_id = {n["id"]: n for n in data["nodes"]}
    root_mass = by_id[data["root"]]["mass"]
    masked = any(n.get("blocked") for n in data["nodes"])
    for n in data["nodes"]:
        lines = [_dot(n["label"])]
        if n["prob"] is not None:
            lines.append(f"p={n['prob']:.3g}")
        if n["hidden"]:
            more = f"+{n['hidden']} more"
            if n["hidden_mass"] is not None and data["total"]:
                more += f" (p={n['hidden_mass'] / data['total']:.2g})"
            lines.append(more)
        fill, font = "#ffffff", "black"
        if n["mass"] is not None and root_mass:
            fill, font = _fill(n["mass"] / root_mass)
        attrs = {"fillcolor": fill, "fontcolor": font}
        if n.get("blocked"):  # a constraint rules out every token below: greyed, dashed
            attrs.update(fillcolor="#e5e7eb", fontcolor="#6b7280", color="#9ca3af")
            attrs["class"] = "genlm-blocked"
            attrs.update(style="filled,rounded,dashed")
            lines.append("blocked")
        elif masked:  # under a mask, the open paths stand out: a bold green border
            attrs.update(color="#15803d", penwidth="2.5")
            attrs["class"] = "genlm-open"
        if n["kind"] == "eos":
            attrs.update(shape="octagon", color="#dc2626", penwidth="2")
        elif n["is_leaf"]:
            attrs.update(shape="box", style="filled", peripheries="2")
            if n["is_eos"]:
                attrs.update(color="#dc2626")
        g.node(str(n["id"]), label=graphviz.nohtml("\\n".join(lines)), **attrs)
    for e in data["edges"]:
        attrs = {}
        if e["kind"] == "eot":
            attrs = {"style": "dashed", "color": "#6b7280", "fontcolor": "#6b7280"}
        elif e["kind"] == "eos":
            attrs = {"color": "#dc2626", "fontcolor": "#dc2626", "penwidth": "2"}
        elif e["kind"] == "atomic":
            attrs = {"penwidth": "2"}
        g.edge(str(e["source"]), str(e["target"]), label=graphviz.nohtml(_dot(e["label"])), **attrs)
    return g


def render_html(data: dict) -> str:
    """A static nested-list HTML tree of `subtrie_data` output (no graphviz needed).

    The fallback picture where the `dot` binary is missing: one line per
    node (edge label, node label, probability), children indented below,
    shaded like the graphviz rendering.
    """
    by_id = {n["id"]: n for n in data["nodes"]}
    root_mass = by_id[data["root"]]["mass"]

    def item(node: dict) -> str:
        fill, font = ("#ffffff", "black")
        if node["mass"] is not None and root_mass:
            fill, font = _fill(node["mass"] / root_mass)
        text = html.escape(node["label"])
        if node["edge"]:
            text = f"<b>{html.escape(node['edge'])}</b> → {text}"
        if node["prob"] is not None:
            text += f" <small>p={node['prob']:.3g}</small>"
        if node["hidden"]:
            text += f" <small>+{node['hidden']} more</small>"
        if node.get("blocked"):
            fill, font = "#e5e7eb", "#6b7280"
            text += " <small>blocked</small>"
        style = f"background:{fill};color:{font};padding:0 4px;border-radius:3px"
        kids = "".join(item(by_id[c]) for c in node["children"])
        return (
            f'<li><span style="{style}">{text}</span>'
            + (f"<ul>{kids}</ul>" if kids else "")
            + "</li>"
        )

    return (
        '<ul class="genlm-trie" style="font-family:monospace;list-style:none">'
        + item(by_id[data["root"]])
        + "</ul>"
    )


def visualize(trie: Any, *args: Any, **kwargs: Any) -> Any:
    """Draw the subtrie under `prefix` as a `graphviz.Digraph`; the arguments are `subtrie_data`'s.

    Nodes are labelled with their prefix (leaves with token text and id) and
    probability, shaded by their share of the subtrie root's mass; leaves have
    a double border, EOT edges are dashed, the EOS node and edges are red, and
    `+n more` counts the children cut by `depth` / `top_k`.
    """
    return render_digraph(subtrie_data(trie, *args, **kwargs))
