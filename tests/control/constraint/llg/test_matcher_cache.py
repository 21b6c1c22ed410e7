"""StateCache: matchers moved forward and recovered give the states a fresh matcher gives."""

from __future__ import annotations

import random

import pytest

from genlm_lab.control import BoolCFG
from genlm_lab.control.constraint.llg.engine import Engine
from genlm_lab.control.constraint.llg.matcher_cache import StateCache

GRAMMAR_TEXT = r"""
start: item ("," item)*
item: "a"+ "b"? | "(" start ")"
"""


def fresh(engine: Engine, context: tuple[int, ...]):
    """The reference: a new matcher from the grammar's start, consuming token by token."""
    matcher = engine._root.deep_copy()
    for token in context:
        if token >= engine.n_tokens or not matcher.consume_token(token) or matcher.is_error():
            return None
    return matcher


@pytest.mark.parametrize(("entries", "tokens"), [(4096, 1 << 22), (3, 1 << 22), (50, 40)])
def test_random_access_gives_the_fresh_state(entries, tokens):
    engine = BoolCFG.from_lark(GRAMMAR_TEXT).engine
    cache = StateCache(engine._root.deep_copy(), engine.n_tokens, entries, tokens)
    rng = random.Random(entries)
    pool = [ord(c) for c in "ab(),"] + [256]
    seen: list[tuple[int, ...]] = [()]
    for _ in range(600):
        base = rng.choice(seen[-20:] if rng.random() < 0.8 else seen)
        context = base + tuple(rng.choice(pool) for _ in range(rng.choice([1, 1, 1, 2, 5])))
        if rng.random() < 0.2:
            context = context[: rng.randrange(len(context) + 1)]
        got = cache.get(context)
        want = fresh(engine, context)
        assert (got is None) == (want is None), bytes(t for t in context if t < 256)
        if want is not None:
            assert got.compute_bitmask() == want.compute_bitmask()
            assert got.is_accepting() == want.is_accepting()
            seen.append(context)
        assert len(cache) <= entries
    assert cache.stats["moves"] > 20 and cache.stats["copies"] > 20
    if entries == 3:
        assert cache.stats["rebuilt"] > 10  # evictions forced rebuilds from further back
