"""`BackendMonitor`: the live request counters of an `AsyncLM`."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from genlm_lab.widgets.base import LiveView, esm
from genlm_lab.widgets.render import esc, fmt, table, wrap

_COUNTERS = ("queries", "batches", "cache_hits", "tokens_computed")


def monitor_data(stats: dict[str, Any], name: str = "") -> dict:
    """View data of a backend's `stats` dict: the counters plus derived rates.

    `mean batch size` is the number of requests the model answered per forward
    call: (queries - cache hits) / batches; `cache hit rate` is hits / queries.

    Raises:
        ValueError: if `stats` lacks one of the standard counters.
    """
    missing = [k for k in _COUNTERS if k not in stats]
    if missing:
        raise ValueError(
            f"stats {dict(stats)!r} lacks the counters {missing}; expected an AsyncLM.stats "
            f"dict with {list(_COUNTERS)}"
        )
    q, b, hits = int(stats["queries"]), int(stats["batches"]), int(stats["cache_hits"])
    rows = [{"name": k, "value": int(stats[k])} for k in _COUNTERS]
    rows.append({"name": "mean batch size", "value": (q - hits) / b if b else 0.0})
    rows.append({"name": "cache hit rate", "value": hits / q if q else 0.0})
    return {"kind": "monitor", "name": name, "rows": rows}


def monitor_html(data: dict) -> str:
    """Static HTML of `monitor_data`: one row per counter."""
    rows = [
        f"<tr><td>{esc(r['name'])}</td><td class='genlm-num'>{esc(fmt(r['value'], 2))}</td></tr>"
        for r in data["rows"]
    ]
    title = f"<div class='genlm-title'>Backend {esc(data.get('name', ''))}</div>"
    return wrap(title + table(["counter", "value"], rows), "monitor")


class BackendMonitor(LiveView):
    """Live `stats` of an AsyncLM: queries, batches, mean batch size, cache hits.

    It polls `llm.stats` every `interval` seconds on the running event loop (the
    kernel's, in Jupyter) and pushes only when a counter changed; call
    `refresh()` to update by hand where no loop runs, `stop()` to end polling.

    Args:
        llm: any object with a `stats` dict in the AsyncLM layout.
        interval: seconds between two polls.
    """

    _esm = esm("monitor.js")

    def __init__(self, llm: Any, interval: float = 0.25) -> None:
        if not isinstance(getattr(llm, "stats", None), dict):
            raise ValueError(f"{llm!r} has no `stats` dict: BackendMonitor needs an AsyncLM")
        if not interval > 0:
            raise ValueError(f"interval must be > 0 seconds, got {interval!r}")
        super().__init__()
        self.llm = llm
        self.interval = interval
        self._name = type(llm).__name__
        self._seen: dict | None = None
        self._task: asyncio.Task | None = None
        self.refresh()
        with contextlib.suppress(RuntimeError):
            self._task = asyncio.get_running_loop().create_task(self._poll())

    def refresh(self) -> None:
        """Push the current counters now (if they changed since the last push)."""
        stats = dict(self.llm.stats)
        if stats != self._seen:
            self._seen = stats
            self.push(lambda: monitor_data(stats, self._name), final=True)

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            self.refresh()

    def stop(self) -> None:
        """Stop polling (the view keeps its last state)."""
        task = getattr(self, "_task", None)  # absent if __init__ refused its input
        if task is not None:
            task.cancel()
            self._task = None

    def close(self) -> None:
        """Stop polling and close the widget."""
        self.stop()
        super().close()

    @staticmethod
    def to_html(data: dict) -> str:
        return monitor_html(data)
