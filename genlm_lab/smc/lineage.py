"""Which particle of a step continues which particle of the step before it (`step_links`).

Without resampling particle i continues particle i; after resampling,
particle `ancestors[i]`; smc_steer's candidates are the kept particles, each
repeated `n_beam` times (once where it had finished). `SMCRecord.parents()`
and the alarms' genealogy checks both read the links from here.
"""

from __future__ import annotations

import math
from typing import Any

from genlm_lab.smc.record_json import to_float

__all__ = ["step_links"]


def _steps_on(entry: dict, i: int) -> bool:
    """Whether particle i of a step entry is still alive (neither finished nor of weight zero)."""
    return not entry["finished"][i] and to_float(entry["log_weights"][i], "log_weights") > -math.inf


def _gives(ancestors: list | None, steer: bool) -> str:
    if ancestors is None:
        return "had"
    return "kept particles that make" if steer else "resampled into"


def step_links(
    prev: dict, entry: dict, steer: bool, beam: Any, where: str = "previous step", t: int = 1
) -> list[int]:
    """The parent (an index into `prev`'s lists) of each particle of `entry`, the step after it.

    Raises:
        ValueError: if `prev`'s ancestors name particles it lacks, or the counts do not fit.
    """
    n_prev, n = len(prev["contents"]), len(entry["contents"])
    ancestors = prev.get("ancestors")
    if ancestors is None:
        links = list(range(n_prev))
    else:
        links = [int(a) for a in ancestors]
        bad = [a for a in links if not 0 <= a < n_prev]
        if bad:
            raise ValueError(f"{where}: ancestors {bad} name particles outside 0..{n_prev - 1}")
        if steer:
            if not isinstance(beam, int) or beam < 1:
                raise ValueError(
                    f"smc_steer record lacks a positive int params['n_beam'] (got {beam!r})"
                )
            links = [a for a in links for _ in range(beam if _steps_on(prev, a) else 1)]
    if len(links) != n:
        raise ValueError(
            f"step entry {t} (step {entry.get('step', t + 1)}) has {n} particles, but "
            f"{where} {_gives(ancestors, steer)} {len(links)}; the record is inconsistent"
        )
    return links
