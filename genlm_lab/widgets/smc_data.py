"""Read SMC records and observer entries into the plain lists the particle views draw.

The SMC layer owns `SMCRecord` and its step entries (see `genlm_lab.smc.record`);
this module only reads them: an `SMCRecord`, its dict / JSON form or a path to
its file, into one normalised entry per step: {step, particles: [{text,
log_weight, increment, state}], ess, log_ml, resampled, ancestors}. A state is
"active", "finished", "dead", or "pruned" for a candidate that smc_steer's cut
dropped (its step kept fewer particles than it had, and not this one).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from os import PathLike
from typing import Any

from genlm_lab.smc.record import SMCRecord
from genlm_lab.util import escape_bytes, normalize_log_weights

_KEYS = ("contents", "log_weights", "weight_increments", "finished")


def awrs_counts(n_checks: Any, n_rejected: Any) -> str:
    """ "3 checked, 1 rejected": the tokens AWRS checked against the constraint, and those refused.

    Not its draw count: the estimator counts every i.i.d. draw, and draws that
    would repeat a rejected token are skipped in one geometric jump, so that
    count can be in the hundreds of millions for a few thousand checks.
    """
    return f"{int(n_checks or 0):,} checked, {int(n_rejected or 0):,} rejected"


def as_record(record: Any) -> SMCRecord:
    """An `SMCRecord` from a record, its dict / JSON text, or a path to its JSON file.

    Raises:
        ValueError: if the value is none of these, or the file is not a record.
    """
    if isinstance(record, SMCRecord):
        return record
    if isinstance(record, PathLike) or (
        isinstance(record, str) and not record.lstrip().startswith("{")
    ):
        where = repr(str(record))
        try:
            return SMCRecord.load(record)
        except FileNotFoundError:
            raise ValueError(f"SMC record file {where} does not exist") from None
        except UnicodeDecodeError:
            raise ValueError(f"{where} is not an SMC record: it is not UTF-8 text") from None
        except (KeyError, TypeError) as err:
            raise ValueError(_not_a_record(where, err)) from None
    if isinstance(record, str):
        try:
            return SMCRecord.from_json(record)
        except (KeyError, TypeError) as err:
            raise ValueError(_not_a_record("JSON text", err)) from None
    if isinstance(record, Mapping):
        try:
            return SMCRecord.from_dict(dict(record))
        except (KeyError, TypeError) as err:
            raise ValueError(_not_a_record("SMC record dict", err)) from None
    raise ValueError(
        f"expected an SMCRecord, its dict or JSON, or a path; got {type(record).__name__}"
    )


def _not_a_record(where: str, err: Exception) -> str:
    """The message for a record that `SMCRecord.from_dict` could not read."""
    if isinstance(err, KeyError):  # a missing field, or a value no float reads (e.g. "abc")
        return f"{where} is not an SMC record: a field is missing or malformed: {err}"
    return f"{where} is not an SMC record: a field has the wrong type ({err})"


_CONTROL = re.compile("[\\\\\x00-\x1f\x7f\udc80-\udcff]")
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\\": "\\\\"}


def _escape_char(m: re.Match) -> str:
    c = m.group()
    if c in _NAMED:
        return _NAMED[c]
    code = ord(c)
    return f"\\x{code - 0xDC00 if code >= 0xDC80 else code:02x}"


def display_text(text: Any) -> str:
    """Particle text for display: control and invalid bytes as escapes (\\n, \\xff)."""
    if isinstance(text, (bytes, bytearray)):
        return escape_bytes(bytes(text))
    text = str(text)
    if text.isprintable() and "\\" not in text:  # nothing to escape: the common case, fast
        return text
    quick = _CONTROL.sub(_escape_char, text)  # control chars and surrogate-escaped bytes
    if quick.isprintable():
        return quick
    try:
        return escape_bytes(str(text).encode("utf-8", "surrogateescape"))
    except UnicodeEncodeError:
        return escape_bytes(str(text).encode("utf-8", "backslashreplace"))


def _float(x: Any) -> float:
    if x is None:
        return -math.inf
    if isinstance(x, str):
        return float(x.replace("Infinity", "inf"))
    return float(x)


def check_entry(raw: Mapping, where: str = "step entry") -> int:
    """The particle count of a step entry, after checking its fields (cheap: no texts read).

    Raises:
        ValueError: if a field is missing or the per-particle lists differ in length.
    """
    if not isinstance(raw, Mapping):
        raise ValueError(f"{where} is a {type(raw).__name__}; expected an SMCRecord step entry")
    missing = [k for k in (*_KEYS, "step") if k not in raw]
    if missing:
        raise ValueError(f"{where} lacks {missing}; expected an SMCRecord step entry")
    n = len(raw["contents"])
    lengths = {k: len(raw[k]) for k in _KEYS}
    if any(v != n for v in lengths.values()):
        raise ValueError(f"{where}: per-particle lists differ in length: {lengths}")
    return n


def _step_number(raw: Mapping, where: str) -> int:
    try:
        return int(raw["step"])
    except (TypeError, ValueError):
        raise ValueError(f"{where}: step {raw['step']!r} is not an integer") from None


def normalize_entry(raw: Mapping, where: str = "step entry") -> dict:
    """One step entry (as observers receive it) in the form the views draw.

    Raises:
        ValueError: if a field is missing, the per-particle lists differ in
            length, or ancestors name particles the step does not have.
    """
    n = check_entry(raw, where)
    ancestors = raw.get("ancestors")
    if ancestors is not None:
        ancestors = [int(a) for a in ancestors]
        if any(not 0 <= a < n for a in ancestors):
            raise ValueError(f"{where}: ancestors {ancestors} name particles outside 0..{n - 1}")
    # A cut (smc_steer keeps some of its candidates) names fewer particles than the step has;
    # resampling with replacement (smc_standard) names as many as it has.
    kept = set(ancestors) if ancestors is not None and len(ancestors) < n else None
    parts = []
    extras = raw.get("extras") or [None] * n
    for i, (text, lw, inc, fin) in enumerate(zip(*(raw[k] for k in _KEYS), strict=True)):
        lw = _float(lw)
        state = "dead" if lw == -math.inf else "finished" if fin else "active"
        if kept is not None and i not in kept and state != "dead":
            state = "pruned"
        part = {
            "text": display_text(text),
            "log_weight": lw,
            "increment": _float(inc),
            "state": state,
        }
        extra = extras[i] if i < len(extras) else None
        if isinstance(extra, Mapping):  # control.SMC: the drawn token and what killed it
            part["token"] = None if extra.get("token") is None else str(extra["token"])
            part["killed_by"] = extra.get("killed_by")
            aw = extra.get("awrs")
            if isinstance(aw, Mapping):  # AWRS: this step's checks, for the genealogy tooltip
                part["awrs"] = "AWRS " + awrs_counts(
                    aw.get("n_checks", len(aw.get("drawn") or [])), len(aw.get("rejected") or [])
                )
        parts.append(part)
    return {
        "step": _step_number(raw, where),
        "particles": parts,
        "ess": _float(raw.get("ess")),
        "log_ml": _float(raw.get("log_ml")),
        "resampled": bool(raw.get("resampled", ancestors is not None)),
        "ancestors": ancestors,
    }


def step_entries(record: Any, *, run_id: str | None = None) -> tuple[str, list[dict]]:
    """The run id and normalised step entries of an SMC record.

    Args:
        record: an `SMCRecord`, its dict or JSON, or a path to its file.
        run_id: if given, the record must come from this run.

    Raises:
        ValueError: for a malformed record, or one from a different run.
    """
    rec = as_record(record)
    if run_id is not None and rec.run_id != run_id:
        raise ValueError(
            f"record of run {rec.run_id!r} does not belong to this view's run {run_id!r}"
        )
    entries = [normalize_entry(s, f"step entry {i}") for i, s in enumerate(rec.steps)]
    for entry, parents in zip(entries, rec.parents(), strict=True):
        entry["parents"] = parents
    return rec.run_id, entries


def summary_point(raw: Mapping) -> tuple[int, float, float, bool]:
    """(step, ess, log_ml, resampled) of a raw step entry, without touching its texts.

    Raises:
        ValueError: if the entry is malformed (see `check_entry`).
    """
    check_entry(raw)
    try:
        return (
            int(raw["step"]),
            _float(raw.get("ess")),
            _float(raw.get("log_ml")),
            bool(raw.get("resampled", raw.get("ancestors") is not None)),
        )
    except (TypeError, ValueError) as err:
        raise ValueError(f"step entry {raw.get('step')!r} has a non-numeric field: {err}") from None


def run_summary(entries: list[dict]) -> dict:
    """ESS and log_ml per step, the steps that resampled, and the particle count."""
    return {
        "n_particles": len(entries[-1]["particles"]) if entries else 0,
        "steps": [e["step"] for e in entries],
        "ess": [e["ess"] for e in entries],
        "log_ml": [e["log_ml"] for e in entries],
        "resampled": [e["step"] for e in entries if e["resampled"]],
    }


def genealogy(entries: list[dict]) -> list[list[dict]]:
    """One column per step: each particle with its normalised weight and its parent.

    The parent is an index into the previous column (None in the first), as
    `SMCRecord.parents` gives it: `step_entries` stores it in each entry. For
    entries without it, particle i descends from particle `ancestors[i]` of
    the previous step when that step resampled, else from its particle i.

    Raises:
        ValueError: if a parent names no particle of the previous step.
    """
    out = []
    for t, e in enumerate(entries):
        ws = normalize_log_weights(p["log_weight"] for p in e["particles"])
        parents = e["parents"] if "parents" in e else _parents_by_index(entries, t)
        if t and parents is not None:
            n_prev = len(entries[t - 1]["particles"])
            if len(parents) != len(ws) or any(not 0 <= a < n_prev for a in parents):
                raise ValueError(
                    f"step {e['step']}: parents {parents} do not give one particle of the "
                    f"previous step (0..{n_prev - 1}) to each of its {len(ws)} particles"
                )
        col = []
        for i, (p, w) in enumerate(zip(e["particles"], ws, strict=True)):
            parent = parents[i] if t and parents is not None else None
            col.append({**p, "weight": float(w), "parent": parent})
        out.append(col)
    return out


def _parents_by_index(entries: list[dict], t: int) -> list[int] | None:
    """smc_standard's parents of step t: the previous step's ancestors, else the same index."""
    if t == 0:
        return None
    prev = entries[t - 1]
    if prev["ancestors"] is not None:
        return prev["ancestors"]
    return list(range(len(prev["particles"])))
