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
  "resampling_method": str       # only when it resampled: the scheme ("multinomial", ...)
  "retained": int                # only in csmc_standard runs: the retained particle's slot
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
at max_tokens), "awrs"?, "temperatures"? ({factor: temperature} of the
tempered factors, in a particle's first step)} there; the floats under the
keys "logw", "logZ", "critic" and the values of "factors" and
"temperatures" are read back like log_weights (-inf survives JSON).

Lists have one entry per particle of that step. smc_steer records its
candidates: each particle kept by the previous step (the previous step's
`ancestors`, in order) becomes `n_beam` consecutive candidates, or one if it
had finished; `ancestors` then names the candidates kept, so a step's lists
may be longer than `ancestors`. `SMCRecord.parents()` turns this into one
parent index per particle for both algorithms (`genlm_lab.smc.lineage`).
The file forms (one JSON document, or JSON lines written as the run goes)
and their float encoding are in `genlm_lab.smc.record_json`.
"""

from __future__ import annotations

import importlib
import json
import os
import uuid
from dataclasses import dataclass, field
from typing import Any

from genlm_lab.smc.lineage import step_links
from genlm_lab.smc.record_json import RecordWriter, decode_entry, decode_profile, dumps

__all__ = ["RecordWriter", "SMCRecord", "step_links"]

#: The one view a record names: its HTML repr, found by name when first displayed.
_HTML_VIEW = "genlm_lab.widgets.particle_view:record_html"


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
        return dumps(self.to_dict())

    @classmethod
    def from_dict(cls, data: dict) -> SMCRecord:
        """Rebuild a record from `to_dict` output."""
        final = data.get("final")
        return cls(
            n_particles=int(data["n_particles"]),
            algorithm=data.get("algorithm", "smc_standard"),
            run_id=data["run_id"],
            params=dict(data.get("params") or {}),
            steps=[decode_entry(s) for s in data.get("steps", [])],
            final=None if final is None else decode_entry(final),
            version=int(data.get("version", 1)),
            alarms=[(int(a[0]), str(a[1]), str(a[2])) for a in data.get("alarms") or []],
            profile_rows=decode_profile(data.get("profile")),
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
