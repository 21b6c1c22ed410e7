"""Why particles died: one row per death, read from a run's step entries.

A particle dies in the step where its log-weight becomes -inf. A model may
say why in its `step_extras`: "killed_by" (the factor, e.g. "JsonSchema",
"critic", "sampler") and "killed_why" (a sentence, e.g. "cut at max_tokens
inside a string at $.name"); `genlm_lab.control.SMC` always does. For any
other model the factor is "model" and the reason a plain default.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["DEATH_COLUMNS", "AllParticlesDied", "death_rows", "deaths_frame", "most_common_death"]

#: The columns of a deaths table (`Sequences.deaths`).
DEATH_COLUMNS = ("particle", "step", "factor", "reason")

_DEFAULT_REASON = "its weight became zero (a failed condition or an impossible observation)"


class AllParticlesDied(RuntimeWarning):
    """Every particle of a run has weight zero: the run stops with log_ml = -inf."""


def _weight(value: Any) -> float:
    if isinstance(value, str):
        return float(value.replace("Infinity", "inf"))
    return float(value)


def death_rows(steps: Sequence[Mapping], parents: Sequence[Sequence[int] | None]) -> list[dict]:
    """One dict per death: particle (its index in that step's lists), step, factor, reason, text.

    Args:
        steps: a record's step entries.
        parents: `SMCRecord.parents()` of those entries.
    """
    rows = []
    previous: Mapping | None = None
    for entry, links in zip(steps, parents, strict=True):
        extras = entry.get("extras") or []
        for i, lw in enumerate(entry["log_weights"]):
            if _weight(lw) != -math.inf:
                continue
            if previous is not None and links is not None:
                if _weight(previous["log_weights"][links[i]]) == -math.inf:
                    continue  # died before: its parent was already dead
            extra = extras[i] if i < len(extras) and isinstance(extras[i], Mapping) else {}
            factor = extra.get("killed_by")
            reason = extra.get("killed_why")
            rows.append(
                {
                    "particle": i,
                    "step": int(entry["step"]),
                    "factor": "model" if factor is None else str(factor),
                    "reason": str(reason) if reason else _DEFAULT_REASON,
                    "text": entry["contents"][i],
                }
            )
        previous = entry
    return rows


def deaths_frame(rows: Sequence[Mapping]) -> Any:
    """The rows as a pandas DataFrame with `DEATH_COLUMNS` (and the particle's text)."""
    import pandas as pd

    columns = [*DEATH_COLUMNS, "text"]
    return pd.DataFrame([[r[c] for c in columns] for r in rows], columns=columns)


def most_common_death(rows: Sequence[Mapping]) -> tuple[str, str, int] | None:
    """(factor, reason, count) of the commonest (factor, reason) pair; None without deaths."""
    if not rows:
        return None
    (factor, reason), count = Counter((r["factor"], r["reason"]) for r in rows).most_common(1)[0]
    return factor, reason, count


def deaths_sentence(rows: Sequence[Mapping]) -> str:
    """One sentence on the deaths: the factor that killed most and the commonest reason."""
    top = most_common_death(rows)
    if top is None:
        return "no death was recorded"
    by_factor = Counter(r["factor"] for r in rows).most_common(1)[0]
    factor, reason, count = top
    sentence = (
        f"{by_factor[0]} killed {by_factor[1]} of {len(rows)}; most common reason "
        f"({count} of {len(rows)}): {factor}: {reason}"
    )
    if str(reason).startswith("cut at max_tokens"):
        sentence += (
            " (the budget ran out, not the constraint: raise max_tokens, or for a JSON schema "
            "use WithinBudget(schema, llm, max_tokens) so that documents end in time)"
        )
    return sentence
