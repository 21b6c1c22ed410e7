"""`MaskView`: what a product of potentials allows next, token by token and as a trie.

For one context, every factor of a potential (`potential.factors()`: the LM,
each regex / grammar / schema, a critic) gives a next-token log-weight over
`vocab_eos`. A factor *blocks* a token where its weight is -inf. The view shows
the LM's top-k tokens with their probability and the factors that block each,
the allowed mass (the LM probability of the tokens no factor blocks, EOS
included: the weight a direct sampler adds when every other factor is a
constraint), the blocked mass, and, on request, the vocabulary's trie with the
subtrees greyed where every token is blocked. An AWRS trace (the tokens it drew,
accepted and rejected, and the weight it returned) can be shown next to the
exact mass it estimates.

`mask_data` is the pure part (arrays in, a dict out); `mask_data_of` asks the
potential's factors for their weights; `MaskView` draws the dict, statically
(`mask_html`) and live.
"""

from __future__ import annotations

import asyncio
import math
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from genlm_lab.trie import TokenCharacterTrie
from genlm_lab.util import escape_bytes
from genlm_lab.widgets._awrs import awrs_html, awrs_trace
from genlm_lab.widgets._base import LiveView, esm
from genlm_lab.widgets.render import badge, bar, esc, fmt, table, token_text, wrap
from genlm_lab.widgets.trie_view import _parse_prefix, trie_data, trie_html

__all__ = ["MaskView", "mask_data", "mask_data_of", "mask_html"]


def _log_probs(weights: np.ndarray) -> np.ndarray:
    top = np.max(weights)
    if not np.isfinite(top):
        return np.full_like(weights, -math.inf)
    return weights - (top + math.log(float(np.sum(np.exp(weights - top)))))


def _logsumexp(x: np.ndarray) -> float:
    top = float(np.max(x)) if len(x) else -math.inf
    if top == -math.inf:
        return -math.inf
    return top + math.log(float(np.sum(np.exp(x - top))))


def _lm_name(weights: Mapping[str, np.ndarray], boolean: Mapping[str, bool]) -> str | None:
    return next((name for name in weights if not boolean.get(name, False)), None)


def mask_data(
    tokens: Sequence[Any],
    factor_weights: Mapping[str, Any],
    *,
    boolean: Mapping[str, bool] | None = None,
    lm: str | None = None,
    context: str = "",
    top_k: int = 20,
    n_allowed: int = 5,
    awrs: Mapping | None = None,
) -> dict:
    """View data of what each factor allows after one context (pure: arrays in, dict out).

    Args:
        tokens: the potential's `vocab_eos` (EOS last).
        factor_weights: factor name -> its next-token log-weights over `tokens`.
        boolean: factor name -> whether it is a constraint (0 / -inf weights);
            default: the factors whose finite weights are all 0.
        lm: the factor whose probabilities are shown (normalised); default the
            first non-boolean factor; uniform if there is none.
        context: the context's text, for the caption.
        top_k: rows for the LM's most probable tokens.
        n_allowed: extra rows for the most probable allowed tokens outside the top k.
        awrs: an AWRS step's details (`info["awrs"]`), shown as a trace.

    Returns:
        {"kind": "mask", "factors": [{name, boolean, is_lm, n_blocked, blocked_mass}],
        "rows": [{rank, index, token, prob, weights: {name: logw}, blocked_by, allowed,
        extra}], "allowed_mass", "blocked_mass", "log_z" (log of the total weight of
        the product), "n_tokens", "n_allowed", "hidden", "hidden_mass", "awrs", ...}.

    Raises:
        ValueError: if a factor's weights do not have one entry per token, or `lm`
            names no factor.
    """
    n = len(tokens)
    if not factor_weights:
        raise ValueError("mask_data needs the weights of at least one factor")
    ws = {}
    for name, w in factor_weights.items():
        arr = np.asarray(getattr(w, "weights", w), dtype=np.float64)
        if arr.shape != (n,):
            raise ValueError(
                f"factor {name!r} gives weights of shape {arr.shape}; expected one per token "
                f"of vocab_eos ({n},)"
            )
        ws[str(name)] = arr
    if boolean is None:
        boolean = {k: bool(np.all(v[np.isfinite(v)] == 0)) for k, v in ws.items()}
    if lm is None:
        lm = _lm_name(ws, boolean)
    elif lm not in ws:
        raise ValueError(f"lm={lm!r} names no factor; the factors are {sorted(ws)}")
    logp = _log_probs(ws[lm]) if lm is not None else np.full(n, -math.log(n))
    probs = np.exp(logp)
    blocked_by = {k: ~(v > -math.inf) for k, v in ws.items()}  # NaN counts as blocked
    blocked = np.zeros(n, dtype=bool)
    for b in blocked_by.values():
        blocked |= b
    allowed_mass = float(probs[~blocked].sum())
    total = np.sum(np.stack(list(ws.values())), axis=0)
    total[blocked] = -math.inf

    order = np.argsort(-probs, kind="stable")
    shown = [int(i) for i in order[: max(0, int(top_k))]]
    seen = set(shown)
    extra = [int(i) for i in order if not blocked[i] and int(i) not in seen][: max(0, n_allowed)]

    def row(rank: int, i: int, is_extra: bool) -> dict:
        return {
            "rank": rank,
            "index": i,
            "token": token_text(tokens[i]),
            "is_eos": i == n - 1,
            "prob": float(probs[i]),
            "weights": {k: float(v[i]) for k, v in ws.items()},
            "blocked_by": [k for k, b in blocked_by.items() if b[i]],
            "allowed": not bool(blocked[i]),
            "extra": is_extra,
        }

    rank = {i: r for r, i in enumerate(order.tolist())} if extra else {}
    rows = [row(r, i, False) for r, i in enumerate(shown)]
    rows += [row(rank[i], i, True) for i in extra]
    in_rows = [r["index"] for r in rows]
    eos = n - 1
    return {
        "kind": "mask",
        "context": context,
        "lm": lm,
        "factors": [
            {
                "name": k,
                "boolean": bool(boolean.get(k, False)),
                "is_lm": k == lm,
                "n_blocked": int(b.sum()),
                "blocked_mass": float(probs[b].sum()),
            }
            for k, b in blocked_by.items()
        ],
        "n_tokens": n,
        "n_allowed": int((~blocked).sum()),
        "allowed_mass": allowed_mass,
        "blocked_mass": float(probs[blocked].sum()),
        "log_z": _logsumexp(total),
        "eos": {"prob": float(probs[eos]), "allowed": not bool(blocked[eos])},
        "top_k": int(top_k),
        "rows": rows,
        "hidden": n - len(rows),
        "hidden_mass": max(0.0, 1.0 - float(probs[in_rows].sum())),
        "awrs": None if awrs is None else awrs_trace(awrs, allowed_mass),
        "trie": None,
    }


def _unique_names(factors: Sequence[Any]) -> list[str]:
    names: list[str] = []
    for f in factors:
        name, k = str(f.name), 2
        while name in names:
            name = f"{f.name}#{k}"
            k += 1
        names.append(name)
    return names


async def _weights(factor: Any, context: list) -> np.ndarray:
    try:
        return np.asarray((await factor.logw_next(context)).weights, dtype=np.float64)
    except ValueError:  # the context is already ruled out: nothing can follow it
        return np.full(len(factor.vocab_eos), -math.inf)


def _context_tokens(potential: Any, context: Any) -> list:
    """A context as a list of the potential's tokens (text is tokenised by its LM)."""
    if isinstance(context, (str, bytes, bytearray)):
        text = context.encode() if isinstance(context, str) else bytes(context)
        llm = next((f for f in potential.factors() if hasattr(f, "token_ids")), None)
        if llm is None:
            raise ValueError(
                "a text context needs an LM factor (PromptedLLM) to tokenise it; "
                "pass a list of the potential's tokens instead"
            )
        ids = llm.model.tokenizer.encode(text.decode("utf-8", "replace"), add_special_tokens=False)
        return [potential.vocab_eos[potential.lookup[llm.model.byte_vocab[i]]] for i in ids]
    return list(context)


def _context_text(context: list) -> str:
    return escape_bytes(
        b"".join(bytes(t) if not isinstance(t, int) else bytes([t]) for t in context)
    )


async def mask_data_of(
    potential: Any,
    context: Any = (),
    *,
    top_k: int = 20,
    n_allowed: int = 5,
    awrs: Any = None,
) -> tuple[dict, dict[str, np.ndarray]]:
    """`mask_data` of a potential after `context`, and the factor weights it came from.

    Args:
        potential: a `Potential` (a `Product` shows one column per factor), or a
            token sampler (its target is used).
        context: a list of the potential's tokens, or text (tokenised by the LM factor).
        top_k: rows for the LM's most probable tokens (see `mask_data`).
        n_allowed: extra rows for the most probable allowed tokens outside the top k.
        awrs: an AWRS sampler (its `sample_with_info(context)` is run once) or its
            `info["awrs"]` dict; the trace is shown next to the exact mass.
    """
    sampler = None
    if not hasattr(potential, "factors") and hasattr(potential, "target"):
        sampler, potential = potential, potential.target
    if awrs is None and sampler is not None and type(sampler).__name__ == "AWRS":
        awrs = sampler
    tokens = _context_tokens(potential, context)
    factors = potential.factors()
    names = _unique_names(factors)
    arrays = await asyncio.gather(*(_weights(f, tokens) for f in factors))
    weights = dict(zip(names, arrays, strict=True))
    boolean = {k: bool(f.is_boolean) for k, f in zip(names, factors, strict=True)}
    if awrs is not None and hasattr(awrs, "sample_with_info"):
        *_, info = await awrs.sample_with_info(tokens)
        awrs = info.get("awrs", info)
    data = mask_data(
        potential.vocab_eos,
        weights,
        boolean=boolean,
        context=_context_text(tokens),
        top_k=top_k,
        n_allowed=n_allowed,
        awrs=awrs,
    )
    return data, weights


def _factor_cell(row: dict, f: dict) -> str:
    w = row["weights"][f["name"]]
    if f["name"] in row["blocked_by"]:
        return "<td class='genlm-blocks'>✗ blocks</td>"
    if f["boolean"]:
        return "<td class='genlm-ok'>✓</td>"
    return f"<td class='genlm-num'>{esc(fmt(w, 2))}</td>"


def mask_summary(data: dict) -> str:
    """One line: allowed and blocked mass, tokens allowed, log Z."""
    return (
        f"allowed mass {fmt(data['allowed_mass'], 4)}, blocked mass {fmt(data['blocked_mass'], 4)}; "
        f"{data['n_allowed']} of {data['n_tokens']} tokens allowed (EOS "
        f"{'allowed' if data['eos']['allowed'] else 'blocked'}); log Z {fmt(data['log_z'], 3)}"
    )


def mask_html(data: dict) -> str:
    """Static HTML of `mask_data`: summary, per-factor blocked mass, top-k rows, trie, AWRS."""
    head = f"Next-token mask after '{esc(data['context'])}'"
    facts = "; ".join(
        f"{esc(f['name'])}{' (LM)' if f['is_lm'] else ''} blocks {f['n_blocked']} tokens, "
        f"mass {esc(fmt(f['blocked_mass'], 4))}"
        for f in data["factors"]
    )
    rows = []
    for r in data["rows"]:
        cls = "genlm-allowed" if r["allowed"] else "genlm-blocked"
        note = badge("allowed, outside top k") if r["extra"] else ""
        rows.append(
            f"<tr class='{cls}' data-index='{r['index']}'><td class='genlm-num'>{r['rank'] + 1}</td>"
            f"<td><span class='genlm-tok'>{esc(r['token'])}</span>{note}</td>"
            f"<td>{bar(r['prob'], 80)}<span class='genlm-num'>{esc(fmt(r['prob'], 4))}</span></td>"
            + "".join(_factor_cell(r, f) for f in data["factors"])
            + f"<td>{esc(', '.join(r['blocked_by'])) or 'allowed'}</td></tr>"
        )
    headers = ["#", "token", f"p ({data['lm'] or 'uniform'})"]
    headers += [f["name"] for f in data["factors"]] + ["blocked by"]
    more = (
        f"<div class='genlm-note'>+{data['hidden']} more tokens, p "
        f"{esc(fmt(data['hidden_mass'], 4))}</div>"
        if data["hidden"]
        else ""
    )
    body = (
        f"<div class='genlm-title'>{head}</div>"
        f"<div class='genlm-note genlm-mask-summary'>{esc(mask_summary(data))}</div>"
        f"<div class='genlm-massbar' title='allowed / blocked mass'>{bar(data['allowed_mass'], 240)}"
        "</div>"
        f"<div class='genlm-note'>{facts}</div>" + table(headers, rows) + more
    )
    if data.get("awrs"):
        body += awrs_html(data["awrs"])
    if data.get("trie"):
        body += (
            "<details class='genlm-mask-trie'><summary>vocabulary trie (blocked subtrees "
            "greyed)</summary>" + trie_html(data["trie"]) + "</details>"
        )
    return wrap(body, "mask")


_TRIES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _trie(owner: Any, tokens: Sequence[Any]) -> TokenCharacterTrie:
    """The trie of `vocab_eos` (EOS as the bytes "EOS"), built once per factor."""
    try:
        return _TRIES[owner]
    except (KeyError, TypeError):
        pass
    trie = TokenCharacterTrie(
        [b"EOS" if type(t).__name__ == "EndOfSequence" else _as_bytes(t) for t in tokens]
    )
    try:
        _TRIES[owner] = trie
    except TypeError:
        pass
    return trie


def _as_bytes(t: Any) -> bytes:
    if isinstance(t, int) and not isinstance(t, bool):
        return bytes([t])
    return bytes(t)


class MaskView(LiveView):
    """What a product of potentials allows after a context: top-k rows, masses, trie, AWRS.

    Build it with `await MaskView.of(potential, context)`; `await view.update(context=...)`
    recomputes. In the browser, a toggle switches between the table and the
    vocabulary's trie (blocked subtrees greyed; click a node to drill in); the
    static HTML shows the trie in a collapsed section below the table.

    Args:
        data: `mask_data` output to draw (a view without a potential).
    """

    _esm = esm("mask.js")

    def __init__(self, data: dict | None = None) -> None:
        super().__init__()
        self._potential: Any = None
        self._context: Any = ()
        self._weights: dict[str, np.ndarray] = {}
        self._boolean: dict[str, bool] = {}
        self._awrs: Any = None
        self._message = ""
        self._settings: dict[str, Any] = {
            "top_k": 20,
            "awrs": None,
            "prefix": b"",
            "depth": None,
            "trie_top_k": None,
            "trie": True,
        }
        self._send_now(data or {"kind": "mask", "rows": [], "factors": []})
        self.on_msg(self._on_msg)

    @classmethod
    async def of(
        cls,
        potential: Any,
        context: Any = (),
        *,
        top_k: int = 20,
        awrs: Any = None,
        prefix: bytes | str = b"",
        depth: int | None = None,
        trie_top_k: int | None = None,
        trie: bool = True,
    ) -> MaskView:
        """The mask of `potential` (or a sampler's target) after `context` (see `mask_data_of`).

        Args:
            potential: a `Potential` (a `Product` gives one column per factor) or a sampler.
            context: a list of the potential's tokens, or text (tokenised by its LM).
            top_k: table rows for the LM's most probable tokens.
            awrs: an `AWRS` sampler (run once on the context) or its `info["awrs"]`.
            prefix: the byte prefix whose subtrie of the vocabulary is drawn
                (default: the root; give a prefix for a 49k vocabulary).
            depth: levels drawn below `prefix` (default: 12 for a small
                vocabulary, 2 for a large one).
            trie_top_k: children drawn per node (default: all of them for a
                small vocabulary, 8 for a large one).
            trie: compute the trie at all.
        """
        view = cls()
        view._potential = potential
        await view.update(
            context=context,
            top_k=top_k,
            awrs=awrs,
            prefix=prefix,
            depth=depth,
            trie_top_k=trie_top_k,
            trie=trie,
        )
        return view

    async def update(self, **changes: Any) -> None:
        """Recompute for a new `context` (or any argument of `of`) and redraw.

        Raises:
            ValueError: for an unknown setting, or a context the potential cannot read.
        """
        unknown = sorted(set(changes) - {"context", *self._settings})
        if unknown:
            raise ValueError(
                f"unknown settings {unknown}; expected context or {sorted(self._settings)}"
            )
        if self._potential is None:
            raise ValueError("this MaskView was built from data; use MaskView.of(potential, ...)")
        self._settings.update({k: v for k, v in changes.items() if k != "context"})
        self._context = changes.get("context", self._context)
        data, self._weights = await mask_data_of(
            self._potential, self._context, top_k=1, awrs=self._settings["awrs"]
        )
        self._boolean = {f["name"]: f["boolean"] for f in data["factors"]}
        self._awrs, self._text = data["awrs"], data["context"]
        self._render()

    def _render(self) -> None:
        st = self._settings
        target = getattr(self._potential, "target", self._potential)
        data = mask_data(
            target.vocab_eos,
            self._weights,
            boolean=self._boolean,
            context=self._text,
            top_k=st["top_k"],
        )
        data["awrs"] = self._awrs
        if st["trie"]:
            data["trie"] = self._trie_data(data, target.vocab_eos, target.factors()[0])
            data["trie"]["error"] = self._message
        self.push(lambda: data, final=True)

    def _trie_data(self, data: dict, tokens: Sequence[Any], owner: Any) -> dict:
        st = self._settings
        small = len(tokens) <= 64
        depth = st["depth"] if st["depth"] is not None else (12 if small else 2)
        top = st["trie_top_k"] or (len(tokens) if small else 8)
        lm = data["lm"]
        ws = np.exp(_log_probs(self._weights[lm])) if lm else np.full(len(tokens), 1 / len(tokens))
        blocked = np.zeros(len(tokens), dtype=bool)
        for w in self._weights.values():
            blocked |= ~(w > -math.inf)
        trie = _trie(owner, tokens)
        return trie_data(trie, ws, st["prefix"], depth, top, data["context"], blocked=blocked)

    def _on_msg(self, _widget: Any, content: dict, _buffers: Any) -> None:
        old = dict(self._settings)
        try:
            self._message = ""
            if "prefix_hex" in content:
                self._settings["prefix"] = bytes.fromhex(content["prefix_hex"])
            if "prefix_text" in content:
                self._settings["prefix"] = _parse_prefix(str(content["prefix_text"]))
            if "depth" in content:
                self._settings["depth"] = int(content["depth"])
            self._render()
        except ValueError as err:  # shown in the view: there is no cell to raise into
            self._settings = old
            self._message = str(err)
            self._render()

    @staticmethod
    def to_html(data: dict) -> str:
        return mask_html(data)
