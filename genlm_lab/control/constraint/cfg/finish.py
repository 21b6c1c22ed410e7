"""A short way to finish a prefix of a Lark grammar, read off an Earley chart and checked on the mask.

`finish(engine, reader, prefix)` returns bytes that make `prefix` a complete
text of the grammar, or None. The Earley chart of the prefix (`cfg.earley`)
says what is open at its end: each item `A -> alpha . beta` started at `o`
costs the shortest string of `beta`, and then `A` is done at `o`, which
advances every item of set `o` that awaited `A`; a terminal half written at
the end costs the shortest rest of its regex first. The cheapest way from
the end to `start` done at 0 is a shortest path over `(symbol, origin)`
(Dijkstra; every edge costs the shortest string of what is left of a rule):
the shortest completion, where the recognizer's splits are llguidance's.

llguidance's lexer takes the longest match, so two terminals written side by
side may read as one (`0` `0` as the number `00`): every finish is checked on
the engine (the prefix plus it must be accepted), then again with the
shortest `%ignore` string between the terminals, and where both fail (or
`lark` cannot read the grammar: llguidance's extensions, a text that is not
UTF-8) a breadth-first search over the mask, of a few masks, has the last
word. What is returned is always accepted by the engine.
"""

from __future__ import annotations

import heapq
from collections import deque
from typing import Any

import numpy as np

from genlm_lab.control.constraint.cfg.earley import LarkChart

__all__ = ["finish", "shortest_completion"]

_EOS = 256
#: masks the fallback search reads before giving up
SEARCH_MASKS = 48


def _sources(reader: LarkChart, text: str) -> list[tuple[int, Any, tuple[str, ...], Any]]:
    """`(cost, glued, pieces, node)`: ways to close an item open at the end of `text`.

    Where a terminal is half written, `glued` is `(origin, name)` and the cost a bound
    (one byte for its rest): the rest is found only if the path comes first.
    """
    chart = reader.chart(text)
    n = len(text)
    out: list = []

    def close(items: Any, skip: int, cost: int, glued: Any) -> None:
        for r, dot, origin in items:
            rest = reader.rest(r, dot + skip)
            if rest is not None:
                out.append((cost + rest[0], glued, rest[1], (reader.rules[r][0], origin)))

    close(chart.sets[n], 0, 0, "")
    for origin, name in chart.scans:
        m = reader.patterns[name].fullmatch(text, origin, n, partial=True)
        if m is None or not m.partial:
            continue  # a full match is in set n already
        if name in reader.ignore:
            close(chart.sets[origin], 0, 1, (origin, name))
        close(chart.waiting[origin].get(name, ()), 1, 1, (origin, name))
    return out


def shortest_completion(reader: LarkChart, text: str) -> tuple[str, list[str]] | None:
    """`(glued, pieces)`: the shortest completion of `text` under the chart's splits (None:
    none). `glued` finishes a terminal the text ends inside; `pieces` are whole terminals."""
    chart = reader.chart(text)
    if chart.dead:
        return None
    heap: list = []
    for k, (cost, glued, pieces, node) in enumerate(_sources(reader, text)):
        heap.append((cost, k, node, glued, (pieces, None)))
    heapq.heapify(heap)
    goal = (reader.start, 0)
    done: set = set()
    tails: dict = {}
    count = len(heap)
    while heap:
        cost, _, node, glued, chain = heapq.heappop(heap)
        if node in done:
            continue
        if isinstance(glued, tuple):  # a half-written terminal: its rest, now it is needed
            if glued not in tails:
                origin, name = glued
                tails[glued] = reader.rest_of(name, text[origin:])
            tail = tails[glued]
            if tail is not None:
                count += 1
                heapq.heappush(heap, (cost - 1 + len(tail), count, node, tail, chain))
            continue
        done.add(node)
        if node == goal:
            parts: list[tuple[str, ...]] = []
            while chain is not None:
                parts.append(chain[0])
                chain = chain[1]
            return glued, [p for part in reversed(parts) for p in part]
        symbol, origin = node
        for r, dot, parent_origin in chart.waiting[origin].get(symbol, ()):
            lhs = reader.rules[r][0]
            rest = reader.rest(r, dot + 1)
            if rest is None or (lhs, parent_origin) in done:
                continue
            count += 1
            step = (rest[1], chain)
            heapq.heappush(heap, (cost + rest[0], count, (lhs, parent_origin), glued, step))
    return None


def _candidates(reader: LarkChart, text: str) -> list[bytes]:
    """The chart's shortest completion as written, then with the shortest ignore between its
    terminals, then also before the first (where it would merge with the prefix's last)."""
    found = shortest_completion(reader, text)
    if found is None:
        return []
    glued, pieces = found
    out = [glued + "".join(pieces)]
    gaps = [reader.pieces[n][0] for n in reader.ignore if n in reader.pieces]
    if gaps and pieces:
        gap = min(gaps, key=len)
        out += [glued + gap.join(pieces), glued + gap + gap.join(pieces)]
    return [c.encode("utf-8") for c in dict.fromkeys(out)]


def search(engine: Any, prefix: bytes, max_masks: int = SEARCH_MASKS) -> bytes | None:
    """The shortest finish within `max_masks` masks, breadth first over the mask (None: none)."""
    frontier = deque([b""])
    for _ in range(max_masks):
        if not frontier:
            return None
        tail = frontier.popleft()
        mask = engine.mask(prefix + tail)
        if mask[_EOS]:
            return tail
        frontier.extend(tail + bytes([b]) for b in np.flatnonzero(mask[:_EOS]).tolist())
    return None


def finish(engine: Any, reader: LarkChart | None, prefix: bytes, limit: int = 1024) -> bytes | None:
    """Bytes that make `prefix` a complete text (None: a dead prefix, or none found).

    Args:
        engine: the byte-level `Engine` of a `BoolCFG` (masks over 256 bytes + EOS).
        reader: the grammar's `LarkChart`, or None (then only the search).
        prefix: the text so far.
        limit: the most bytes a finish may have.
    """
    if not engine.alive(prefix):
        return None
    if engine.accepting(prefix):
        return b""
    if reader is not None:
        char = _end_char(engine, prefix)
        text = _text(prefix + char) if char is not None else None
        if text is not None:
            for candidate in _candidates(reader, text):
                candidate = char + candidate
                if len(candidate) <= limit and engine.accepting(prefix + candidate):
                    return candidate
    return search(engine, prefix)


def _text(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _end_char(engine: Any, prefix: bytes) -> bytes | None:
    """The bytes that end a character the prefix stops inside (b"": none; None: no way found).

    Each is the first continuation byte the mask allows, so the character is one the
    grammar takes there (a `\\d` written as `\\xd9` goes on to an Arabic digit)."""
    start = max(0, len(prefix) - 3)
    for i in range(len(prefix) - 1, start - 1, -1):
        lead = prefix[i]
        if lead < 0x80:
            return b""
        if lead >= 0xC0:  # the last character starts here: how many bytes it still needs
            need = (2 if lead < 0xE0 else 3 if lead < 0xF0 else 4) - (len(prefix) - i)
            out = b""
            for _ in range(max(need, 0)):
                allowed = np.flatnonzero(engine.mask(prefix + out)[0x80:0xC0])
                if not len(allowed):
                    return None
                out += bytes([0x80 + int(allowed[0])])
            return out
    return b""
