"""`BeamView` / `BeamDebugger`: step a byte-level beam through a text and see its candidates.

Its data is `beam_data` (genlm_lab.widgets.beam_data), its static HTML
`beam_html` (genlm_lab.widgets.beam_html), both re-exported here. The view
also lists the beam's alarms up to the step shown (see
`genlm_lab.bytes.alarms`), and `profile_view()` draws a profiled beam's
time (`BeamParams(profile=True)`) in a `ProfileView`.
"""

from __future__ import annotations

import asyncio
from typing import Any

from genlm_lab.widgets.base import LiveView, esm
from genlm_lab.widgets.beam_data import beam_data, step_dict, step_view
from genlm_lab.widgets.beam_html import beam_html

__all__ = ["BeamDebugger", "BeamView", "beam_data", "beam_html", "step_view"]


def _check_count(n: Any) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"step count must be an int >= 0, got {n!r}")


class BeamView(LiveView):
    """A recorded beam (its `history`), stepped back and forth in the browser.

    Args:
        steps: a `ByteBeamState` (its history is used) or a list of `BeamStep`s.
        text: the bytes the beam read (default: the bytes of the steps).
    """

    _esm = esm("beam.js")

    def __init__(self, steps: Any = (), text: bytes | str | None = None) -> None:
        super().__init__()
        history = list(steps.history) if hasattr(steps, "history") else list(steps)
        self._steps = history
        if isinstance(text, str):
            text = text.encode("utf-8")
        if text is None:
            text = bytes(
                step_dict(s, i)["byte"]
                for i, s in enumerate(history)
                if i and step_dict(s, i)["byte"] < 256
            )
        self.text = text
        self._current = len(history) - 1
        self._error = ""
        self.on_msg(self._on_msg)
        self._refresh(final=True)

    def _refresh(self, final: bool = False) -> None:
        steps, cur, err = list(self._steps[: self._current + 1]), self._current, self._error
        self.push(lambda: beam_data(steps, self.text, cur if steps else None, err), final=final)

    @property
    def position(self) -> int:
        """Bytes read at the step shown."""
        return max(self._current, 0)

    def profile_view(self) -> Any:
        """A `ProfileView` of the steps recorded so far (empty unless `BeamParams(profile=True)`)."""
        from genlm_lab.widgets.profile_view import ProfileView

        rows = [list(r) for s in self._steps for r in getattr(s, "profile", None) or ()]
        return ProfileView.from_rows(rows)

    def back(self, n: int = 1) -> None:
        """Show the step `n` bytes earlier.

        Raises:
            ValueError: if `n` is not an int >= 0 (the view is left as it was).
        """
        _check_count(n)
        self._current = max(0, self._current - n)
        self._error = ""
        self._refresh(final=True)

    async def step(self, n: int = 1) -> None:
        """Show the step `n` bytes later (as far as recorded).

        Raises:
            ValueError: if `n` is not an int >= 0 (the view is left as it was).
        """
        _check_count(n)
        self._current = min(len(self._steps) - 1, self._current + n)
        self._refresh(final=True)

    async def run(self) -> None:
        """Go to the end of the text."""
        await self.step(len(self.text))

    async def goto(self, position: int) -> None:
        """Show the step after `position` bytes."""
        if not 0 <= position <= len(self.text):
            raise ValueError(f"position {position} is outside 0..{len(self.text)}")
        if position <= self._current:
            self.back(self._current - position)
        else:
            await self.step(position - self._current)

    def _on_msg(self, _widget: Any, content: dict, _buffers: Any) -> None:
        # Control messages from the buttons; inference runs as a task, never awaited here.
        action = content.get("action")
        try:
            n = int(content.get("n", 1))
        except (TypeError, ValueError):
            self._error = f"ValueError: step count must be an int, got {content.get('n')!r}"
            self._refresh(final=True)
            return
        if action == "back":
            try:
                self.back(n)
            except ValueError as err:
                self._error = f"ValueError: {err}"
                self._refresh(final=True)
            return
        coro = {"step": lambda: self.step(n), "run": self.run, "goto": lambda: self.goto(n)}.get(
            action
        )
        if coro is not None:
            asyncio.get_event_loop().create_task(self._guard(coro()))

    async def _guard(self, coro: Any) -> None:
        try:
            await coro
        except Exception as err:  # show it in the view: no cell is there to raise into
            self._error = f"{type(err).__name__}: {err}"
            self._refresh(final=True)

    @staticmethod
    def to_html(data: dict) -> str:
        return beam_html(data)


class BeamDebugger(BeamView):
    """Read `text` byte by byte with a `ByteBeamState` over `llm`, one step at a time.

    Each step prunes the beam, reads the next byte and asks for the next-byte
    distribution (`logp_next`), so the view shows candidates, healing events,
    LM calls and the next-byte bars. `back()` returns to an earlier beam
    (kept, not recomputed).

    Args:
        llm: an `AsyncLM`.
        text: the text to read (str is UTF-8 encoded).
        params: `BeamParams` (default: K=4).
    """

    def __init__(self, llm: Any, text: bytes | str, params: Any = None) -> None:
        from genlm_lab.bytes import BeamParams

        if isinstance(text, str):
            text = text.encode("utf-8")
        if not isinstance(text, (bytes, bytearray)):
            raise ValueError(f"text must be str or bytes, got {type(text).__name__}")
        self.llm = llm
        self.params = BeamParams(K=4) if params is None else params
        self._beams: list[Any] = []
        self._lock = asyncio.Lock()
        super().__init__((), bytes(text))

    async def _ensure_initial(self) -> None:
        from genlm_lab.bytes import ByteBeamState

        if not self._beams:
            beam = await ByteBeamState.initial(self.llm, self.params)
            await beam.logp_next()
            self._beams = [beam]
            self._current = 0

    @property
    def beam(self) -> Any:
        """The `ByteBeamState` at the step shown (None before the first step)."""
        return self._beams[self._current] if self._beams else None

    async def step(self, n: int = 1) -> None:
        """Read the next `n` bytes (reusing beams already computed).

        Raises:
            ValueError: if `n` is not an int >= 0 (the view is left as it was).
        """
        _check_count(n)
        async with self._lock:
            await self._ensure_initial()
            target = min(len(self.text), self._current + n)
            self._error = ""
            try:
                while len(self._beams) - 1 < target:
                    pos = len(self._beams) - 1
                    beam = await (self._beams[-1].prune() << self.text[pos])
                    await beam.logp_next()
                    self._beams.append(beam)
                    self._current = pos + 1
                    self._steps = list(beam.history)
                    self._refresh()
            except Exception as err:
                self._error = f"{type(err).__name__} at byte {len(self._beams) - 1}: {err}"
                self._refresh(final=True)
                raise
            self._current = target
            self._steps = list(self._beams[-1].history)
            self._refresh(final=True)
