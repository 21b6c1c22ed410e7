"""The beam view's data: a recorded byte beam's steps as plain dicts (`beam_data`, `step_view`).

`BeamView` sends this to the browser (`widgets/beam.js`) and `beam_html`
(genlm_lab.widgets.beam_html) draws it as static HTML: per step the
candidates (tokens, partial token, weight, share, status), healing lines,
the top next bytes; over the steps logZ, its certified upper bound and the
LM calls.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from genlm_lab.util import byte_label, escape_bytes

__all__ = ["beam_data", "text_chars", "step_dict", "step_view"]

_STATUSES = ("new", "kept", "extended", "healed", "pruned")
_TOP_BYTES = 12


def step_dict(step: Any, index: int) -> dict:
    """A `BeamStep` (or its `to_dict()`) as a dict; ValueError naming step `index` otherwise."""
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
    d = step_dict(step, index)
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


def text_chars(text: bytes) -> list[dict]:
    """The text as characters decoded from UTF-8, each with its bytes: `{text, bytes, start, end}`.

    "text" is the character (a control character as its escape, a byte that
    is no part of valid UTF-8 as U+FFFD); "bytes" its bytes as `\\xNN`
    escapes (for a hover), or the character itself for plain ASCII; start and
    end its byte offsets, so that a view can tell a character read in part.
    """
    out = []
    i = 0
    while i < len(text):
        char, n = "\ufffd", 1
        for width in range(1, 5):
            try:
                decoded = text[i : i + width].decode("utf-8")
            except UnicodeDecodeError:
                continue
            if len(decoded) == 1:
                char, n = decoded, width
            break
        chunk = text[i : i + n]
        shown = char if char.isprintable() else escape_bytes(chunk)
        plain = chunk.isascii() and char.isprintable()
        label = shown if plain else "".join(f"\\x{b:02x}" for b in chunk)
        out.append({"text": shown, "bytes": label, "start": i, "end": i + n})
        i += n
    return out


def _alarms(step: Any, index: int) -> list[dict]:
    """A step's alarms as `{step, kind, text}` (records without any read as none)."""
    raw = step.alarms if hasattr(step, "to_dict") else step_dict(step, index).get("alarms")
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
        "chars": text_chars(text),
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
        d = step_dict(step, index)
        logz, calls = d["logZ"], int(d["lm_calls"]) + int(d.get("lm_calls_next", 0))
        logz = -math.inf if logz is None else float(logz)
        upper = d.get("logZ_upper")
        return d["position"], logz, calls, logz if upper is None else float(upper)
    logz = float(step.logZ)
    upper = getattr(step, "logZ_upper", None)
    calls = int(step.lm_calls) + int(step.lm_calls_next)
    return step.position, logz, calls, logz if upper is None else float(upper)
