"""The ensemble view: each final particle's text, every token coloured by which model chose it.

An ensemble run (`ByteEnsembleTokenSampler`, `EnsembleSMC`) records, in each
step entry's extras, how the two models saw the token drawn ("ensemble":
`p1`, `p2`, each model's probability of it, and `share1 = p1 / (p1 + p2)`).
`ensemble_data` follows every particle of the last step back through
resampling (`SMCRecord.parents()`) and lists its tokens with those numbers;
`ensemble_html` draws one row per particle, heaviest first, each token on a
background that runs from model 1's colour (share 1) to model 2's (share 0),
its numbers in the tooltip. Only the record is read: nothing is recomputed.
"""

from __future__ import annotations

import math
from typing import Any

from genlm_lab.util import normalize_log_weights
from genlm_lab.widgets.render import CATEGORY_COLOURS, esc, fmt, table, wrap
from genlm_lab.widgets.smc_data import as_record

__all__ = ["EnsembleView", "ensemble_data", "ensemble_html"]

_COLOURS = (CATEGORY_COLOURS[0], CATEGORY_COLOURS[1])  # model 1 blue, model 2 orange
_ROWS = 12


def _token(extra: Any) -> dict | None:
    """One step's token with the models' view of it (None where the particle did not step)."""
    if not isinstance(extra, dict) or extra.get("token") is None:
        return None
    shares = extra.get("ensemble") if isinstance(extra.get("ensemble"), dict) else {}
    out: dict[str, Any] = {"token": str(extra["token"])}
    for key in ("p1", "p2", "share1"):
        value = shares.get(key)
        out[key] = None if value is None else float(value)
    return out


def ensemble_data(record: Any, labels: tuple[str, str] = ("model 1", "model 2")) -> dict:
    """Plain data of the view: the last step's particles, each with its tokens' shares.

    Args:
        record: an `SMCRecord`, its dict / JSON text, or a path to its file.
        labels: what to call the two models.

    Returns:
        {"labels", "particles": [{"index", "text", "log_weight", "weight", "tokens":
        [{"token", "p1", "p2", "share1"}], "mean_share1"}], "mean_share1"}; a token
        without the models' numbers (an EOS forced at max_tokens) has None there;
        "mean_share1" averages over the tokens that have one (the run's: weighted by
        the particles' normalised weights), None if none does.

    Raises:
        ValueError: if `record` is not an SMC record.
    """
    rec = as_record(record)
    lineages: list[list[dict]] = []
    for entry, parents in zip(rec.steps, rec.parents(), strict=True):
        n = len(entry["contents"])
        extras = list(entry.get("extras") or []) + [None] * n
        new = []
        for i in range(n):
            parent = i if parents is None else parents[i]
            base = lineages[parent] if parents is not None and parent is not None else []
            token = _token(extras[i])
            new.append(base + [token] if token is not None else list(base))
        lineages = new
    last = rec.steps[-1] if rec.steps else {"contents": [], "log_weights": []}
    weights = normalize_log_weights(last["log_weights"]) if last["contents"] else []
    particles = []
    for i, tokens in enumerate(lineages):
        shares = [t["share1"] for t in tokens if t["share1"] is not None]
        particles.append(
            {
                "index": i,
                "text": last["contents"][i],
                "log_weight": float(last["log_weights"][i]),
                "weight": float(weights[i]),
                "tokens": tokens,
                "mean_share1": sum(shares) / len(shares) if shares else None,
            }
        )
    weighed = [(p["weight"], p["mean_share1"]) for p in particles if p["mean_share1"] is not None]
    total = sum(w for w, _ in weighed)
    overall = sum(w * s for w, s in weighed) / total if total > 0 else None
    return {"labels": list(labels), "particles": particles, "mean_share1": overall}


def _mix(share: float) -> str:
    """The colour between model 2's (share 0) and model 1's (share 1), as css rgb()."""
    rgb = [
        [int(c[k : k + 2], 16) for k in (1, 3, 5)] for c in (_COLOURS[1], _COLOURS[0])
    ]  # share 0 -> model 2, share 1 -> model 1
    mixed = [round(a + (b - a) * share) for a, b in zip(rgb[0], rgb[1], strict=True)]
    return f"rgb({mixed[0]},{mixed[1]},{mixed[2]})"


def _token_html(token: dict, labels: list[str]) -> str:
    share = token["share1"]
    if share is None:
        return f"<span class='genlm-tok' title='no model numbers'>{esc(token['token'])}</span>"
    title = (
        f"{labels[0]}: p={fmt(token['p1'])}, {labels[1]}: p={fmt(token['p2'])}, "
        f"{labels[0]}'s share={fmt(share)}"
    )
    return (
        f"<span class='genlm-tok' data-share1='{share:.4f}' title='{esc(title)}' "
        f"style='background:{_mix(share)};color:#fff'>{esc(token['token'])}</span>"
    )


def ensemble_html(data: dict) -> str:
    """Static HTML of `ensemble_data`'s output: a legend and one row per particle."""
    labels = data["labels"]
    particles = sorted(data["particles"], key=lambda p: -p["weight"])
    rows = [
        "<tr>"
        f"<td>{p['index']}</td><td>{esc(fmt(p['weight']))}</td>"
        f"<td>{esc(fmt(p['mean_share1']))}</td>"
        f"<td>{''.join(_token_html(t, labels) for t in p['tokens'])}</td>"
        "</tr>"
        for p in particles[:_ROWS]
    ]
    more = len(particles) - len(rows)
    overall = data["mean_share1"]
    legend = (
        f"<p><span style='background:{_COLOURS[0]};color:#fff'>&nbsp;{esc(labels[0])}&nbsp;</span>"
        f" … <span style='background:{_COLOURS[1]};color:#fff'>&nbsp;{esc(labels[1])}&nbsp;</span>"
        f": each token's colour is {esc(labels[0])}'s share p1 / (p1 + p2) of the two models' "
        "probabilities of it (hover for both). "
        f"Mean share of {esc(labels[0])}, by particle weight: {esc(fmt(overall))}.</p>"
    )
    note = f"<p>… {more} lighter particles not shown</p>" if more > 0 else ""
    body = legend + table(["particle", "weight", f"{labels[0]}'s share", "tokens"], rows) + note
    return wrap(body, "ensemble")


class EnsembleView:
    """The ensemble view of a record, shown by Jupyter as static HTML.

    Args:
        record: as for `ensemble_data`.
        labels: what to call the two models.
    """

    def __init__(self, record: Any, labels: tuple[str, str] = ("model 1", "model 2")) -> None:
        self.data = ensemble_data(record, labels)

    def _repr_html_(self) -> str:
        return ensemble_html(self.data)

    def __repr__(self) -> str:
        share = self.data["mean_share1"]
        said = "no shares" if share is None or math.isnan(share) else f"mean share {share:.3f}"
        return f"<EnsembleView: {len(self.data['particles'])} particles, {said}>"
