"""Read SMC records and observer entries into the plain lists the particle views draw.

The SMC layer owns `SMCRecord` and its JSON; this module only reads it (an
object with `to_dict()`, a dict, or a path to a JSON file) into one entry per
step: {step, particles: [{text, log_weight, increment, state}], ess, log_ml,
resampled, ancestors}.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from os import PathLike
from pathlib import Path
from typing import Any

from genlm_lab.util import escape_bytes, logsumexp, normalize_log_weights


def _as_dict(obj: Any) -> Any:
    if isinstance(obj, (str, PathLike)):
        path = Path(obj)
        if not path.is_file():
            raise ValueError(f"SMC record file {str(path)!r} does not exist")
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as err:
            raise ValueError(f"{str(path)!r} is not a JSON SMC record: {err}") from None
    if hasattr(obj, "to_dict") and callable(obj.to_dict):
        return obj.to_dict()
    return obj


def _num(x: Any) -> float:
    if x is None:
        return -math.inf
    if isinstance(x, str):
        return float(x.replace("Infinity", "inf"))
    return float(x)


def _first(d: Mapping, *keys: str, default: Any = None) -> Any:
    for k in keys:
        if k in d:
            return d[k]
    return default


def display_text(text: Any) -> str:
    """Particle text for display: control and invalid bytes as escapes (\\n, \\xff)."""
    if isinstance(text, (bytes, bytearray)):
        return escape_bytes(bytes(text))
    try:
        return escape_bytes(str(text).encode("utf-8", "surrogateescape"))
    except UnicodeEncodeError:
        return escape_bytes(str(text).encode("utf-8", "backslashreplace"))


def _particle(p: Any, where: str) -> dict:
    p = _as_dict(p)
    if not isinstance(p, Mapping):
        raise ValueError(f"{where}: expected a particle dict, got {type(p).__name__}")
    lw = _num(_first(p, "log_weight", "weight"))
    finished = bool(_first(p, "finished", "done", default=False))
    state = p.get("state") or ("dead" if lw == -math.inf else "finished" if finished else "active")
    return {
        "text": display_text(_first(p, "text", "string", default="")),
        "log_weight": lw,
        "increment": _num(_first(p, "increment", "weight_increment", "log_increment", default=0.0)),
        "state": str(state),
    }


def _entry(raw: Any, index: int) -> dict:
    raw = _as_dict(raw)
    if not isinstance(raw, Mapping) or "particles" not in raw:
        raise ValueError(
            f"SMC step entry {index} must be a dict with a 'particles' list, got {raw!r:.80}"
        )
    parts = [_particle(p, f"step {index}, particle {i}") for i, p in enumerate(raw["particles"])]
    lws = [p["log_weight"] for p in parts]
    ess = _first(raw, "ess", "ESS")
    if ess is None:
        total = logsumexp(lws)
        ess = math.exp(2 * total - logsumexp([2 * w for w in lws])) if total > -math.inf else 0.0
    ancestors = raw.get("ancestors")
    if ancestors is not None:
        ancestors = [int(a) for a in ancestors]
        if len(ancestors) != len(parts) or any(not 0 <= a < len(parts) for a in ancestors):
            raise ValueError(
                f"step {index}: ancestors {ancestors} must name one of the {len(parts)} "
                "particles for each particle"
            )
    return {
        "step": int(raw.get("step", index)),
        "particles": parts,
        "ess": float(ess),
        "log_ml": _num(_first(raw, "log_ml", "log_ml_estimate", default=None)),
        "resampled": bool(raw.get("resampled", ancestors is not None)),
        "ancestors": ancestors,
    }


def step_entries(record: Any, *, run_id: Any = None) -> tuple[Any, list[dict]]:
    """The run id and normalised step entries of an SMC record.

    Args:
        record: an `SMCRecord`, its dict / JSON form, or a path to its JSON file.
        run_id: if given, the record must come from this run.

    Raises:
        ValueError: for a malformed record, or one from a different run.
    """
    data = _as_dict(record)
    if not isinstance(data, Mapping):
        raise ValueError(f"expected an SMC record (dict or SMCRecord), got {type(data).__name__}")
    steps = _first(data, "steps", "history")
    if steps is None:
        raise ValueError(f"SMC record has no 'steps' (or 'history') list; keys are {sorted(data)}")
    rid = data.get("run_id")
    if run_id is not None and rid is not None and rid != run_id:
        raise ValueError(f"record of run {rid!r} does not belong to run {run_id!r}")
    entries = [_entry(raw, i) for i, raw in enumerate(steps)]
    return rid, entries


def run_summary(entries: list[dict]) -> dict:
    """ESS and log_ml per step, the steps that resampled, and the particle count."""
    return {
        "n_particles": len(entries[-1]["particles"]) if entries else 0,
        "ess": [e["ess"] for e in entries],
        "log_ml": [e["log_ml"] for e in entries],
        "resampled": [e["step"] for e in entries if e["resampled"]],
    }


def genealogy(entries: list[dict]) -> list[list[dict]]:
    """One column per step: each particle with its normalised weight and its parent.

    Particle i at step t descends from `entries[t-1]["ancestors"][i]` when step
    t-1 resampled, else from particle i of step t-1.
    """
    out = []
    for t, e in enumerate(entries):
        ws = normalize_log_weights(p["log_weight"] for p in e["particles"])
        prev = entries[t - 1] if t else None
        col = []
        for i, (p, w) in enumerate(zip(e["particles"], ws, strict=True)):
            if prev is None:
                parent = None
            elif prev["ancestors"] is not None:
                parent = prev["ancestors"][i] if i < len(prev["ancestors"]) else None
            else:
                parent = i if i < len(prev["particles"]) else None
            col.append({**p, "weight": float(w), "parent": parent})
        out.append(col)
    return out
