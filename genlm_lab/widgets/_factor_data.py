"""Per-factor weights of `genlm_lab.control.SMC` particles, read from the step entries' extras.

`control.SMC` puts into each step entry an "extras" list with, per particle,
the drawn token, the log-weight each factor of the target gave it
("factors": {name: logw}), the critic's score, the factor that killed the
particle ("killed_by") and, for AWRS, its trace. `FactorTally` follows the
particles through resampling and keeps, for each particle of the newest
step, the sum of each factor's log-weights along its lineage (its weight
split by factor), the latest critic score, and where and by what it was
killed; it also counts the deaths per factor over the run, and keeps the
temperature of each tempered factor (`Tempered`: 1 / beta; a first step's
"temperatures"). Adding a step costs O(particles x factors): cheap enough
for live views.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["FactorTally", "particle_extra", "tally_of"]


def _num(x: Any) -> float | None:
    if x is None:
        return None
    if isinstance(x, str):
        try:
            return float(x.replace("Infinity", "inf"))
        except ValueError:
            return None
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def _awrs_summary(trace: Any) -> dict | None:
    if not isinstance(trace, Mapping):
        return None
    rejected = [str(t) for t in trace.get("rejected") or []]
    drawn = [str(t) for t in trace.get("drawn") or []]
    return {
        "n_draws": int(trace.get("n_draws", len(drawn))),
        "n_checks": int(trace.get("n_checks", len(drawn))),
        "n_rejected": len(rejected),
        "drawn": drawn[:20],
        "rejected": rejected[:20],
        "logw": _num(trace.get("logw")),
    }


def particle_extra(extra: Any) -> dict | None:
    """One particle's step extras in the form the views draw (None if it did not step)."""
    if not isinstance(extra, Mapping):
        return None
    factors = extra.get("factors") or {}
    return {
        "token": None if extra.get("token") is None else str(extra["token"]),
        "factors": {str(k): _num(v) for k, v in factors.items()},
        "critic": _num(extra.get("critic")),
        "killed_by": None if extra.get("killed_by") is None else str(extra["killed_by"]),
        "awrs": _awrs_summary(extra.get("awrs")),
    }


class FactorTally:
    """Each particle's log-weight split by factor, followed through resampling."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.rows: list[dict] = []
        self.deaths: dict[str, list[int]] = {}
        #: {factor name: temperature} of the tempered factors, as the steps reported them.
        self.temperatures: dict[str, float] = {}
        self._ancestors: list[int] | None = None
        self.seen = False

    def add(self, entry: Mapping, parents: Sequence[int] | None = None) -> None:
        """Take one step entry (raw or decoded); `parents` overrides smc_standard's rule.

        Without `parents`, particle i continues the previous step's particle
        `ancestors[i]` when that step resampled, else its particle i.
        """
        n = len(entry["contents"])
        step = int(entry["step"])
        if parents is None:
            parents = self._ancestors if self._ancestors is not None else range(n)
        prev = self.rows
        rows = []
        for a in (list(parents) + [None] * n)[:n]:
            base = prev[a] if a is not None and 0 <= a < len(prev) else None
            rows.append(
                {
                    "factors": dict(base["factors"]) if base else {},
                    "critic": base["critic"] if base else None,
                    "killed": base["killed"] if base else None,
                    "last": base["last"] if base else None,  # its newest step so far
                }
            )
        extras = entry.get("extras") or []
        for i, raw in enumerate(extras[:n]):
            extra = particle_extra(raw)
            if extra is None:
                continue
            for name, t in (raw.get("temperatures") or {}).items():
                if _num(t) is not None:
                    self.temperatures[str(name)] = _num(t)
            self.seen = True
            row = rows[i]
            row["last"] = extra
            for name, v in extra["factors"].items():
                if name not in self.names:
                    self.names.append(name)
                if v is not None:
                    row["factors"][name] = row["factors"].get(name, 0.0) + v
            if extra["critic"] is not None:
                row["critic"] = extra["critic"]
            if extra["killed_by"] is not None and row["killed"] is None:
                row["killed"] = {"step": step, "by": extra["killed_by"]}
                self.deaths.setdefault(extra["killed_by"], []).append(step)
        self.rows = rows
        anc = entry.get("ancestors")
        self._ancestors = [int(a) for a in anc] if anc is not None else None

    def view(self) -> dict | None:
        """Plain data for `particle_data` (None when no step carried extras)."""
        if not self.seen:
            return None
        return {
            "names": list(self.names),
            "rows": [
                {
                    "factors": {k: r["factors"].get(k, 0.0) for k in self.names},
                    "critic": r["critic"],
                    "killed": r["killed"],
                    "last": r["last"],
                }
                for r in self.rows
            ],
            "deaths": {k: list(v) for k, v in self.deaths.items()},
            "temperatures": dict(self.temperatures),
        }


def tally_of(steps: Sequence[Mapping], parents: Sequence[Sequence[int] | None]) -> FactorTally:
    """A `FactorTally` of every step of a record (with `SMCRecord.parents()`)."""
    tally = FactorTally()
    for entry, ps in zip(steps, parents, strict=True):
        tally.add(entry, ps)
    return tally
