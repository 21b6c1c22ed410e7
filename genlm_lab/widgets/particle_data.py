"""The particle view's data: one dict per SMC step entry, built live or from a whole record.

`particle_data` turns normalised step entries (`smc_data.step_entries`) into
the dict `ParticleView` sends to the browser and `particle_html` draws:
rows per particle (weight, state, factors of a `control.SMC` run, where it
was killed and why), the run's summary, the genealogy when done.
`record_data` does it for a finished record.
"""

from __future__ import annotations

import math
from typing import Any

from genlm_lab.smc.record import SMCRecord
from genlm_lab.util import logmeanexp, normalize_log_weights
from genlm_lab.widgets._factor_data import tally_of
from genlm_lab.widgets.smc_data import as_record, genealogy, run_summary, step_entries

__all__ = ["death_reasons", "final_status", "particle_data", "record_data"]


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

    Returns:
        The summary plus the rows (`particles`), the `genealogy` and `n_kept`:
        how many candidates smc_steer's cut kept at the last step (the run's
        particles; the rest are "pruned"), None where no cut dropped any.
        With `factors`: "factor_names", "deaths" ({factor: [steps]}) and per
        row "factors" ({name: summed log-weight}), "critic", "killed"
        ({step, by} or None) and "last" (the newest step's token, factor
        weights and AWRS summary).
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
        genealogy=genealogy(entries) if done else None,
        factor_names=factors["names"] if factors else None,
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
    )
