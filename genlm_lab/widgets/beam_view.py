"""`BeamView` / `BeamDebugger`: step a byte-level beam through a text and see its candidates.

The view also lists the beam's alarms up to the step shown (see
`genlm_lab.bytes.alarms`), and `profile_view()` draws a profiled beam's
time (`BeamParams(profile=True)`) in a `ProfileView`.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from typing import Any

from genlm_lab.util import byte_label, escape_bytes
from genlm_lab.widgets.base import LiveView, esm
from genlm_lab.widgets.render import (
    alarms_html,
    badge,
    bar,
    esc,
    fmt,
    line_chart,
    table,
    tok_box,
    wrap,
)

_STATUSES = ("new", "kept", "extended", "healed", "pruned")
_TOP_BYTES = 12


def _step_dict(step: Any, index: int) -> dict:
    d = step.to_dict() if hasattr(step, "to_dict") else step
    if not isinstance(d, dict) or "candidates" not in d or "position" not in d:
        raise ValueError(f"beam step {index} must be a BeamStep or its to_dict(), got {d!r:.80}")
    return d


def _heal_line(e: dict) -> str:
    where = f"candidate {e['candidate']}" if e.get("candidate") is not None else "no candidate"
    result = "healed" if e["success"] else "failed"
    return (
        f"byte {byte_label(e['byte'])} at {e['position']}: {where}, partial "
        f"'{e.get('partial_text', '')}', backoff {e.get('backoff')}, committed "
        f"{e.get('committed', [])}, {e.get('lm_calls', 0)} LM calls: {result}"
    )


def step_view(step: Any, index: int = 0) -> dict:
    """View data of one `BeamStep`: candidate rows, healing lines, top next bytes."""
    d = _step_dict(step, index)
    rows = []
    for c in d["candidates"]:
        if c["status"] not in _STATUSES:
            raise ValueError(f"candidate status {c['status']!r} is not one of {_STATUSES}")
        rows.append(
            {
                "tokens": list(
                    c.get("tokens_text")
                    or [escape_bytes(bytes(t), visible_space=True) for t in c["tokens"]]
                ),
                "token_ids": list(c["token_ids"]),
                "partial": c.get(
                    "partial_text", escape_bytes(bytes(c["partial"]), visible_space=True)
                ),
                "log_weight": -math.inf if c["log_weight"] is None else float(c["log_weight"]),
                "share": float(c["share"]),
                "status": c["status"],
                "terminated": bool(c.get("terminated", False)),
            }
        )
    nxt = []
    if d.get("next_logprobs") is not None:
        probs = [(i, math.exp(x)) for i, x in enumerate(d["next_logprobs"]) if x is not None]
        probs.sort(key=lambda kv: -kv[1])
        nxt = [{"label": byte_label(i), "p": p} for i, p in probs[:_TOP_BYTES] if p > 0]
    return {
        "position": d["position"],
        "byte": None if d["byte"] is None else byte_label(d["byte"]),
        "logZ": -math.inf if d["logZ"] is None else float(d["logZ"]),
        "lm_calls": int(d["lm_calls"]) + int(d.get("lm_calls_next", 0)),
        "skipped": int(d.get("skipped", 0)),
        "candidates": rows,
        "healing": [{"text": _heal_line(e), "success": bool(e["success"])} for e in d["healing"]],
        "next_bytes": nxt,
    }


def _alarms(step: Any, index: int) -> list[dict]:
    """A step's alarms as `{step, kind, text}` (records without any read as none)."""
    raw = step.alarms if hasattr(step, "to_dict") else _step_dict(step, index).get("alarms")
    return [{"step": int(a[0]), "kind": str(a[1]), "text": str(a[2])} for a in raw or ()]


def beam_data(
    steps: Sequence[Any],
    text: bytes | str | None = None,
    current: int | None = None,
    error: str = "",
) -> dict:
    """View data of a beam's history: the current step, logZ and LM calls over bytes.

    Args:
        steps: the `BeamStep`s (`beam.history`), position 0 first.
        text: the bytes being read (str is UTF-8 encoded), to show what is
            consumed and what is left.
        current: the step index shown (default: the last).
        error: a message to show (e.g. the beam emptied).

    Returns:
        A dict with "alarms": the alarms of the steps up to the one shown.
    """
    heads = [_head(s, i) for i, s in enumerate(steps)]
    for i, (pos, *_) in enumerate(heads):
        if pos != i:
            raise ValueError(
                f"beam step {i} is at position {pos}: steps must be consecutive from 0"
            )
    cur = len(heads) - 1 if current is None else current
    if heads and not 0 <= cur < len(heads):
        raise ValueError(f"current step {cur} is outside 0..{len(heads) - 1}")
    if isinstance(text, str):  # as BeamView takes it
        text = text.encode("utf-8")
    text = b"" if text is None else bytes(text)
    return {
        "kind": "beam",
        "text": [byte_label(b) for b in text],
        "position": cur if heads else 0,
        "n_bytes": len(text),
        "logZ": [h[1] for h in heads[: cur + 1]],
        "lm_calls": [h[2] for h in heads[: cur + 1]],
        "logZ_upper": [h[3] for h in heads[: cur + 1]],
        "step": step_view(steps[cur], cur) if heads else None,
        "alarms": [
            a for i, s in enumerate(steps[: cur + 1] if heads else ()) for a in _alarms(s, i)
        ],
        "error": error,
    }


def _head(step: Any, index: int) -> tuple[int, float, int, float]:
    """(position, logZ, LM calls, logZ_upper) of a step, read without converting its candidates.

    A record without `logZ_upper` (older JSON) reads as logZ: a band of width 0.
    """
    if not hasattr(step, "to_dict"):
        d = _step_dict(step, index)
        logz, calls = d["logZ"], int(d["lm_calls"]) + int(d.get("lm_calls_next", 0))
        logz = -math.inf if logz is None else float(logz)
        upper = d.get("logZ_upper")
        return d["position"], logz, calls, logz if upper is None else float(upper)
    logz = float(step.logZ)
    upper = getattr(step, "logZ_upper", None)
    calls = int(step.lm_calls) + int(step.lm_calls_next)
    return step.position, logz, calls, logz if upper is None else float(upper)


def beam_html(data: dict) -> str:
    """Static HTML of `beam_data`: text so far, candidate table, next-byte bars, logZ line."""
    pos, st = data["position"], data["step"]
    done = "".join(f"<b>{esc(x)}</b>" for x in data["text"][:pos])
    rest = "".join(esc(x) for x in data["text"][pos:])
    parts = [
        f"<div class='genlm-title genlm-status'>Byte beam: {pos} / {data['n_bytes']} bytes read</div>",
        f"<div class='genlm-text genlm-progress'>{done}<span class='genlm-note'>{rest}</span></div>",
    ]
    if data["error"]:
        parts.append(f"<div class='genlm-error'>{esc(data['error'])}</div>")
    parts.append(alarms_html(data.get("alarms"), "position"))
    if st is None:
        return wrap("".join(parts), "beam")
    byte = "initial beam" if st["byte"] is None else f"after byte {st['byte']}"
    parts.append(
        f"<div class='genlm-note'>{esc(byte)}: logZ {esc(fmt(st['logZ']))}, "
        f"{st['lm_calls']} LM calls this step, {len(st['candidates'])} candidates"
        + (f", {st['skipped']} extensions skipped" if st["skipped"] else "")
        + "</div>"
    )
    rows = []
    for c in st["candidates"]:
        toks = "".join(tok_box(t) for t in c["tokens"]) + tok_box(c["partial"], partial=True)
        mark = badge(c["status"]) + (badge("EOS") if c["terminated"] else "")
        rows.append(
            f"<tr class='genlm-{esc(c['status'])}'><td>{toks}</td>"
            f"<td class='genlm-num'>{esc(fmt(c['log_weight']))}</td>"
            f"<td>{bar(c['share'])}<span class='genlm-num'>{esc(fmt(c['share']))}</span></td>"
            f"<td>{mark}</td></tr>"
        )
    parts.append(table(["tokens | partial", "log weight", "share of logZ", "status"], rows))
    for h in st["healing"]:
        parts.append(f"<div class='genlm-note genlm-heal'>healing: {esc(h['text'])}</div>")
    if st["next_bytes"]:
        nb = [
            f"<tr><td><code>{esc(b['label'])}</code></td><td>{bar(b['p'])}"
            f"<span class='genlm-num'>{esc(fmt(b['p']))}</span></td></tr>"
            for b in st["next_bytes"]
        ]
        parts.append(
            "<div class='genlm-title'>Next byte</div>" + table(["byte", "probability"], nb)
        )
    parts.append(
        "<div class='genlm-cols'>"
        + line_chart(
            [
                ("logZ", data["logZ"], "genlm-line"),
                ("logZ upper bound", data["logZ_upper"], "genlm-line2"),
            ],
            title="logZ and its certified upper bound (dashed)",
        )
        + line_chart([("LM calls", data["lm_calls"], "genlm-line2")], title="LM calls per step")
        + "</div>"
    )
    return wrap("".join(parts), "beam")


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
                _step_dict(s, i)["byte"]
                for i, s in enumerate(history)
                if i and _step_dict(s, i)["byte"] < 256
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
