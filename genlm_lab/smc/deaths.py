"""Why particles died: one row per death, read from a run's step entries.

A particle dies in the step where its log-weight becomes -inf. A model may
say why in its `step_extras`: "killed_by" (the factor, e.g. "JsonSchema",
"critic", "sampler") and "killed_why" (a sentence, e.g. "cut at max_tokens
inside a string at $.name"); `genlm_lab.control.SMC` always does, and adds
"killed_budget" (the tokens the factor was held to, where the run had a
budget). For any other model the factor is "model" and the reason a plain default.

Deaths are not particles: resampling copies live particles over dead ones, so
one slot can die several times in a run. `final_deaths` keeps one death per
particle of the last step (the death of its own line), which is what a
sentence about "every particle died" must count.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from genlm_lab.smc.errors import AllParticlesDied

__all__ = [
    "DEATH_COLUMNS",
    "AllParticlesDied",
    "cut_hint",
    "death_cause",
    "death_rows",
    "deaths_frame",
    "deaths_sentence",
    "final_deaths",
    "most_common_death",
]

#: The columns of a deaths table (`Sequences.deaths`).
DEATH_COLUMNS = ("particle", "step", "factor", "reason")

_DEFAULT_REASON = "its weight became zero (a failed condition or an impossible observation)"

#: What stands for the token in a cause (`death_cause`).
TOKEN_PLACEHOLDER = "<token>"

# A token a reason quotes (as Python's repr writes its label) after "gives" or "after".
_QUOTED_TOKEN = re.compile(r"""\b(gives|after) ('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")""")


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
                    "budget": extra.get("killed_budget"),
                }
            )
        previous = entry
    return rows


def deaths_frame(rows: Sequence[Mapping]) -> Any:
    """The rows as a pandas DataFrame with `DEATH_COLUMNS` (and the particle's text)."""
    import pandas as pd

    columns = [*DEATH_COLUMNS, "text"]
    return pd.DataFrame([[r[c] for c in columns] for r in rows], columns=columns)


def death_cause(reason: str) -> tuple[str, str | None]:
    """A reason's cause, with the token it quotes replaced by `<token>`, and that token.

    "BoolFSA gives ' toilets' weight zero after 2 tokens" and the same with
    ' chairs' are one cause, so deaths are counted by cause, not by token.
    A reason that quotes no token is its own cause (token None).
    """
    found = _QUOTED_TOKEN.search(reason)
    if found is None:
        return reason, None
    start, end = found.span(2)
    return reason[:start] + TOKEN_PLACEHOLDER + reason[end:], found.group(2)


def _key(row: Mapping) -> tuple[str, str]:
    return row["factor"], death_cause(str(row["reason"]))[0]


def most_common_death(rows: Sequence[Mapping]) -> tuple[str, str, int] | None:
    """(factor, cause, count) of the commonest (factor, cause) pair; None without deaths.

    The cause is the reason with its token apart (`death_cause`).
    """
    if not rows:
        return None
    (factor, cause), count = Counter(_key(r) for r in rows).most_common(1)[0]
    return factor, cause, count


def _cause_text(group: Sequence[Mapping], cause: str) -> str:
    """The cause with examples of its tokens, or the reason itself when one token (or none) caused it."""
    tokens = list(dict.fromkeys(death_cause(str(r["reason"]))[1] for r in group))
    if len(tokens) < 2:
        return str(group[0]["reason"])
    shown = ", ".join(str(t) for t in tokens[:3])
    more = f" and {len(tokens) - 3} more" if len(tokens) > 3 else ""
    return f"{cause} (tokens {shown}{more})"


def final_deaths(
    rows: Sequence[Mapping], steps: Sequence[Mapping], parents: Sequence[Sequence[int] | None]
) -> list[Mapping]:
    """The death of each dead particle of the last step, found by walking its line back.

    At most one row per final particle, so a count of them never exceeds the
    particles. A final particle whose line never died has no row.

    Args:
        rows: `death_rows(steps, parents)`.
        steps: a record's step entries.
        parents: `SMCRecord.parents()` of those entries.
    """
    if not steps:
        return []
    at = {(r["step"], r["particle"]): r for r in rows}
    out = []
    for i in range(len(steps[-1]["log_weights"])):
        here = i
        for t in range(len(steps) - 1, -1, -1):
            row = at.get((int(steps[t]["step"]), here))
            if row is not None:
                out.append(row)
                break
            links = parents[t]
            if links is not None:
                here = links[here]
            elif t > 0 and len(steps[t - 1]["log_weights"]) != len(steps[t]["log_weights"]):
                break  # no links and a different size: the line cannot be followed
    return out


def cut_hint(factor: str | None, budget: int | None) -> str:
    """What to do about particles cut at `max_tokens`, for the factor and budget at hand.

    Args:
        factor: the constraint that refused the cut text (None: nothing refused
            it, the text was merely cut short).
        budget: the tokens the run held that factor to (None: no budget).
    """
    if budget is not None and factor is not None:
        return (
            f"the budget of {budget} tokens was too small for {factor} to finish them: raise "
            "max_tokens (budget=False turns budgets off; particles are then cut instead)"
        )
    if factor is not None and factor not in ("model", "sampler", "critic"):
        return (
            f"the budget ran out, not the constraint: raise max_tokens, or keep budget=True "
            f"(the default) so that {factor} refuses texts that cannot end in time"
        )
    return "the budget ran out: raise max_tokens or ask for shorter output"


def deaths_sentence(rows: Sequence[Mapping], n_particles: int | None = None) -> str:
    """One sentence on the deaths: the factor that killed most and the commonest reason.

    Args:
        rows: death rows; with `n_particles`, one per particle (`final_deaths`),
            else every death of the run (a resampled slot may die again, so the
            sentence then counts deaths, not particles).
        n_particles: the particles the rows are out of.
    """
    top = most_common_death(rows)
    if top is None:
        return "no death was recorded"
    by_factor = Counter(r["factor"] for r in rows).most_common(1)[0]
    factor, cause, count = top
    group = [r for r in rows if _key(r) == (factor, cause)]
    reason = _cause_text(group, cause)
    if n_particles is not None:
        head = f"{by_factor[0]} killed {by_factor[1]} of {n_particles} particles"
    else:
        noun = "death" if len(rows) == 1 else "deaths"
        head = f"{by_factor[0]} caused {by_factor[1]} of {len(rows)} {noun}"
    sentence = f"{head}; most common reason ({count} of {len(rows)}): {factor}: {reason}"
    if str(reason).startswith("cut at max_tokens"):
        budgets = [r.get("budget") for r in group]
        budget = budgets[0] if budgets else None
        hint = cut_hint(factor, budget)
        if budget is not None:  # the reason already names the budget and the factor
            hint = "raise max_tokens; budget=False turns budgets off"
        sentence += f" ({hint})"
    return sentence
