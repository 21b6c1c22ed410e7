"""Shared machinery of the live views: JSON-safe data, throttled pushes (assets: `_assets`).

Every view holds one plain-data dict (`view.data`). The static renderer turns
it into HTML (what nbviewer, GitHub and nbval see); the browser module draws
the same dict live. Updates flow kernel -> browser only: a push sets a synced
trait, which sends one comm message and never waits for the browser.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from typing import Any

import anywidget
import traitlets

from genlm_lab.widgets._assets import asset, esm
from genlm_lab.widgets._safe import stored_html

__all__ = ["LiveView", "Throttle", "asset", "esm", "jsonable"]


def jsonable(value: Any) -> Any:
    """`value` with non-finite floats as the strings JS `Number()` reads back.

    Jupyter messages are strict JSON, which has no Infinity or NaN; a dead
    particle's log weight is -inf, so it travels as "-Infinity".
    """
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if hasattr(value, "tolist") and callable(value.tolist):  # numpy / torch arrays and scalars
        return jsonable(value.tolist())
    if hasattr(value, "item") and callable(value.item):  # other scalar wrappers
        return jsonable(value.item())
    return value


class Throttle:
    """Call `send(build())` at most once per `interval` seconds, always the last state.

    `request(build)` remembers the newest builder; it sends at once when the
    interval has passed, else schedules one trailing send on the running event
    loop (if any). `flush()` sends what is pending now (used at the end of a
    run, so the final state always arrives). Data is only built when sent, so
    skipped updates cost nothing.
    """

    def __init__(self, send: Callable[[Any], None], interval: float = 0.1) -> None:
        self.send = send
        self.interval = interval
        self.sent = 0
        self._last = -math.inf
        self._build: Callable[[], Any] | None = None
        self._timer: asyncio.TimerHandle | None = None

    def request(self, build: Callable[[], Any]) -> None:
        self._build = build
        wait = self._last + self.interval - time.monotonic()
        if wait <= 0:
            self.flush()
        elif self._timer is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                return
            self._timer = loop.call_later(wait, self.flush)

    def flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        build, self._build = self._build, None
        if build is None:
            return
        self._last = time.monotonic()
        self.sent += 1
        self.send(build())


class LiveView(anywidget.AnyWidget):
    """Base of every view: one synced `data` dict, static HTML as the fallback output.

    Subclasses set `_esm`/`_css` and implement `to_html(data)` (pure, static).
    """

    _css = asset("genlm.css")
    data = traitlets.Dict().tag(sync=True)
    #: Seconds between two pushes to the browser while inference runs.
    throttle_s: float = 0.1

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._data: dict = {}
        self._throttle = Throttle(self._send_now, self.throttle_s)

    # -- data flow -------------------------------------------------------------
    def _send_now(self, data: dict) -> None:
        self._data = data
        self.data = jsonable(data)

    def push(self, build: Callable[[], dict], *, final: bool = False) -> None:
        """Queue new view data (throttled); `final=True` sends it at once."""
        self._throttle.request(build)
        if final:
            self._throttle.flush()

    def view_data(self) -> dict:
        """The plain data the view draws now (the last state pushed)."""
        self._throttle.flush()
        return self._data

    # -- rendering -------------------------------------------------------------
    @staticmethod
    def to_html(data: dict) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def _repr_html_(self) -> str:
        return self.to_html(self.view_data())

    def _repr_mimebundle_(self, **kwargs: Any):
        """The live widget plus the stored HTML (`_safe.stored_html`): what an untrusted
        notebook, GitHub or nbviewer shows."""
        html = stored_html(self._repr_html_())
        bundle = super()._repr_mimebundle_(**kwargs)
        if bundle is None:
            return {"text/html": html}
        data, metadata = bundle if isinstance(bundle, tuple) else (bundle, {})
        data = dict(data)
        data["text/html"] = html
        return data, metadata

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"
