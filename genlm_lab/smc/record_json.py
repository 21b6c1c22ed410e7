"""An `SMCRecord` as JSON: the float encoding, step entries read back, the JSON-lines writer.

In JSON, -inf / inf / NaN floats are the strings "-Infinity" / "Infinity" /
"NaN" (both `float()` and JavaScript's `Number()` read them back). With
`json_file`, inference writes the record as JSON lines (header, one line per
step, final) as it goes, so an interrupted run keeps the steps it finished;
`SMCRecord.load` reads both forms.
"""

from __future__ import annotations

import json
import math
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from genlm_lab.smc.record import SMCRecord

__all__ = ["RecordWriter", "decode_entry", "decode_profile", "dumps", "encode", "to_float"]

_LIST_FLOATS = ("log_weights", "weight_increments")
_SCALAR_FLOATS = ("ess", "log_ml")
_NONFINITE = {"-Infinity": -math.inf, "Infinity": math.inf, "NaN": math.nan}


def encode(value: Any) -> Any:
    """`value` with its non-finite floats (at any depth) as the strings JSON allows."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    return value


def to_float(value: Any, key: str) -> float:
    """A number of the record, or one ValueError naming its field."""
    if isinstance(value, str) and value in _NONFINITE:
        return _NONFINITE[value]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    raise ValueError(f"record field {key!r} holds {value!r}, not a number")


_EXTRA_FLOATS = ("logw", "logZ", "critic")


def _maybe_float(value: Any, key: str) -> Any:
    return None if value is None else to_float(value, key)


def _decode_extras(value: Any) -> Any:
    """Extras with their float fields (by key, at any depth) read back; the rest as stored."""
    if isinstance(value, list):
        return [_decode_extras(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for key, item in value.items():
        if key in _EXTRA_FLOATS:
            out[key] = _maybe_float(item, f"extras.{key}")
        elif key in ("factors", "temperatures") and isinstance(item, dict):
            out[key] = {k: _maybe_float(v, f"extras.{key}") for k, v in item.items()}
        else:
            out[key] = _decode_extras(item)
    return out


def decode_entry(entry: dict) -> dict:
    """A step entry (or final summary) as read from JSON, its floats (and extras' floats) back."""
    out = dict(entry)
    if out.get("extras") is not None:
        out["extras"] = _decode_extras(out["extras"])
    for key in _LIST_FLOATS:
        if out.get(key) is not None:
            out[key] = [to_float(v, key) for v in out[key]]
    for key in _SCALAR_FLOATS:
        if out.get(key) is not None:
            out[key] = to_float(out[key], key)
    return out


def decode_profile(rows: Any) -> list[list[Any]] | None:
    """Profile rows `[step, component, calls, seconds]` as stored, or None."""
    if rows is None:
        return None
    return [[int(r[0]), str(r[1]), int(r[2]), to_float(r[3], "profile")] for r in rows]


def dumps(obj: Any) -> str:
    """One line of JSON for a record or one of its parts (non-finite floats encoded)."""
    return json.dumps(encode(obj), allow_nan=False, ensure_ascii=False)


class RecordWriter:
    """Appends a record to a JSON-lines file as the run goes (header, steps, final)."""

    def __init__(self, path: str | os.PathLike, record: SMCRecord) -> None:
        self.path = os.fspath(path)
        self._file = open(self.path, "w", encoding="utf-8")
        self._write({"type": "header", **record.header()})

    def _write(self, item: dict) -> None:
        self._file.write(dumps(item) + "\n")
        self._file.flush()

    def step(self, entry: dict) -> None:
        """Append one step entry as a JSON line."""
        self._write({"type": "step", **entry})

    def finish(self, final: dict) -> None:
        """Append the final summary as a JSON line."""
        self._write({"type": "final", **final})

    def diagnostics(self, record: SMCRecord) -> None:
        """Append the run's alarms and profile rows as a JSON line."""
        self._write(
            {
                "type": "diagnostics",
                "alarms": [list(a) for a in record.alarms],
                "profile": record.profile_rows,
            }
        )

    def close(self) -> None:
        """Close the file (idempotent)."""
        if not self._file.closed:
            self._file.close()
