"""xgrammar's JSON-schema token mask as a genlm_lab constraint (bench_json_gen's `xgr` column).

xgrammar 0.2.8 compiles the schema for the model's Hugging Face tokenizer
(`compile_json_schema`, compact: `any_whitespace=False`, its other defaults)
and fills a packed bitmask of the tokens that may follow a matcher's state.
`XgrammarMask` is a boolean `Potential` over `PromptedLLM.vocab` read from
that bitmask: a context's state is its parent's matcher forked and advanced
by one `accept_token` (states are cached per context, as SMC particles
extend their parent's), its mask one `fill_next_token_bitmask`, EOS allowed
where the mask allows the tokenizer's stop token. Coerced in no other way:
used as AWRS's condition exactly where the `llg` column uses llguidance's.
"""

from __future__ import annotations

import json
import math
import statistics
import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from genlm_lab.control import LazyWeights, Potential

_COMPILERS: dict[int, Any] = {}


def compiler(tokenizer: Any) -> Any:
    """One `GrammarCompiler` per tokenizer (xgrammar caches compiled grammars in it)."""
    import xgrammar as xgr

    if id(tokenizer) not in _COMPILERS:
        info = xgr.TokenizerInfo.from_huggingface(tokenizer)
        _COMPILERS[id(tokenizer)] = xgr.GrammarCompiler(info, max_threads=1)
    return _COMPILERS[id(tokenizer)]


class XgrammarMask(Potential):
    """0 / -inf over `llm.vocab` (and EOS) from xgrammar's compiled JSON schema."""

    is_boolean = True

    def __init__(self, schema: dict, llm: Any, cache_size: int = 4096) -> None:
        import xgrammar as xgr

        super().__init__(llm.vocab, eos=llm.eos)
        tokenizer = llm.model.tokenizer
        start = time.perf_counter()
        self.compiled = compiler(tokenizer).compile_json_schema(
            json.dumps(schema), any_whitespace=False
        )
        self.compile_s = time.perf_counter() - start
        size = self.compiled.tokenizer_info.vocab_size
        self.stop = list(self.compiled.tokenizer_info.stop_token_ids)
        self._ids = np.array([int(t.token_id) for t in self.vocab], dtype=np.int64)
        self._xgr = xgr
        self._bitmask = xgr.allocate_token_bitmask(1, size)
        self._size = size
        self._states: OrderedDict[tuple[int, ...], tuple[Any, np.ndarray] | None] = OrderedDict()
        self._cache_size = cache_size

    def _fill(self, matcher: Any) -> np.ndarray:
        """Bool over `vocab_eos`: the tokens xgrammar allows after `matcher`'s state."""
        matcher.fill_next_token_bitmask(self._bitmask)
        bits = np.unpackbits(self._bitmask.numpy().view(np.uint8), bitorder="little")
        allowed = np.empty(len(self.vocab) + 1, dtype=bool)
        allowed[:-1] = bits[self._ids]
        allowed[-1] = any(bits[s] for s in self.stop)
        return allowed

    def state(self, key: tuple[int, ...]) -> tuple[Any, np.ndarray] | None:
        """(matcher, mask) after the token indices `key`; None if xgrammar refuses them."""
        if key in self._states:
            self._states.move_to_end(key)
            return self._states[key]
        if not key:
            matcher = self._xgr.GrammarMatcher(self.compiled)
            found: tuple[Any, np.ndarray] | None = (matcher, self._fill(matcher))
        else:
            parent = self.state(key[:-1])
            if parent is None or not parent[1][key[-1]]:
                found = None
            else:
                matcher = parent[0].fork()
                ok = matcher.accept_token(int(self._ids[key[-1]]))
                found = (matcher, self._fill(matcher)) if ok else None
        self._states[key] = found
        if len(self._states) > self._cache_size:
            self._states.popitem(last=False)
        return found

    async def prefix(self, context: Sequence[Any]) -> float:
        return 0.0 if self.state(tuple(self.encode(context))) is not None else -math.inf

    async def complete(self, context: Sequence[Any]) -> float:
        found = self.state(tuple(self.encode(context)))
        return 0.0 if found is not None and found[1][-1] else -math.inf

    async def score(self, context: Sequence[Any]) -> float:
        key = tuple(self.encode(context))
        if not key:
            return 0.0
        found = self.state(key[:-1])
        return 0.0 if found is not None and found[1][key[-1]] else -math.inf

    async def logw_next(self, context: Sequence[Any]) -> LazyWeights:
        found = self.state(tuple(self.encode(context)))
        if found is None:
            raise ValueError(f"{self.name}: the context is not a prefix of the schema")
        return self.make_lazy_weights(np.where(found[1], 0.0, -math.inf))

    async def cleanup(self) -> None:
        self._states.clear()


def mask_cost(schema: dict, llm: Any, shortest: str) -> tuple[float, float]:
    """Median seconds per step along the shortest document: the adapter's (fork, accept,
    fill, unpack) and xgrammar's alone (one matcher: `accept_token` + `fill_next_token_bitmask`)."""
    mask = XgrammarMask(schema, llm)
    ids = llm.model.tokenizer.encode(shortest, add_special_tokens=False)
    position = {int(t): i for i, t in enumerate(mask._ids)}
    key = [position[i] for i in ids]
    ours, native = [], []
    for k in range(len(key)):
        start = time.perf_counter()
        mask.state(tuple(key[:k]))
        ours.append(time.perf_counter() - start)
    matcher = mask._xgr.GrammarMatcher(mask.compiled)
    for k in range(len(ids)):
        start = time.perf_counter()
        if k:
            matcher.accept_token(ids[k - 1])
        matcher.fill_next_token_bitmask(mask._bitmask)
        native.append(time.perf_counter() - start)
    return statistics.median(ours), statistics.median(native)
