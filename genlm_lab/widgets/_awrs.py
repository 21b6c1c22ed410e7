"""AWRS traces: the tokens one adaptive-weighted-rejection-sampling step drew, in order.

AWRS (`genlm_lab.control.sampler.awrs`) draws tokens from the LM, checks each against
the constraint, and stops at an accepted one; its log-weight estimates the
allowed mass that a full mask would give exactly. Its `info["awrs"]` dict
({"drawn", "accepted", "rejected", "n_draws", "n_checks", "logw"}) is read here
into the plain data `MaskView` and `ParticleView` draw.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from genlm_lab.widgets.render import esc, fmt, token_text


def _label(token: Any) -> str:
    """A drawn token as the mask table shows it (records hold text: spaces become ␣)."""
    return token.replace(" ", "␣") if isinstance(token, str) else token_text(token)


__all__ = ["awrs_html", "awrs_summary", "awrs_trace"]


def _float(x: Any) -> float | None:
    if x is None:
        return None
    if isinstance(x, str):
        return float(x.replace("Infinity", "inf"))
    return float(x)


def awrs_trace(info: Mapping, allowed_mass: float | None = None) -> dict:
    """Plain data of one AWRS step: each draw in order with its verdict, and the weights.

    Args:
        info: `info["awrs"]` of `AWRS.sample_with_info` (or an SMC step's extras["awrs"]).
        allowed_mass: the exact allowed mass (from a full mask), if known, to compare.

    Returns:
        {"draws": [{"token", "accepted"}], "n_draws", "n_checks", "logw", "exact_logw",
        "n_accepted", "n_rejected"}.
    """
    if not isinstance(info, Mapping):
        raise ValueError(f"an AWRS trace is a dict (info['awrs']), got {type(info).__name__}")
    rejected = [_label(t) for t in info.get("rejected") or []]
    accepted = [_label(t) for t in info.get("accepted") or []]
    drawn = [_label(t) for t in info.get("drawn") or []] or rejected + accepted
    left = list(rejected)
    draws = []
    for t in drawn:  # a token rejected once is not drawn again; match each verdict once
        bad = t in left
        if bad:
            left.remove(t)
        draws.append({"token": t, "accepted": not bad})
    exact = None
    if allowed_mass is not None:
        exact = math.log(allowed_mass) if allowed_mass > 0 else -math.inf
    return {
        "draws": draws,
        "n_draws": int(info.get("n_draws", len(drawn))),
        "n_checks": int(info.get("n_checks", len(drawn))),
        "logw": _float(info.get("logw")),
        "exact_logw": exact,
        "n_accepted": len(accepted),
        "n_rejected": len(rejected),
    }


def awrs_summary(trace: Mapping) -> str:
    """One line: tokens checked and rejected, the estimator's draws, the log-weight (vs exact).

    The draw count is the estimator's: repeats of a rejected token are counted in
    one geometric jump, never made, so it can be far larger than the vocabulary.
    """
    line = (
        f"AWRS: {trace['n_checks']:,} checked, {trace['n_rejected']:,} rejected "
        f"(the estimate counts {trace['n_draws']:,} draws, repeats skipped in one jump); "
        f"log w {fmt(trace['logw'], 3)}"
    )
    if trace.get("exact_logw") is not None:
        line += f" (exact log allowed mass {fmt(trace['exact_logw'], 3)})"
    return line


def awrs_html(trace: Mapping) -> str:
    """Static HTML of `awrs_trace`: the summary and the draws as tokens marked ✓ / ✗."""
    boxes = "".join(
        f"<span class='genlm-tok {'genlm-accepted' if d['accepted'] else 'genlm-rejected'}' "
        f"title='{'accepted' if d['accepted'] else 'rejected'}'>"
        f"{'✓' if d['accepted'] else '✗'} {esc(d['token'])}</span>"
        for d in trace["draws"]
    )
    return (
        "<div class='genlm-awrs'><div class='genlm-title'>AWRS trace (draws in order)</div>"
        f"<div class='genlm-note genlm-awrs-summary'>{esc(awrs_summary(trace))}</div>"
        f"<div class='genlm-awrs-draws'>{boxes}</div></div>"
    )
