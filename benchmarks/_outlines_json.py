"""outlines' JSON-schema token mask as a genlm_lab constraint (bench_json_gen's `outlines` column).

outlines 1.3.3 turns a JSON schema into a regex (outlines-core 0.2.14's
`build_regex_from_schema`, its default whitespace `[ ]?`) and the regex into an
`Index`, a token automaton over the tokenizer's vocabulary, built as outlines'
own Transformers backend builds it (`OutlinesCoreBackend.
create_outlines_core_vocabulary` over `TransformerTokenizer`'s token strings).
`OutlinesMask` is a boolean `Potential` over `PromptedLLM.vocab` read from
that automaton: a context's state is its parent's advanced by one
`get_next_state` (states cached per context, as SMC particles extend their
parent's), its mask the state's `get_allowed_tokens` (cached per automaton
state), EOS allowed where those include the tokenizer's stop token. Coerced in
no other way: used as AWRS's condition exactly where `llg` uses llguidance's.

The `Index` is built in a child process under a memory and a time cap: on some
panel schemas (optional keys holding free-form objects, e.g.
bitbucket-pipelines:agent_definition) outlines-core's construction passed 22 GB
here and was killed by the kernel. Past a cap the schema is `CompileFailed`,
as a schema outlines refuses is: the bench measures nothing for it.
"""

from __future__ import annotations

import json
import math
import pickle
import resource
import statistics
import subprocess
import sys
import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from genlm_lab.control import LazyWeights, Potential

MEMORY_CAP = 4 << 30  # bytes of address space for the child building an Index
TIME_CAP = 180.0  # seconds for the child building an Index
_VOCABULARIES: dict[int, Any] = {}
_INDEXES: OrderedDict[tuple[int, str], Any] = OrderedDict()  # the last few, for mask_cost
_CHILD = (  # (schema, Vocabulary) pickled in, the Index pickled out; imports outlines-core alone
    "import pickle, sys\nfrom outlines_core import Index\n"
    "from outlines_core.json_schema import build_regex_from_schema\n"
    "schema, vocab = pickle.loads(sys.stdin.buffer.read())\n"
    "try:\n    regex = build_regex_from_schema(schema, None)\n"
    "except BaseException as error:  # its refusal: a ValueError or a Rust panic\n"
    "    sys.exit(f'outlines refused the schema: {type(error).__name__}: {error}')\n"
    "sys.stdout.buffer.write(pickle.dumps(Index(regex, vocab)))\n"
)


class CompileFailed(RuntimeError):
    """outlines could not turn the schema into a token automaton (refused, or past a cap)."""


def vocabulary(tokenizer: Any) -> Any:
    """outlines-core's `Vocabulary` of a Hugging Face tokenizer, as outlines' backend builds it."""
    from outlines.backends.outlines_core import OutlinesCoreBackend
    from outlines.models.transformers import TransformerTokenizer

    if id(tokenizer) not in _VOCABULARIES:
        wrapped = TransformerTokenizer(tokenizer)
        _VOCABULARIES[id(tokenizer)] = OutlinesCoreBackend.create_outlines_core_vocabulary(
            wrapped.get_vocab(), wrapped.eos_token_id, wrapped.eos_token,
            wrapped.convert_token_to_string,
        )  # fmt: skip
    return _VOCABULARIES[id(tokenizer)]


def _limit_memory(memory: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))


def build_index(
    schema: str, vocab: Any, memory: int = MEMORY_CAP, timeout: float = TIME_CAP
) -> Any:
    """outlines' `Index` of the JSON schema text `schema` (its regex, then the automaton over
    `vocab`), built in a child process under `memory` bytes and `timeout` seconds: a crash or
    a blow-up of outlines-core's ends the child, not the caller.

    Raises:
        CompileFailed: outlines refused the schema, or the child passed a cap or died.
    """
    try:
        done = subprocess.run(
            [sys.executable, "-c", _CHILD], input=pickle.dumps((schema, vocab)),
            capture_output=True, timeout=timeout, preexec_fn=lambda: _limit_memory(memory),
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        raise CompileFailed(f"outlines' Index not built within {timeout:.0f} s") from None
    if done.returncode != 0:
        lines = done.stderr.decode(errors="replace").strip().splitlines()
        last = lines[-1] if lines else f"exit status {done.returncode}"
        if not last.startswith("outlines refused") and (
            "memory" in last.lower() or done.returncode < 0
        ):
            last = f"outlines' Index passed {memory / 2**30:.0f} GiB or died ({last})"
        raise CompileFailed(last[:300])
    return pickle.loads(done.stdout)


def compile_schema(schema: dict, tokenizer: Any, **caps: Any) -> Any:
    """The `Index` of `schema` for `tokenizer` (the last two kept); `caps` go to `build_index`."""
    key = (id(tokenizer), json.dumps(schema))
    if key not in _INDEXES:
        _INDEXES[key] = build_index(key[1], vocabulary(tokenizer), **caps)
        while len(_INDEXES) > 2:
            _INDEXES.popitem(last=False)
    return _INDEXES[key]


class OutlinesMask(Potential):
    """0 / -inf over `llm.vocab` (and EOS) from outlines' token automaton of a JSON schema."""

    is_boolean = True

    def __init__(self, schema: dict, llm: Any, cache_size: int = 4096, **caps: Any) -> None:
        super().__init__(llm.vocab, eos=llm.eos)
        self.tokenizer = tokenizer = llm.model.tokenizer
        start = time.perf_counter()
        self.index = compile_schema(schema, tokenizer, **caps)
        self.compile_s = time.perf_counter() - start
        self.stop = int(vocabulary(tokenizer).get_eos_token_id())
        self._ids = np.array([int(t.token_id) for t in self.vocab], dtype=np.int64)
        self._size = max(int(self._ids.max()), self.stop, len(tokenizer)) + 1
        self._states: OrderedDict[tuple[int, ...], int | None] = OrderedDict()
        self._masks: dict[int, np.ndarray] = {}
        self._cache_size = cache_size

    def mask(self, state: int) -> np.ndarray:
        """Bool over `vocab_eos`: the tokens outlines allows in automaton state `state`."""
        if state not in self._masks:
            member = np.zeros(self._size, dtype=bool)
            member[np.fromiter(self.index.get_allowed_tokens(state), dtype=np.int64)] = True
            allowed = np.empty(len(self.vocab) + 1, dtype=bool)
            allowed[:-1] = member[self._ids]
            allowed[-1] = member[self.stop]
            self._masks[state] = allowed
        return self._masks[state]

    def state(self, key: tuple[int, ...]) -> int | None:
        """The automaton state after the token indices `key`; None if outlines refuses them."""
        if key in self._states:
            self._states.move_to_end(key)
            return self._states[key]
        if not key:
            found: int | None = self.index.get_initial_state()
        else:
            parent = self.state(key[:-1])
            if parent is None or not self.mask(parent)[key[-1]]:
                found = None
            else:
                found = self.index.get_next_state(parent, int(self._ids[key[-1]]))
        self._states[key] = found
        if len(self._states) > self._cache_size:
            self._states.popitem(last=False)
        return found

    async def prefix(self, context: Sequence[Any]) -> float:
        return 0.0 if self.state(tuple(self.encode(context))) is not None else -math.inf

    async def complete(self, context: Sequence[Any]) -> float:
        found = self.state(tuple(self.encode(context)))
        return 0.0 if found is not None and self.mask(found)[-1] else -math.inf

    async def score(self, context: Sequence[Any]) -> float:
        key = tuple(self.encode(context))
        if not key:
            return 0.0
        found = self.state(key[:-1])
        return 0.0 if found is not None and self.mask(found)[key[-1]] else -math.inf

    async def logw_next(self, context: Sequence[Any]) -> LazyWeights:
        found = self.state(tuple(self.encode(context)))
        if found is None:
            raise ValueError(f"{self.name}: the context is not a prefix of the schema")
        return self.make_lazy_weights(np.where(self.mask(found), 0.0, -math.inf))

    async def cleanup(self) -> None:
        self._states.clear()
        self._masks.clear()


def mask_cost(schema: dict, llm: Any, shortest: str) -> tuple[float, float]:
    """Median seconds per step along the shortest document: the adapter's (next state, allowed
    tokens onto our vocabulary; a fresh mask, the compiled Index reused) and outlines' own as
    its logits processor runs it (`Guide.advance` + `fill_next_token_bitmask`)."""
    from outlines_core import Guide
    from outlines_core.kernels.numpy import allocate_token_bitmask, fill_next_token_bitmask

    mask = OutlinesMask(schema, llm)
    ids = llm.model.tokenizer.encode(shortest, add_special_tokens=False)
    position = {int(t): i for i, t in enumerate(mask._ids)}
    key = [position[i] for i in ids]
    ours, native = [], []
    for k in range(len(key)):  # up to the first token outlines refuses, if any
        start = time.perf_counter()
        state = mask.state(tuple(key[:k]))
        if state is None:
            break
        mask.mask(state)
        ours.append(time.perf_counter() - start)
    guide, bitmask = Guide(mask.index), allocate_token_bitmask(mask._size)
    for k in range(len(ours)):
        start = time.perf_counter()
        if k:
            guide.advance(token_id=ids[k - 1], return_tokens=False)
        fill_next_token_bitmask(guide, bitmask)
        native.append(time.perf_counter() - start)
    return statistics.median(ours), statistics.median(native)
