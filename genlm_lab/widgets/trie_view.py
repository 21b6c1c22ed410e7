"""`TrieView`: the subtrie under a prefix, with the probability mass of every prefix."""

from __future__ import annotations

import re
import weakref
from typing import Any

import numpy as np

from genlm_lab.trie import TokenCharacterTrie, dot_available, render_digraph, subtrie_data
from genlm_lab.widgets.base import LiveView, esm
from genlm_lab.widgets.render import bar, esc, fmt, wrap

NO_DOT = "graphviz `dot` was not found: showing an HTML tree (install graphviz to draw the trie)"
_SVG_START = re.compile(r"<svg\b")


def _svg(data: dict) -> str | None:
    if not dot_available():
        return None
    svg = render_digraph(data).pipe(format="svg", encoding="utf-8")
    m = _SVG_START.search(svg)  # drop the XML prolog and DOCTYPE
    return svg[m.start() :] if m else None


def trie_data(
    trie: Any,
    ws: Any = None,
    prefix: bytes | str = b"",
    depth: int = 3,
    top_k: int = 8,
    context: str | None = None,
    draw: bool = True,
    blocked: Any = None,
) -> dict:
    """View data of the subtrie under `prefix` (from `genlm_lab.trie.subtrie_data`).

    Args:
        trie: a `TokenCharacterTrie` or `TokenByteTrie`.
        ws: one weight per token id (e.g. next-token probabilities), or None.
        prefix: the subtrie's root, as bytes or UTF-8 text.
        depth: levels shown below the prefix.
        top_k: children kept per node, heaviest first.
        context: the LM context the weights come from, shown as a caption.
        draw: render graphviz SVG when `dot` exists.
        blocked: one bool per token id (True: a constraint rules it out), or
            None. A node is `blocked` (drawn greyed) when every token below it
            is; `allowed_prob` is the share of the total mass left under it.

    Raises:
        ValueError: if `ws` fits neither the vocabulary nor the nodes, or no
            token starts with `prefix`.
    """
    if ws is not None:
        if hasattr(ws, "detach"):  # torch: numpy reads no bfloat16, so widen in torch first
            ws = ws.detach().cpu().double()
        arr = np.asarray(ws, dtype=np.float64)
        if arr.ndim != 1 or len(arr) not in (trie.n_tokens, trie.n_nodes):
            raise ValueError(
                f"weights of shape {arr.shape} do not fit this trie: expected one weight per "
                f"token ({trie.n_tokens},) or per node ({trie.n_nodes},)"
            )
        if not np.isfinite(arr).all() or (arr < 0).any():
            raise ValueError(
                "weights must be finite non-negative numbers (probabilities, not log-probs)"
            )
        ws = arr
    raw = subtrie_data(trie, ws, prefix, depth, top_k)
    total = raw["total"]
    if blocked is not None:
        _mark_blocked(trie, raw, ws, blocked)
    nodes = [
        {
            "id": n["id"],
            "parent": n["parent"],
            "label": n["label"],
            "edge": n["edge"],
            "kind": n["kind"],
            "prefix_hex": bytes(n["prefix"]).hex(),
            "token_id": n["token_id"],
            "prob": n["prob"],
            "hidden": n["hidden"],
            "hidden_prob": None
            if n["hidden_mass"] is None or not total
            else n["hidden_mass"] / total,
            "is_leaf": n["is_leaf"],
            "blocked": n.get("blocked", False),
            "allowed_prob": n.get("allowed_prob"),
        }
        for n in raw["nodes"]
    ]
    has_dot = draw and dot_available()
    return {
        "kind": "trie",
        "prefix": nodes[0]["label"] if raw["prefix"] else "",
        "prefix_hex": bytes(raw["prefix"]).hex(),
        "context": context,
        "depth": depth,
        "top_k": top_k,
        "total": total,
        "nodes": nodes,
        "svg": _svg(raw) if has_dot else None,
        "message": "" if has_dot or not draw else NO_DOT,
    }


def _mark_blocked(trie: Any, raw: dict, ws: Any, blocked: Any) -> None:
    """Flag the nodes of `raw` under which every token is blocked; add their allowed mass."""
    mask = np.asarray(blocked, dtype=bool)
    if mask.shape != (trie.n_tokens,):
        raise ValueError(
            f"blocked has shape {mask.shape}; expected one bool per token ({trie.n_tokens},)"
        )
    allowed = (~mask).astype(np.float64)
    n_allowed = trie.weight_sum(allowed)
    mass = None if ws is None or len(ws) != trie.n_tokens else trie.weight_sum(ws * allowed)
    total = raw["total"]
    for n in raw["nodes"]:
        n["blocked"] = bool(n_allowed[n["id"]] == 0)
        n["allowed_prob"] = None if mass is None or not total else float(mass[n["id"]]) / total


def _tree_html(nodes: list[dict]) -> str:
    kids: dict[Any, list[dict]] = {}
    for n in nodes:
        kids.setdefault(n["parent"], []).append(n)
    masked = any(n.get("blocked") for n in nodes)  # under a mask, live paths stand out

    def item(n: dict) -> str:
        p = (
            ""
            if n["prob"] is None
            else f"{bar(n['prob'], 60)}<span class='genlm-num'>{esc(fmt(n['prob']))}</span> "
        )
        more = f" <span class='genlm-note'>+{n['hidden']} more</span>" if n["hidden"] else ""
        edge = f"<code>{esc(n['edge'])}</code> → " if n["edge"] else ""
        sub = "".join(item(c) for c in kids.get(n["id"], []))
        cls = (
            " class='genlm-blocked'"
            if n.get("blocked")
            else (" class='genlm-open'" if masked else "")
        )
        tag = " <span class='genlm-badge'>blocked</span>" if n.get("blocked") else ""
        return (
            f"<li{cls} data-prefix='{esc(n['prefix_hex'])}'>{p}{edge}<code>{esc(n['label'])}</code>"
            f"{tag}{more}{'<ul>' + sub + '</ul>' if sub else ''}</li>"
        )

    return "<ul>" + "".join(item(n) for n in kids.get(None, [])) + "</ul>"


def trie_html(data: dict) -> str:
    """Static HTML of `trie_data`: graphviz SVG, or an HTML tree with bars and numbers."""
    head = f"Trie under prefix '{esc(data['prefix'])}'" if data["prefix_hex"] else "Trie"
    cap = f"depth {data['depth']}, top {data['top_k']} children per node"
    if data["context"] is not None:
        cap += f"; masses given context '{esc(data['context'])}'"
    parts = [f"<div class='genlm-title'>{head}</div><div class='genlm-note'>{cap}</div>"]
    if data.get("error"):
        parts.append(f"<div class='genlm-error'>{esc(data['error'])}</div>")
    if data["message"]:
        parts.append(f"<div class='genlm-note genlm-nodot'>{esc(data['message'])}</div>")
    if data["svg"]:
        parts.append(f"<div class='genlm-graph'>{data['svg']}</div>")
    else:
        parts.append(f"<div class='genlm-trie'>{_tree_html(data['nodes'])}</div>")
    return wrap("".join(parts), "trie")


_NAMED_ESCAPES = {"\\n": b"\n", "\\t": b"\t", "\\r": b"\r", "\\\\": b"\\"}


def _parse_prefix(text: str) -> bytes:
    """Prefix typed in the browser: text with optional \\xNN escapes, ␣ for space.

    It reads back what `escape_bytes` shows in the labels (\\n, \\t, \\r, \\\\ too).
    """
    out = bytearray()
    i = 0
    while i < len(text):
        if text.startswith("\\x", i) and re.fullmatch(r"[0-9a-fA-F]{2}", text[i + 2 : i + 4]):
            out.append(int(text[i + 2 : i + 4], 16))
            i += 4
        elif text[i : i + 2] in _NAMED_ESCAPES:
            out += _NAMED_ESCAPES[text[i : i + 2]]
            i += 2
        else:
            out += text[i].replace("␣", " ").encode("utf-8")
            i += 1
    return bytes(out)


def _as_prefix(p: Any) -> bytes:
    """A prefix as bytes (text is UTF-8 encoded), or one ValueError naming it."""
    if isinstance(p, str):
        return p.encode("utf-8")
    try:
        if isinstance(p, int):  # bytes(3) would be three zero bytes
            raise TypeError
        return bytes(p)
    except (TypeError, ValueError):
        raise ValueError(f"prefix must be bytes or text, got {p!r}") from None


def _as_int(name: str, value: Any) -> int:
    try:
        if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
            raise TypeError
        return int(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an int, got {value!r}") from None


class TrieView(LiveView):
    """The subtrie under a prefix, with masses, drawn by graphviz (HTML tree without `dot`).

    Controls in the browser change the prefix, depth and top_k (and the
    context, for `from_lm`); clicking a node drills into it.

    Args:
        trie: a `TokenCharacterTrie` or `TokenByteTrie`.
        ws: one weight per token id (or per node), or None for the bare structure.
        prefix: the subtrie's root (bytes or UTF-8 text).
        depth: levels shown below the prefix.
        top_k: children kept per node, heaviest first.
    """

    _esm = esm("trie.js")

    def __init__(
        self,
        trie: Any,
        ws: Any = None,
        prefix: bytes | str = b"",
        depth: int = 3,
        top_k: int = 8,
        *,
        _llm: Any = None,
        _context: str | None = None,
    ) -> None:
        super().__init__()
        self.trie, self.ws = trie, ws
        self._llm, self.context = _llm, _context
        self.prefix = _as_prefix(prefix)
        self.depth, self.top_k = _as_int("depth", depth), _as_int("top_k", top_k)
        self._message = ""
        self._render()  # bad input raises here, before anything is shown
        self.on_msg(self._on_msg)

    @classmethod
    def from_lm(
        cls,
        llm: Any,
        context: str = "",
        prefix: bytes | str = b"",
        depth: int = 3,
        top_k: int = 8,
    ) -> TrieView:
        """The LM's next-token distribution after `context`, as masses on its token trie."""
        trie = _trie_of(llm)
        view = cls.__new__(cls)
        ws = _next_token_probs(llm, context)
        cls.__init__(view, trie, ws, prefix, depth, top_k, _llm=llm, _context=context)
        return view

    def update(self, **changes: Any) -> None:
        """Change `prefix`, `depth`, `top_k` or `context` (with an LM) and redraw.

        Raises:
            ValueError: for an unknown or malformed setting, or a prefix no token
                starts with; the view is then left as it was.
        """
        unknown = sorted(set(changes) - {"prefix", "depth", "top_k", "context"})
        if unknown:
            raise ValueError(f"unknown settings {unknown}; expected prefix, depth, top_k, context")
        if "context" in changes and self._llm is None:
            raise ValueError("context can only change on a view made with TrieView.from_lm")
        old = (self.prefix, self.depth, self.top_k, self.context, self.ws)
        try:
            if "context" in changes:
                context = str(changes["context"])
                self.ws = _next_token_probs(self._llm, context)
                self.context = context
            if "prefix" in changes:
                self.prefix = _as_prefix(changes["prefix"])
            for key in ("depth", "top_k"):
                if key in changes:
                    setattr(self, key, _as_int(key, changes[key]))
            self._render()
        except Exception:
            self.prefix, self.depth, self.top_k, self.context, self.ws = old
            raise

    def _render(self) -> None:
        data = trie_data(self.trie, self.ws, self.prefix, self.depth, self.top_k, self.context)
        data["error"] = self._message
        data["live_context"] = self._llm is not None
        self.push(lambda: data, final=True)

    def _on_msg(self, _widget: Any, content: dict, _buffers: Any) -> None:
        try:
            self._message = ""
            changes = {}
            if "prefix_hex" in content:
                changes["prefix"] = bytes.fromhex(content["prefix_hex"])
            if "prefix_text" in content:
                changes["prefix"] = _parse_prefix(str(content["prefix_text"]))
            for key in ("depth", "top_k", "context"):
                if key in content:
                    changes[key] = content[key]
            self.update(**changes)
        except ValueError as err:  # shown in the view: there is no cell to raise into
            self._message = str(err)
            self._render()

    @staticmethod
    def to_html(data: dict) -> str:
        return trie_html(data)


_TRIES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _trie_of(llm: Any) -> TokenCharacterTrie:
    """The token trie of an LM, built once per LM (a 49k vocabulary takes a moment)."""
    try:
        return _TRIES[llm]
    except (KeyError, TypeError):
        trie = TokenCharacterTrie([bytes(t) for t in llm.byte_vocab])
    try:
        _TRIES[llm] = trie
    except TypeError:  # not weak-referenceable: no cache
        pass
    return trie


def _next_token_probs(llm: Any, context: str) -> np.ndarray:
    ids = llm.tokenizer.encode(context, add_special_tokens=False) if context else []
    if llm.bos_token_id is not None:
        ids = [llm.bos_token_id, *ids]
    logps = llm.next_token_logprobs_sync(ids)
    if hasattr(logps, "detach"):  # a bfloat16 model's log-probs: numpy cannot read them
        logps = logps.detach().cpu().double()
    return np.exp(np.asarray(logps, dtype=np.float64))
