"""`RunOptions`: the options every inference run takes beside its algorithm's own.

`smc_standard`, `importance_sampling`, `smc_steer` and `control`'s `SMC` all
take these as keyword arguments; they are declared here once, with their
defaults and meaning, and each run reads them through `RunOptions.of`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from genlm_lab.smc.alarms import AlarmThresholds

__all__ = ["RunOptions"]


@dataclass(frozen=True, kw_only=True)
class RunOptions:
    """What a run records, whom it tells, how it draws, and what it shows.

    Attributes:
        json_file: if given, the `SMCRecord` is written there step by step (JSON lines).
        observers: objects with `on_step(entry)` (and optionally `on_finish(record)`).
        seed: an int or numpy Generator for every random choice of the run
            (samplers with a seed of their own keep it).
        progress: a bar of steps, live particles and ESS; None shows it in a
            notebook (IPython kernel) only, not in terminals, scripts or tests.
        profile: record where the wall time goes, per step (`record.profile`);
            off, the run pays nothing for it.
        alarms: thresholds of the alarms (`record.alarms`); None: the defaults
            of `AlarmThresholds`.
    """

    json_file: str | os.PathLike | None = None
    observers: Any = ()
    seed: int | np.random.Generator | None = None
    progress: bool | None = None
    profile: bool = False
    alarms: AlarmThresholds | None = None

    @classmethod
    def of(cls, caller: str, options: dict[str, Any], **fixed: Any) -> RunOptions:
        """The options passed to `caller` as keyword arguments, with `fixed` set by the caller.

        `fixed` holds options that `caller` takes under a name of its own
        (control's `SMC` takes `json_path` for `json_file`); passed in
        `options` too, they are unexpected there.

        Raises:
            TypeError: naming `caller` and the first keyword that is no run option.
        """
        names = {f.name for f in fields(cls)} - set(fixed)
        for key in options:
            if key not in names:
                raise TypeError(f"{caller}() got an unexpected keyword argument {key!r}")
        return cls(**options, **fixed)

    def as_kwargs(self) -> dict[str, Any]:
        """The options as keyword arguments for another run (values as they are, not copied)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}
