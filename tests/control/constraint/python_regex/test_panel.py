"""PythonRegex on the AWRS paper's 454 patterns: walks and near-misses against `regex` itself.

For each pattern: random walks through the potential's byte masks until EOS
(each ended text must `regex.fullmatch`, and every prefix of it must be live),
then near-misses by mutation (`complete` must equal `regex.fullmatch` on the
text; a mutant that matches must have every prefix live), and the mask of each
walked context against `prefix` of each extension asked separately.
`-m "not slow"` takes every 12th pattern; the full run takes each pattern once.
"""

from __future__ import annotations

import csv
import math
import random
from pathlib import Path

import numpy as np
import pytest
import regex

from genlm_lab.control import PythonRegex


def _patterns() -> list[str]:
    for shared in (Path(__file__).parents[3].parent / "shared", Path("/work/shared")):
        path = shared / "datasets" / "patterns.csv"
        if path.exists():
            with path.open(newline="") as f:
                return [row[0] for row in list(csv.reader(f))[1:]]
    return []


PATTERNS = _patterns()
if not PATTERNS:
    pytest.skip("patterns.csv (AWRS pattern task) is not here", allow_module_level=True)


def run(coro):
    """The value of a coroutine that never suspends, with no event loop.

    PythonRegex's `prefix` and `complete` compute and return; an event loop per call
    (`asyncio.run`, or a Runner's `run`) was a fifth of this file's ~300k calls' time.
    """
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    coro.close()
    raise AssertionError(f"{coro!r} suspended: it needs an event loop")


def matches(pattern: str, data: bytes) -> bool:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return regex.fullmatch(pattern, text) is not None


def walk(p: PythonRegex, rng: random.Random, steps: int = 24) -> tuple[bytes, bool]:
    """A random path through the masks: `(text, ended)`; ended iff EOS was taken."""
    text = b""
    for _ in range(steps):
        mask = p.allowed(list(text))
        options = np.flatnonzero(mask[:256])
        if mask[256] and (rng.random() < 0.35 or not len(options)):
            return text, True
        if not len(options):
            return text, False  # partial matching's over-approximation: a dead end
        ascii_options = options[options < 128]
        pool = ascii_options if len(ascii_options) and rng.random() < 0.9 else options
        text += bytes([int(rng.choice(pool))])
    return text, False


def mutants(text: str, rng: random.Random, n: int = 6) -> list[str]:
    alphabet = "ab1 -.:(@xZ\n\u00e9\u03b1"
    out = []
    for _ in range(n):
        i = rng.randrange(len(text) + 1)
        kind = rng.randrange(3)
        if kind == 0 and text:
            i = min(i, len(text) - 1)
            out.append(text[:i] + text[i + 1 :])
        elif kind == 1:
            out.append(text[:i] + rng.choice(alphabet) + text[i:])
        elif text:
            i = min(i, len(text) - 1)
            out.append(text[:i] + rng.choice(alphabet) + text[i + 1 :])
    return out


def check_pattern(pattern: str, seed: int) -> dict[str, int]:
    rng = random.Random(seed)
    p = PythonRegex(pattern)
    counts = {"ended": 0, "dead_ends": 0, "mutants": 0, "mask_bits": 0}
    ended_texts = []
    for _ in range(6):
        text, ended = walk(p, rng)
        if ended:
            assert matches(pattern, text), (pattern, text)
            ended_texts.append(text)
            counts["ended"] += 1
        elif run(p.prefix(list(text))) == 0 and not p.allowed(list(text)).any():
            counts["dead_ends"] += 1
        # the mask of the last context against prefix asked afresh, byte by byte
        fresh = PythonRegex(pattern)
        if run(fresh.prefix(list(text))) == 0:
            mask = p.allowed(list(text))
            for b in rng.sample(range(256), 24):
                assert mask[b] == (run(fresh.prefix([*text, b])) == 0), (pattern, text, b)
                counts["mask_bits"] += 1
    for text in ended_texts:
        for cut in range(len(text)):
            assert run(p.prefix(list(text[:cut]))) == 0, (pattern, text[:cut])
        for mutant in mutants(text.decode("utf-8"), rng):
            data = mutant.encode()
            assert (run(p.complete(list(data))) == 0) == matches(pattern, data), (pattern, data)
            if matches(pattern, data):
                assert all(run(p.prefix(list(data[:c]))) == 0 for c in range(len(data)))
            counts["mutants"] += 1
    return counts


def _panel_params() -> list:
    """Every pattern's index; all but every 12th are marked slow (`make test-fast` runs the 12th).

    One test per pattern, so that `make test`, which runs the slow tests too, checks
    each pattern once rather than a sample and then the whole panel again.
    """
    return [
        pytest.param(i, marks=() if i % 12 == 0 else (pytest.mark.slow,))
        for i in range(len(PATTERNS))
    ]


@pytest.mark.parametrize("index", _panel_params())
def test_the_panel_agrees_with_the_regex_module(index):
    counts = check_pattern(PATTERNS[index], index)
    assert counts["mask_bits"] > 0  # at least one walked context's mask was checked afresh


def test_complete_is_minus_inf_exactly_where_fullmatch_fails():
    p = PythonRegex(PATTERNS[1])  # ^(?|(a)|(b)|(c))\1$
    assert run(p.complete(list(b"aa"))) == 0 and run(p.complete(list(b"ab"))) == -math.inf
