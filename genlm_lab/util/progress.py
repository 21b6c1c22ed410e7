"""Progress bars for every wait a user sees, the PyData way (`tqdm.auto`).

One decision and one factory, shared by model loading, SMC, the byte beam and
the benchmarks:

- `progress_enabled(progress)`: an explicit True/False wins; `None` means "on
  in a notebook" (an IPython kernel is running) and off everywhere else
  (terminals, scripts, pytest), so logs and tests stay quiet by default.
  `GENLM_LAB_PROGRESS=0` turns the default off in kernels too: the runners
  that store or compare notebook outputs (scripts/run_notebooks.py, nbval,
  the tests) set it, so no run-dependent bar lands in a stored notebook.
- `progress_bar(total, desc, enabled)`: a `tqdm.auto` bar (a widget in a
  notebook, text on stderr in a terminal) or, when disabled, a no-op object
  with the same `update` / `set_postfix` / `close` / context-manager API, so
  callers never branch on whether a bar exists.
"""

from __future__ import annotations

import os
import sys
from typing import Any

__all__ = ["ENV_VAR", "NullBar", "finish_early", "progress_bar", "progress_enabled"]

#: Set to "0" to turn off the bars that would show by default (explicit True still shows).
ENV_VAR = "GENLM_LAB_PROGRESS"


def _in_kernel() -> bool:
    """Whether this process is an IPython kernel (Jupyter, nbval, nbclient)."""
    ipython = sys.modules.get("IPython")  # no kernel can run without importing it
    if ipython is None:
        return False
    try:
        shell = ipython.get_ipython()
    except Exception:
        return False
    if shell is None:
        return False
    if getattr(shell, "kernel", None) is not None:
        return True
    try:
        return "IPKernelApp" in shell.config
    except Exception:
        return False


def progress_enabled(progress: bool | None) -> bool:
    """Resolve a `progress=` argument: explicit wins, `None` means "in a notebook".

    Args:
        progress: True or False to force a bar on or off; None to decide from
            where the code runs (on in an IPython kernel unless
            GENLM_LAB_PROGRESS=0, off in terminals, scripts and tests).

    Returns:
        Whether to show a bar.
    """
    if progress is None:
        return _in_kernel() and not _env_off()
    return bool(progress)


def _env_off() -> bool:
    """Whether GENLM_LAB_PROGRESS turns default bars off ("0", "false", "no", "off")."""
    return os.environ.get(ENV_VAR, "").strip().lower() in ("0", "false", "no", "off")


class NullBar:
    """A bar that shows nothing: the API of `tqdm` that callers use, as no-ops."""

    disable = True

    def __init__(self, total: float | None = None, desc: str | None = None) -> None:
        self.total = total
        self.desc = desc or ""
        self.n = 0
        self.postfix: dict[str, Any] = {}

    def update(self, n: float = 1) -> None:
        """Count `n` more units done (kept, so callers may read `.n`)."""
        self.n += n

    def set_postfix(
        self, ordered_dict: dict | None = None, refresh: bool = True, **kw: Any
    ) -> None:
        """Remember the postfix values; nothing is shown."""
        self.postfix = {**(ordered_dict or {}), **kw}

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        """Ignore a postfix string."""

    def set_description(self, desc: str | None = None, refresh: bool = True) -> None:
        """Remember the description; nothing is shown."""
        self.desc = desc or ""

    def reset(self, total: float | None = None) -> None:
        """Start counting again, optionally with a new total."""
        self.n = 0
        if total is not None:
            self.total = total

    def refresh(self) -> None:
        """Nothing to redraw."""

    def close(self) -> None:
        """Nothing to close."""

    def __enter__(self) -> NullBar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def progress_bar(
    total: float | None = None,
    desc: str | None = None,
    enabled: bool | None = None,
    **kwargs: Any,
) -> Any:
    """A progress bar, or a silent stand-in with the same API.

    Args:
        total: the number of units expected (None when unknown: tqdm then
            shows a count and a rate).
        desc: a short label for the bar, e.g. "smc_standard".
        enabled: True/False to force; None to show it only in a notebook
            (see `progress_enabled`).
        **kwargs: passed to `tqdm.auto.tqdm` (e.g. `unit`, `leave`).

    Returns:
        A `tqdm.auto.tqdm` when enabled, else a `NullBar`. Both support
        `update`, `set_postfix`, `set_description`, `close` and `with`.
    """
    if not progress_enabled(enabled):
        return NullBar(total=total, desc=desc)
    from tqdm.auto import tqdm

    kwargs.setdefault("dynamic_ncols", True)
    return tqdm(total=total, desc=desc, **kwargs)


def finish_early(bar: Any, done: float) -> None:
    """Show `bar` full at `done` units when the work ended before its total.

    Setting `.total` alone changes tqdm's text but not a notebook widget's
    fill (it reads "7/7 100%" a third full); `reset(total=...)` updates both.
    `reset` also restarts tqdm's clock and rate: counting the units again
    after it would show them done in an instant (an absurd rate), so the
    start time is kept and the units are set, not counted, and the rate
    shown is the run's average.
    """
    start = getattr(bar, "start_t", None)
    bar.reset(total=done)
    if start is not None:
        bar.start_t = start  # elapsed and the average rate: over the whole run
    bar.n = done  # set, not `update`d: no burst of `done` units in no time
    bar.refresh()
