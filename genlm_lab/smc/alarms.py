"""Alarms: a run that degenerates says so, in one plain sentence per problem.

`AlarmMonitor` reads each step entry as the run records it (cheap: a few
numbers per particle, the tails of the texts) and raises each kind of alarm
at most once per run, as `(step, kind, sentence)`. They reach the record
(`SMCRecord.alarms`), the step entry of the step that raised them (key
"alarms", so live views show them) and the record file.

Kinds (thresholds in `AlarmThresholds`):

- "low_ess": the ESS stayed below `ess_floor` for `ess_steps` steps in a row
  (runs of at least two particles);
- "all_dead": every particle died; the sentence names the factor that killed
  most and the commonest reason;
- "low_mass": the constraint fights the model: the median allowed mass of a
  step (the "logZ" a model reports in `step_extras`, as control.SMC does)
  is under `min_mass`;
- "runaway": at least `runaway_fraction` of the live particles end in a run
  of whitespace or a repeated piece of text;
- "max_tokens": more than `cut_fraction` of the final particles were cut at
  max_tokens (EOS forced, "cut" in `step_extras`) unfinished: a constraint
  refused the cut text, or there was no constraint to accept it. A text the
  constraints accept as it was cut ("complete" in `step_extras`) finished
  valid and is not counted. The sentence names the factor and, where the run
  held it to a budget, the budget;
- "log_ml_inf": the run ended with log_ml = -inf;
- "slow_factor": one potential took more than `slow_fraction` of the wall
  time (profiled runs only; LM factors are left out, their forwards are the
  cost a run is meant to pay);
- "unfinishable": raised by `genlm_lab.control.SMC` after a run, where a
  JSON schema's finish got stuck (a pattern or format it cannot complete), so
  the budget could not see whether such texts end in time; it names the
  factor, the JSON path and the keyword.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from genlm_lab.smc.deaths import cut_hint
from genlm_lab.smc.lineage import step_links
from genlm_lab.util.alarms import text_runaway

__all__ = ["ALARM_KINDS", "AlarmMonitor", "AlarmThresholds", "runaway"]

ALARM_KINDS = (
    "low_ess",
    "all_dead",
    "low_mass",
    "runaway",
    "max_tokens",
    "log_ml_inf",
    "slow_factor",
    "unfinishable",
)


@dataclass(frozen=True)
class AlarmThresholds:
    """When an alarm goes off; pass one as `alarms=` to an SMC run.

    Attributes:
        ess_floor: "low_ess" when the ESS is below this (default 1.5) ...
        ess_steps: ... for this many steps in a row (default 3).
        min_mass: "low_mass" when a step's median allowed mass is below this (1e-6).
        whitespace_run: a text ending in this many whitespace characters runs away (32).
        repeat_period: the longest repeated piece looked for, in characters (16) ...
        repeat_chars: ... repeated over at least this many trailing characters (48),
            and at least 4 times.
        runaway_fraction: "runaway" when at least this share of the live particles run away (0.5).
        cut_fraction: "max_tokens" when more than this share of the final particles were cut (0.5).
        slow_fraction: "slow_factor" when one potential takes more than this share of the
            wall time (0.8).
    """

    ess_floor: float = 1.5
    ess_steps: int = 3
    min_mass: float = 1e-6
    whitespace_run: int = 32
    repeat_period: int = 16
    repeat_chars: int = 48
    runaway_fraction: float = 0.5
    cut_fraction: float = 0.5
    slow_fraction: float = 0.8


def runaway(text: str, limits: AlarmThresholds) -> str | None:
    """ "whitespace" or "repetition" if `text` ends in a runaway, else None.

    `genlm_lab.util.alarms.text_runaway` with the thresholds of `limits`.
    """
    return text_runaway(text, limits.whitespace_run, limits.repeat_period, limits.repeat_chars)


def _float(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, str):
        return float(value.replace("Infinity", "inf"))
    return float(value)


class AlarmMonitor:
    """Watches one run's steps and raises each kind of alarm at most once.

    Args:
        n_particles: particles of the run.
        algorithm: the record's algorithm (smc_steer's candidates follow other links).
        n_beam: smc_steer's beam width.
        thresholds: when alarms go off (None: the defaults).
    """

    def __init__(
        self,
        n_particles: int,
        algorithm: str = "smc_standard",
        n_beam: int | None = None,
        thresholds: AlarmThresholds | None = None,
    ) -> None:
        if thresholds is not None and not isinstance(thresholds, AlarmThresholds):
            raise ValueError(f"alarms must be an AlarmThresholds, got {type(thresholds).__name__}")
        self.limits = thresholds or AlarmThresholds()
        self.n = n_particles
        self.steer = algorithm == "smc_steer"
        self.beam = n_beam
        self.raised: list[tuple[int, str, str]] = []
        self._kinds: set[str] = set()
        self._low_ess = 0
        self._previous: Mapping | None = None
        #: Per particle: None, or (factor, budget) of the cut that ended its line unfinished.
        self._cut: list[tuple[str | None, int | None] | None] = []
        #: Profile components that belong to a (non-LM) potential, with its name.
        self.factor_of: dict[str, str] = {}

    def raise_(self, step: int, kind: str, sentence: str) -> list[list[Any]]:
        """Raise an alarm unless one of its kind was raised; the new ones as JSON lists."""
        if kind in self._kinds:
            return []
        self._kinds.add(kind)
        self.raised.append((int(step), kind, sentence))
        return [[int(step), kind, sentence]]

    def step(self, entry: Mapping) -> list[list[Any]]:
        """Read one step entry; the alarms it raised, as `[step, kind, sentence]` lists."""
        limits, step = self.limits, int(entry["step"])
        out: list[list[Any]] = []
        ess = float(entry["ess"])
        self._low_ess = self._low_ess + 1 if self.n >= 2 and ess < limits.ess_floor else 0
        if self._low_ess >= limits.ess_steps:
            out += self.raise_(
                step,
                "low_ess",
                f"the effective sample size stayed below {limits.ess_floor:g} for "
                f"{self._low_ess} steps in a row (now {ess:.2f} of {len(entry['log_weights'])}): "
                "one particle carries the run; more particles or a better proposal help.",
            )
        extras = entry.get("extras") or []
        masses = [
            _float(e.get("logZ"))
            for e in extras
            if isinstance(e, Mapping) and e.get("logZ") is not None
        ]
        if masses and statistics.median(masses) < math.log(limits.min_mass):
            median = statistics.median(masses)
            out += self.raise_(
                step,
                "low_mass",
                f"the constraint fights the model: at step {step} the tokens it allows hold "
                f"a median mass of {math.exp(median):.2g} of the model's distribution (under "
                f"{limits.min_mass:g}); a prompt that asks for this format, or a looser "
                "constraint, helps.",
            )
        out += self._runaways(entry, step)
        self._follow_cuts(entry, extras)
        self._previous = entry
        return out

    def _runaways(self, entry: Mapping, step: int) -> list[list[Any]]:
        live = [
            text
            for text, lw in zip(entry["contents"], entry["log_weights"], strict=True)
            if _float(lw) != -math.inf
        ]
        if not live:
            return []
        kinds = [k for k in (runaway(t, self.limits) for t in live) if k is not None]
        if len(kinds) < self.limits.runaway_fraction * len(live) or not kinds:
            return []
        what = statistics.mode(kinds)
        return self.raise_(
            step,
            "runaway",
            f"{len(kinds)} of {len(live)} live particles end in a {what} runaway at step "
            f"{step}; cap whitespace (e.g. JsonSchema(max_whitespace=...)) or stop at a "
            "repetition.",
        )

    def _follow_cuts(self, entry: Mapping, extras: Sequence[Any]) -> None:
        """Each particle's cut: was it (or its ancestor) cut at max_tokens unfinished, by what."""
        n = len(entry["contents"])
        flags: list[tuple[str | None, int | None] | None]
        if self._previous is None:
            flags = [None] * n
        else:
            try:
                links = step_links(self._previous, entry, self.steer, self.beam)
            except ValueError:
                links = list(range(n)) if len(self._cut) == n else [0] * n
            flags = [self._cut[a] if a < len(self._cut) else None for a in links]
        for i, extra in enumerate(extras[:n]):
            if isinstance(extra, Mapping) and extra.get("cut") and not extra.get("complete"):
                flags[i] = (extra.get("killed_by"), extra.get("killed_budget"))
        self._cut = flags

    def finish(self, log_ml: float, ancestors: Sequence[int] | None) -> None:
        """Alarms on how the run ended; `ancestors`: the last step's selection, if any."""
        step = int(self._previous["step"]) if self._previous is not None else 0
        flags = self._cut if ancestors is None else [self._cut[a] for a in ancestors]
        cut = [f for f in flags if f is not None]
        if flags and len(cut) > self.limits.cut_fraction * len(flags):
            (factor, budget), _ = Counter(cut).most_common(1)[0]
            plain = factor is None or factor in ("model", "sampler", "critic")
            what = "mid-text" if plain else f"before {factor} accepted them"
            self.raise_(
                step,
                "max_tokens",
                f"{len(cut)} of {len(flags)} final particles were cut at max_tokens {what}: "
                f"{cut_hint(factor, budget)}.",
            )
        if log_ml == -math.inf:
            self.raise_(
                step,
                "log_ml_inf",
                "log_ml = -inf: every final weight is zero, so the run estimates nothing "
                "and its posterior is empty.",
            )

    def profile(self, rows: Sequence[Sequence[Any]]) -> None:
        """The "slow_factor" alarm from a run's profile rows and `Profiler.factors`."""
        total = sum(float(r[3]) for r in rows)
        if total <= 0:
            return
        by_factor: dict[str, float] = {}
        for _, component, _, seconds in rows:
            factor = self.factor_of.get(component)
            if factor is not None:
                by_factor[factor] = by_factor.get(factor, 0.0) + float(seconds)
        if not by_factor:
            return
        name, seconds = max(by_factor.items(), key=lambda kv: kv[1])
        if seconds > self.limits.slow_fraction * total:
            step = int(self._previous["step"]) if self._previous is not None else 0
            self.raise_(
                step,
                "slow_factor",
                f"{name} took {seconds / total:.0%} of the wall time ({seconds:.2f} s of "
                f"{total:.2f} s); see record.profile for its methods.",
            )
