"""`SMCRecord`: the full history of an SMC run, as plain JSON-ready data.

A record is a header (run id, algorithm, particle count, parameters), one
*step entry* per step and a final summary. A step entry is the dict that
observers receive (`on_step(entry)`) and views draw:

```
{
  "run_id": str,                 # the run this step belongs to
  "step": int,                   # 1 for the first step
  "contents": [str, ...],        # particle.string_for_serialization(), one per particle
  "log_weights": [float, ...],   # log-weights after the step (before resampling)
  "weight_increments": [float, ...],  # log-weight change during the step
  "finished": [bool, ...],       # done_stepping() of each particle
  "ess": float,                  # effective sample size of log_weights
  "log_ml": float,               # running estimate of log Z: logmeanexp(log_weights)
  "resampled": bool,             # whether resampling followed this step
  "ancestors": [int, ...] | None # then: new particle i copies this step's particle ancestors[i]
  "extras": [dict | None, ...]   # only if some particle set `step_extras` (see below)
  "alarms": [[step, kind, sentence], ...]  # only if this step raised some (see alarms.py)
  "profile": [[step, component, calls, seconds], ...]  # profiled runs: this step's rows so far
}
```

"extras" holds what each particle's model put in `step_extras` during the
step (None for one that did not step). `genlm_lab.control.SMC` puts
{"token", "logw", "logZ", "factors": {name: logw}, "critic", "killed_by",
"killed_why"? (why it died, e.g. jsonschema's error at EOS, or "cut at
max_tokens inside a string at $.name"), "cut"? (True where EOS was forced
at max_tokens), "awrs"?} there; the floats under the keys "logw", "logZ", "critic" and the
values of "factors" are read back like log_weights (-inf survives JSON).

Lists have one entry per particle of that step. smc_steer records its
candidates: each particle kept by the previous step (the previous step's
`ancestors`, in order) becomes `n_beam` consecutive candidates, or one if it
had finished; `ancestors` then names the candidates kept, so a step's lists
may be longer than `ancestors`. `SMCRecord.parents()` turns this into one
parent index per particle for both algorithms. In JSON, -inf / inf / NaN floats are the
strings "-Infinity" / "Infinity" / "NaN" (both `float()` and JavaScript's
`Number()` read them back). With `json_file`, inference writes the record as
JSON lines (header, one line per step, final) as it goes, so an interrupted
run keeps the steps it finished; `SMCRecord.load` reads both forms.
"""

from __future__ import annotations

import importlib
import json
import math
import os
import uuid
from dataclasses import dataclass, field
from typing import Any

__all__ = ["SMCRecord"]

_LIST_FLOATS = ("log_weights", "weight_increments")
_SCALAR_FLOATS = ("ess", "log_ml")
_NONFINITE = {"-Infinity": -math.inf, "Infinity": math.inf, "NaN": math.nan}
#: The one view a record names: its HTML repr, found by name when first displayed.
_HTML_VIEW = "genlm_lab.widgets.particle_view:record_html"


def _encode(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_encode(v) for v in value]
    return value


def _to_float(value: Any, key: str) -> float:
    """A number of the record, or one ValueError naming its field."""
    if isinstance(value, str) and value in _NONFINITE:
        return _NONFINITE[value]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    raise ValueError(f"record field {key!r} holds {value!r}, not a number")


_EXTRA_FLOATS = ("logw", "logZ", "critic")


def _maybe_float(value: Any, key: str) -> Any:
    return None if value is None else _to_float(value, key)


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
        elif key == "factors" and isinstance(item, dict):
            out[key] = {k: _maybe_float(v, "extras.factors") for k, v in item.items()}
        else:
            out[key] = _decode_extras(item)
    return out


def _decode_entry(entry: dict) -> dict:
    out = dict(entry)
    if out.get("extras") is not None:
        out["extras"] = _decode_extras(out["extras"])
    for key in _LIST_FLOATS:
        if out.get(key) is not None:
            out[key] = [_to_float(v, key) for v in out[key]]
    for key in _SCALAR_FLOATS:
        if out.get(key) is not None:
            out[key] = _to_float(out[key], key)
    return out


def _decode_profile(rows: Any) -> list[list[Any]] | None:
    """Profile rows `[step, component, calls, seconds]` as stored, or None."""
    if rows is None:
        return None
    return [[int(r[0]), str(r[1]), int(r[2]), _to_float(r[3], "profile")] for r in rows]


def _dumps(obj: Any) -> str:
    return json.dumps(_encode(obj), allow_nan=False, ensure_ascii=False)


def _steps_on(entry: dict, i: int) -> bool:
    """Whether particle i of a step entry is still alive (neither finished nor of weight zero)."""
    return (
        not entry["finished"][i] and _to_float(entry["log_weights"][i], "log_weights") > -math.inf
    )


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


@dataclass
class SMCRecord:
    """History of one inference run: header, step entries and final summary.

    Attributes:
        n_particles: particles of the run (views use it, with `run_id`, to tell runs apart).
        algorithm: "smc_standard", "smc_steer" or "importance_sampling".
        run_id: a fresh uuid per run.
        params: the run's settings (ess_threshold, resampling_method, seed, model, ...).
        steps: the step entries, in order (see the module docstring).
        final: None while running; then {"status", "log_ml", "ess", "n_steps"}
            where status is "finished", "all_dead" or "interrupted".
        alarms: `(step, kind, sentence)` for each way the run degenerated
            (see `genlm_lab.smc.alarms`); empty for a healthy run.
        profile_rows: `[step, component, calls, seconds]` rows of a profiled
            run (None otherwise); `profile` gives them as a DataFrame.
    """

    n_particles: int
    algorithm: str = "smc_standard"
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    params: dict = field(default_factory=dict)
    steps: list[dict] = field(default_factory=list)
    final: dict | None = None
    version: int = 1
    alarms: list[tuple[int, str, str]] = field(default_factory=list)
    profile_rows: list[list[Any]] | None = None

    @property
    def profile(self) -> Any:
        """Where the wall time went: a DataFrame of step, component, calls, seconds.

        Empty unless the run was profiled (`profile=True`); see
        `genlm_lab.smc.profile` for the components.
        """
        from genlm_lab.smc.profile import profile_frame

        return profile_frame(self.profile_rows)

    @property
    def deaths(self) -> Any:
        """One row per particle death: particle, step, factor, reason (and text), a DataFrame."""
        from genlm_lab.smc.deaths import death_rows, deaths_frame

        return deaths_frame(death_rows(self.steps, self.parents()))

    def header(self) -> dict:
        """The header fields (everything but steps and final)."""
        return {
            "version": self.version,
            "run_id": self.run_id,
            "algorithm": self.algorithm,
            "n_particles": self.n_particles,
            "params": self.params,
        }

    def to_dict(self) -> dict:
        """Plain JSON-ready dict: header, steps, final summary, alarms and profile rows."""
        return {
            **self.header(),
            "steps": self.steps,
            "final": self.final,
            "alarms": [list(a) for a in self.alarms],
            "profile": self.profile_rows,
        }

    def to_json(self) -> str:
        """The whole record as one JSON document."""
        return _dumps(self.to_dict())

    @classmethod
    def from_dict(cls, data: dict) -> SMCRecord:
        """Rebuild a record from `to_dict` output."""
        final = data.get("final")
        return cls(
            n_particles=int(data["n_particles"]),
            algorithm=data.get("algorithm", "smc_standard"),
            run_id=data["run_id"],
            params=dict(data.get("params") or {}),
            steps=[_decode_entry(s) for s in data.get("steps", [])],
            final=None if final is None else _decode_entry(final),
            version=int(data.get("version", 1)),
            alarms=[(int(a[0]), str(a[1]), str(a[2])) for a in data.get("alarms") or []],
            profile_rows=_decode_profile(data.get("profile")),
        )

    @classmethod
    def from_json(cls, text: str) -> SMCRecord:
        """Read `to_json` output, or the JSON-lines form written during a run.

        Raises:
            ValueError: if the text is neither form.
        """
        stripped = text.strip()
        try:
            data = json.loads(stripped)
        except json.JSONDecodeError:
            data = None
        if isinstance(data, dict) and "steps" in data:
            return cls.from_dict(data)
        return cls._from_lines(stripped.splitlines())

    @classmethod
    def _from_lines(cls, lines: list[str]) -> SMCRecord:
        header, steps, final = None, [], None
        diagnostics: dict = {}
        for number, line in enumerate(lines):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except json.JSONDecodeError:
                if number == len(lines) - 1:  # a line cut short by an interruption
                    break
                raise ValueError(f"line {number + 1} of the record is not JSON") from None
            if not isinstance(item, dict):
                raise ValueError(
                    f"not an SMC record: line {number + 1} is a JSON "
                    f"{type(item).__name__}, not an object"
                )
            kind = item.pop("type", None)
            if kind == "header":
                header = item
            elif kind == "step":
                steps.append(item)
            elif kind == "final":
                final = item
            elif kind == "diagnostics":
                diagnostics = item
        if header is None:
            raise ValueError("not an SMC record: no JSON document with 'steps' and no header line")
        return cls.from_dict({**header, "steps": steps, "final": final, **diagnostics})

    @classmethod
    def load(cls, path: str | os.PathLike) -> SMCRecord:
        """Read a record file (either form)."""
        with open(path, encoding="utf-8") as f:
            return cls.from_json(f.read())

    def save(self, path: str | os.PathLike) -> None:
        """Write the record as one JSON document."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.to_json())

    def parents(self) -> list[list[int] | None]:
        """For every step, the index of each particle's parent in the previous step's lists.

        None for the first step. Particle i continues particle i of the previous
        step when that step did not resample, else its particle `ancestors[i]`;
        for smc_steer, the candidates of a step are the kept particles of the
        previous one, each repeated `n_beam` times (once if it had finished).

        Raises:
            ValueError: if ancestors name particles that do not exist, or the
                particle counts of two steps do not fit together.
        """
        out: list[list[int] | None] = []
        steer = self.algorithm == "smc_steer"
        beam = self.params.get("n_beam") if steer else None
        for t, entry in enumerate(self.steps):
            if t == 0:
                out.append(None)
                continue
            where = f"step entry {t - 1} (step {self.steps[t - 1].get('step', t)})"
            out.append(step_links(self.steps[t - 1], entry, steer, beam, where, t))
        return out

    def to_pandas(self) -> Any:
        """One row per (step, particle): contents, log-weight, increment, finished, ancestor.

        "ancestor" is the particle of the previous step that this one continues
        (its row's "particle"; see `parents()`), None at the first step.
        """
        import pandas as pd

        rows = []
        for entry, parents in zip(self.steps, self.parents(), strict=True):
            for i, text in enumerate(entry["contents"]):
                rows.append(
                    {
                        "step": entry["step"],
                        "particle": i,
                        "contents": text,
                        "log_weight": entry["log_weights"][i],
                        "weight_increment": entry["weight_increments"][i],
                        "finished": entry["finished"][i],
                        "ancestor": None if parents is None else parents[i],
                    }
                )
        frame = pd.DataFrame(rows)
        if rows:  # ints, and None (not NaN, which would make every index a float)
            frame["ancestor"] = pd.Series([r["ancestor"] for r in rows], dtype=object)
        return frame

    def __len__(self) -> int:
        return len(self.steps)

    def __repr__(self) -> str:
        """One line: what ran, how far, how it ended (a record holds every step: never all)."""
        final = self.final or {}
        status = final.get("status", "running or unfinished")
        log_ml = final.get("log_ml")
        if log_ml is None and self.steps:
            log_ml = self.steps[-1].get("log_ml")
        ml = "?" if log_ml is None else f"{float(log_ml):.4f}"
        return (
            f"SMCRecord({self.algorithm}, {self.n_particles} particles, "
            f"{len(self.steps)} steps, {status}, log_ml={ml})"
        )

    def _repr_html_(self) -> str:
        """The static particle view of the run (weights, ESS, log_ml, genealogy).

        The view lives in `genlm_lab.widgets`, a layer above this one, so the
        record names it (`_HTML_VIEW`) instead of importing it: the view module
        is loaded only when a notebook first displays a record, and no import
        runs from records up to views (the import-linter contracts check this).
        """
        module, function = _HTML_VIEW.split(":")
        return getattr(importlib.import_module(module), function)(self)


class RecordWriter:
    """Appends a record to a JSON-lines file as the run goes (header, steps, final)."""

    def __init__(self, path: str | os.PathLike, record: SMCRecord) -> None:
        self.path = os.fspath(path)
        self._file = open(self.path, "w", encoding="utf-8")
        self._write({"type": "header", **record.header()})

    def _write(self, item: dict) -> None:
        self._file.write(_dumps(item) + "\n")
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
