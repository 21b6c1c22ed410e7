"""The particle view's data: one dict per SMC step entry, built live or from a whole record.

`particle_data` turns normalised step entries (`smc_data.step_entries`) into
the dict `ParticleView` sends to the browser and `particle_html` draws:
rows per particle (weight, state, factors of a `control.SMC` run, where it
was killed and why), the run's summary, the genealogy when done, each
resampling's draws (`resampling_draw`: which parent each new particle
copies, how many copies each parent got), and in a conditional SMC run the
retained particle's slot. `record_data` does it for a finished record.
"""

from __future__ import annotations

import math
from typing import Any

from genlm_lab.smc.record import SMCRecord
from genlm_lab.util import logmeanexp, normalize_log_weights
from genlm_lab.widgets._factor_data import tally_of
from genlm_lab.widgets.smc_data import as_record, genealogy, run_summary, step_entries

__all__ = [
    "death_reasons",
    "final_status",
    "particle_data",
    "record_data",
    "resampling_draw",
    "resampling_draws",
    "retained_slot",
]


def particle_data(
    entries: list[dict],
    *,
    run_id: Any = None,
    done: bool = False,
    summary: dict | None = None,
    status: str | None = None,
    factors: dict | None = None,
    reasons: dict | None = None,
    alarms: list | None = None,
    final: dict | None = None,
    resampling_method: str | None = None,
    resamplings: list[dict] | None = None,
    retained: int | None = None,
) -> dict:
    """View data of SMC history entries (the last one gives the rows).

    Args:
        entries: step entries as `smc_data.step_entries` normalises them.
        run_id: the run these entries belong to.
        done: whether the run has ended (then the genealogy is included).
        summary: `run_summary` of the entries if already known (live views
            keep it as they go and pass only the last entry).
        status: how the run ended (the record's final status, e.g.
            "interrupted"); default "finished" when done, else "running".
        factors: `FactorTally.view()` of a `control.SMC` run: each particle's
            log-weight split by factor, where it was killed and by what.
        reasons: `{(step, index): reason}` of the deaths (`death_reasons`).
        alarms: the run's alarms, `(step, kind, sentence)`.
        final: the record's final summary; with `done`, when the last step
            resampled, the rows are the particles the result holds (copies of
            the step's survivors, each with the average weight) and the
            header gives the result's ESS and log_ml.
        resampling_method: the run's resampling scheme (the record's
            `params["resampling_method"]`), named beside the resampling steps.
        resamplings: `resampling_draws` of the run's steps so far, or None to
            read them from `entries`.
        retained: the retained particle's slot in a conditional SMC run
            (`csmc_standard`: 0), or None.

    Returns:
        The summary plus the rows (`particles`), the `genealogy` and `n_kept`:
        how many candidates smc_steer's cut kept at the last step (the run's
        particles; the rest are "pruned"), None where no cut dropped any.
        With `factors`: "factor_names", "deaths" ({factor: [steps]}),
        "factor_temperatures" ({name: temperature} of the tempered factors)
        and per row "factors" ({name: summed log-weight}), "critic",
        "killed" ({step, by} or None) and "last" (the newest step's token,
        factor weights and AWRS summary). "resamplings" lists the draws of
        each resampling; "retained" is the retained slot, marked in its row
        and in the genealogy ("retained": True), whose nodes also count the
        copies each particle got where its step resampled ("children").
    """
    last = entries[-1] if entries else None
    particles = []
    if last is not None:
        weights = normalize_log_weights(p["log_weight"] for p in last["particles"])
        for i, (p, w) in enumerate(zip(last["particles"], weights, strict=True)):
            particles.append(
                {
                    "index": i,
                    "text": p["text"],
                    "weight": float(w),
                    "log_weight": p["log_weight"],
                    "state": p["state"],
                }
            )
    frows = factors["rows"] if factors else []
    if len(frows) == len(particles):
        for row, f in zip(particles, frows, strict=True):
            row.update(f)
            row["rest"] = _rest(row)
    for row in particles:
        killed = row.get("killed")
        if killed and reasons:
            why = reasons.get((killed["step"], row["index"]))
            if why:
                row["killed"] = {**killed, "why": why}
    held = done and last is not None and _resampled_at_the_end(last)
    if held:
        particles = _held(particles, last["ancestors"])
    if retained is not None:  # the slot's, not the path's: a copy of it is a free particle
        for row in particles:
            row["retained"] = row["index"] == retained
    if resamplings is None:
        resamplings = resampling_draws(entries, resampling_method)
    tree = _marked(genealogy(entries), entries, retained) if done else None
    cut = last is not None and last["ancestors"] is not None
    cut = cut and len(last["ancestors"]) < len(last["particles"])
    data = dict(summary) if summary is not None else run_summary(entries)
    data.update(
        kind="particles",
        run_id=run_id,
        done=done,
        status=status or ("finished" if done else "running"),
        step=last["step"] if last else 0,
        particles=particles,
        n_kept=len(last["ancestors"]) if cut else None,
        resampling_method=resampling_method,
        resamplings=resamplings,
        retained=retained,
        genealogy=tree,
        factor_names=factors["names"] if factors else None,
        factor_temperatures=(factors or {}).get("temperatures") or {},
        awrs_column=any((p.get("last") or {}).get("awrs") for p in particles),
        deaths=factors["deaths"] if factors else None,
        alarms=[{"step": int(a[0]), "kind": str(a[1]), "text": str(a[2])} for a in alarms or []],
        held_note=(
            f"the result's particles: step {last['step']}'s survivors after its resampling, "
            "each with the average weight"
            if held
            else None
        ),
    )
    if held and final:
        data["final_ess"] = final.get("ess")
        data["final_log_ml"] = final.get("log_ml")
    return data


def resampling_draw(entry: dict, method: str | None = None) -> dict | None:
    """One resampling's draws, from a step entry (raw or normalised); None if it did not resample.

    Returns:
        {"step", "method" (the entry's scheme, else `method`), "ancestors"
        (the parent of each new particle), "offspring" (how many copies each
        particle of the step got; 0: dropped)}.
    """
    ancestors = entry.get("ancestors")
    if ancestors is None:
        return None
    n = len(entry["particles"]) if "particles" in entry else len(entry["contents"])
    offspring = [0] * n
    for a in ancestors:
        if 0 <= int(a) < n:
            offspring[int(a)] += 1
    return {
        "step": int(entry["step"]),
        "method": entry.get("resampling_method") or method,
        "ancestors": [int(a) for a in ancestors],
        "offspring": offspring,
    }


def resampling_draws(steps: list[dict], method: str | None = None) -> list[dict]:
    """`resampling_draw` of every step that resampled (`method`: the run's scheme)."""
    return [d for d in (resampling_draw(e, method) for e in steps) if d is not None]


def _marked(tree: list[list[dict]], entries: list[dict], retained: int | None) -> list[list[dict]]:
    """The genealogy with the retained slot marked and each resampled node's copies counted."""
    for column, entry in zip(tree, entries, strict=True):
        draw = resampling_draw(entry)
        for i, node in enumerate(column):
            if retained is not None and i == retained:
                node["retained"] = True
            if draw is not None and i < len(draw["offspring"]):
                node["children"] = draw["offspring"][i]
    return tree


def _resampled_at_the_end(last: dict) -> bool:
    """Whether the last step resampled with replacement (not smc_steer's cut)."""
    ancestors = last.get("ancestors")
    return ancestors is not None and len(ancestors) == len(last["particles"])


def _held(rows: list[dict], ancestors: list[int]) -> list[dict]:
    """The rows of the particles after resampling: row `ancestors[i]` for each i, average weight."""
    logs = [r["log_weight"] for r in rows]
    average = logmeanexp(logs) if logs else -math.inf
    out = []
    for i, a in enumerate(ancestors):
        row = {**rows[a], "index": i, "weight": 1.0 / len(ancestors), "log_weight": average}
        row["copy_of"] = a
        if "rest" in row:
            row["rest"] = _rest(row)
        out.append(row)
    return out


def _rest(row: dict) -> float | None:
    """What the factor columns leave out of a particle's log-weight (`particle_html.REST_NOTE`)."""
    factors = row.get("factors")
    if not factors or not math.isfinite(row["log_weight"]):
        return None
    total = sum(v for v in factors.values() if v is not None)
    critic = row.get("critic") or 0.0
    if not math.isfinite(total) or not math.isfinite(critic):
        return None
    return row["log_weight"] - total - critic


def death_reasons(steps: list[dict]) -> dict[tuple[int, int], str]:
    """`{(step, particle): reason}` from raw step entries' extras ("killed_why")."""
    out = {}
    for entry in steps:
        for i, extra in enumerate(entry.get("extras") or []):
            if isinstance(extra, dict) and extra.get("killed_why"):
                out[(int(entry["step"]), i)] = str(extra["killed_why"])
    return out


def final_status(record: SMCRecord) -> str:
    """How a recorded run ended ("finished", "interrupted", ...).

    "unfinished" for a record without a final entry: a JSON-lines file read
    while its run goes on, or one whose process was killed.
    """
    if record.final is None:
        return "unfinished"
    return str(record.final.get("status") or "finished")


def record_data(record: Any) -> dict:
    """`particle_data` of a whole record: factors, death reasons, alarms, the held particles."""
    rec = as_record(record)
    run_id, entries = step_entries(rec)
    return particle_data(
        entries,
        run_id=run_id,
        done=True,
        status=final_status(rec),
        factors=tally_of(rec.steps, rec.parents()).view(),
        reasons=death_reasons(rec.steps),
        alarms=rec.alarms,
        final=rec.final,
        resampling_method=(rec.params or {}).get("resampling_method"),
        resamplings=resampling_draws(rec.steps, (rec.params or {}).get("resampling_method")),
        retained=retained_slot(rec.params or {}, rec.steps),
    )


def retained_slot(params: dict, steps: list[dict]) -> int | None:
    """The retained particle's slot of a conditional SMC run (params or step entries), or None."""
    slot = params.get("retained")
    if slot is None:
        slot = next((e["retained"] for e in steps if e.get("retained") is not None), None)
    return None if slot is None else int(slot)
