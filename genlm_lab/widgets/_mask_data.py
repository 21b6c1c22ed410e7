"""The pure half of `MaskView`: factor weights in, view data out, and its static HTML.

`mask_data` takes the next-token log-weights each factor of a potential gives
after one context (arrays over `vocab_eos`) and returns plain data: the LM's
top-k tokens, which factors block each (weight -inf), the allowed and blocked
mass and log Z. `mask_html` draws it for nbviewer, GitHub and nbval.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from genlm_lab.widgets._awrs import awrs_html, awrs_trace
from genlm_lab.widgets.render import badge, bar, esc, fmt, table, token_text, wrap
from genlm_lab.widgets.trie_view import trie_html

__all__ = ["mask_data", "mask_html", "mask_summary", "normalized_logprobs"]


def normalized_logprobs(weights: np.ndarray) -> np.ndarray:
    """Log-weights minus their log-sum-exp (all -inf stays -inf)."""
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
    logp = normalized_logprobs(ws[lm]) if lm is not None else np.full(n, -math.log(n))
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
    for name, rows in (data.get("coverage") or {}).items():
        late = [r for r in rows if r["where"] == "completion"]
        lines = "".join(
            f"<li>{esc(r['path'])} <b>{esc(r['keyword'])}</b>: {esc(r['where'])}"
            f"{' (' + esc(r['note']) + ')' if r['note'] else ''}</li>"
            for r in rows
        )
        body += (
            f"<details class='genlm-coverage'><summary>{esc(name)}: {len(rows) - len(late)} "
            f"constraints in the mask, {len(late)} checked only at completion</summary>"
            f"<ul>{lines}</ul></details>"
        )
    if data.get("trie"):
        body += (
            "<details class='genlm-mask-trie'><summary>vocabulary trie (blocked subtrees "
            "greyed)</summary>" + trie_html(data["trie"]) + "</details>"
        )
    return wrap(body, "mask")
