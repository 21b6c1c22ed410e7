"""`ByteEnsemble`: two language models read byte by byte, combined by a weighted mean.

Two models with different tokenizers cannot be ensembled token by token (their
tokens differ), but read byte by byte (each through its own `ByteBeamState`)
both are distributions over the same bytes and EOS. Let `P_k(x)` be the
product of model k's next-byte probabilities along the bytes `x` (its beam's
conditionals, so `P_k(x) * P_k(EOS | x)` is its probability of the whole text
`x`). The ensemble weighs `x` by `op(P_1(x), P_2(x))`, `op` a weighted mean
(`convert_to_weighted_logop`: "sum" a mixture, "prod" a product of experts,
...): `prefix` and `complete` are that mean of the two models' prefix and
complete probabilities, and `logw_next(x)[y] = prefix(x + y) - prefix(x)`.
A sampler drawing byte by byte from `logw_next` (`ByteEnsembleTokenSampler`)
is therefore properly weighted for `op` over whole texts, which mixing the two
next-byte distributions step by step would not be (except for "prod").

Weights come from the conditionals, not from each beam's `logZ`: when a beam
prunes, `logZ` and the conditionals disagree, and only the conditionals make
`prefix` and `logw_next` agree exactly. A model that gives a byte probability
zero is dead from there on (its `P_k` is 0, its beam no longer read); the
other one carries the text alone where `op` allows it (a mixture does, a
product does not).

Every context keeps both beams, both models' log-probabilities and, once
asked, both next-byte rows (an LRU of `cache_size` contexts): a particle that
extends its parent by one byte reads one byte per model. Concurrent particles
asking for the same context share one computation.
"""

from __future__ import annotations

import asyncio
import math
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from genlm_lab.bytes import BeamParams, ByteBeamState
from genlm_lab.bytes.probs import EOS as EOS_SLOT
from genlm_lab.control.core.weights import LazyWeights
from genlm_lab.control.potential.base import Potential
from genlm_lab.control.potential.logops import WeightedLogOp, convert_to_weighted_logop

__all__ = ["ByteEnsemble", "EnsembleRows"]

_SLOTS = np.array([*range(256), EOS_SLOT])  # the beam's slots in vocab_eos order


@dataclass
class EnsembleRows:
    """Both models at one context: their log-probabilities of it and their next-byte rows.

    Attributes:
        logp1: model 1's log-probability of the context's bytes (its prefix weight).
        logp2: the same for model 2.
        row1: model 1's next-byte log-probabilities, 257 entries (bytes 0..255, EOS).
        row2: the same for model 2.
    """

    logp1: float
    logp2: float
    row1: np.ndarray
    row2: np.ndarray


class _Node:
    """One cached context: both beams (None once a model gave it probability zero)."""

    __slots__ = ("beam1", "beam2", "logp1", "logp2", "rows", "pending")

    def __init__(self, beam1: Any, beam2: Any, logp1: float, logp2: float) -> None:
        self.beam1, self.beam2 = beam1, beam2
        self.logp1, self.logp2 = logp1, logp2
        self.rows: tuple[np.ndarray, np.ndarray] | None = None
        self.pending: asyncio.Future | None = None


async def _row(beam: Any) -> np.ndarray:
    """A beam's next-byte log-probabilities in vocab_eos order (all -inf for a dead model)."""
    if beam is None:
        return np.full(257, -math.inf)
    probs = await beam.logp_next()
    row = np.asarray(probs.array, dtype=float)[_SLOTS]
    row[np.isnan(row)] = -math.inf
    return row


def _eos_strings(beam: Any, k: int) -> list[bytes]:
    params = getattr(beam, "params", None)
    found = sorted(
        bytes(t) if isinstance(t, (bytes, bytearray)) else t
        for t in getattr(params, "eos_byte_strings", None) or ()
    )
    if not found:
        raise ValueError(
            f"model {k}'s beam has no EOS byte string, so it could never end a text and the "
            "ensemble could not either: give its BeamParams eos_byte_strings=[...] (create() "
            "reads them from each model's tokenizer)"
        )
    return found


class ByteEnsemble(Potential):
    """Two LMs' byte-level probabilities combined by a weighted mean, over the bytes 0..255.

    Build it with `await ByteEnsemble.create(llm1, llm2, op, prompt1, prompt2, a)`
    (genlm-control's entry); the constructor takes the two models' beams
    after their prompts, as `create` makes them.

    Args:
        p1: the first model (an `AsyncLM`; kept for reference).
        p2: the second model.
        op: "sum", "prod", "harmonic", "min", "max", a power-mean exponent, or
            a `WeightedLogOp` already built (then `a` is its own).
        data_dict_1: maps `b""` to model 1's beam after its prompt (other
            entries are ignored: the ensemble grows its own cache).
        data_dict_2: the same for model 2.
        vocab: the bytes, `list(range(256))` (the only vocabulary allowed).
        eos_tokens: each model's EOS byte string, as its beam ends on; None
            reads them from the beams.
        a: the weight in (0, 1) of model 1 (see `convert_to_weighted_logop`).
        cache_size: how many contexts keep their beams (the empty one always does).

    Attributes:
        p1, p2: the two models.
        op: the weighted log-space operation, `op(logp1, logp2)`.
        eos_tokens: the two models' EOS byte strings.

    Raises:
        ValueError: for a vocabulary other than the 256 bytes, a missing start
            beam, a beam without EOS, `eos_tokens` its beams do not end on, a
            bad `op` or `a`, or a bad `cache_size`.
    """

    def __init__(
        self,
        p1: Any,
        p2: Any,
        op: str | float | WeightedLogOp,
        data_dict_1: Mapping[bytes, Any],
        data_dict_2: Mapping[bytes, Any],
        vocab: Sequence[int] | None = None,
        eos_tokens: Sequence[bytes] | None = None,
        a: float = 0.5,
        cache_size: int = 1024,
    ) -> None:
        if vocab is not None and list(vocab) != list(range(256)):
            raise ValueError(
                f"ByteEnsemble is over the 256 bytes: vocab must be list(range(256)), got "
                f"{len(list(vocab))} tokens starting {list(vocab)[:3]!r}"
            )
        self.op = op if isinstance(op, WeightedLogOp) else convert_to_weighted_logop(op, a)
        if isinstance(cache_size, bool) or not isinstance(cache_size, int) or cache_size < 1:
            raise ValueError(f"cache_size must be an int >= 1, got {cache_size!r}")
        starts = []
        for k, data in ((1, data_dict_1), (2, data_dict_2)):
            beam = data.get(b"") if isinstance(data, Mapping) else None
            if beam is None or not hasattr(beam, "logp_next") or not hasattr(beam, "prune"):
                raise ValueError(
                    f"data_dict_{k} must map b'' to model {k}'s beam after its prompt; "
                    "build the ensemble with `await ByteEnsemble.create(...)`"
                )
            starts.append(beam)
        found = [_eos_strings(beam, k) for k, beam in enumerate(starts, 1)]
        if eos_tokens is None:
            eos_tokens = [f[0] for f in found]
        eos_tokens = [bytes(t) if isinstance(t, (bytes, bytearray)) else t for t in eos_tokens]
        if len(eos_tokens) != 2 or any(t not in f for t, f in zip(eos_tokens, found, strict=False)):
            raise ValueError(
                f"eos_tokens {eos_tokens!r} are not the EOS byte strings the two beams end on "
                f"({found[0]!r} and {found[1]!r}): give one per model, in order, or None"
            )
        super().__init__(list(range(256)))
        self.p1, self.p2 = p1, p2
        self.eos_tokens = eos_tokens
        self.cache_size = cache_size
        self._root = _Node(starts[0], starts[1], 0.0, 0.0)
        self._nodes: OrderedDict[bytes, _Node] = OrderedDict({b"": self._root})
        self._pending: dict[bytes, asyncio.Future] = {}

    @classmethod
    async def create(
        cls,
        llm1: Any,
        llm2: Any,
        op: str | float,
        prompt1: bytes = b"",
        prompt2: bytes = b"",
        a: float = 0.5,
        K: int = 5,  # noqa: N803 - genlm-control's name
        prune_threshold: float = 0.0,
        verbose: bool = False,
        cache_size: int = 1024,
    ) -> ByteEnsemble:
        """Read both models' prompts into beams of width `K` and ensemble what follows.

        Each beam ends on its own model's EOS token (`tokenizer.eos_token_id`).

        Raises:
            ValueError: if a model has no EOS token, a prompt leaves its beam
                empty, or as for the constructor.
        """
        op_fn = convert_to_weighted_logop(op, a)  # a bad op or a fails before any model call
        beams = []
        for k, llm, prompt in ((1, llm1, prompt1), (2, llm2, prompt2)):
            eos_id = getattr(getattr(llm, "tokenizer", None), "eos_token_id", None)
            if eos_id is None:
                raise ValueError(
                    f"model {k} ({type(llm).__name__}) has no EOS token (tokenizer.eos_token_id), "
                    "so it could never end a text: a byte-level ensemble needs both to end"
                )
            params = BeamParams(
                K=K,
                prune_threshold=prune_threshold,
                verbose=verbose,
                eos_byte_strings=[bytes(llm.byte_vocab[eos_id])],
            )
            beam = await ByteBeamState.initial(llm, params)
            if prompt:
                beam = await beam.prefill(bytes(prompt))
            if len(beam) == 0:
                raise ValueError(f"model {k}'s beam is empty after its prompt {prompt!r:.60}")
            beams.append(beam)
        return cls(llm1, llm2, op_fn, {b"": beams[0]}, {b"": beams[1]}, cache_size=cache_size)

    def _default_name(self) -> str:
        return f"ByteEnsemble({type(self.p1).__name__}, {type(self.p2).__name__}, {self.op.label})"

    # ------------------------------------------------------------ the cache of contexts
    @property
    def data_dict_1(self) -> dict[bytes, Any]:
        """Model 1's beam of every cached context (genlm-control's name), None where it is dead."""
        return {key: node.beam1 for key, node in self._nodes.items()}

    @property
    def data_dict_2(self) -> dict[bytes, Any]:
        """Model 2's beam of every cached context."""
        return {key: node.beam2 for key, node in self._nodes.items()}

    async def _node(self, context: Sequence[Any]) -> _Node:
        data = bytes(self.encode(context))
        node = self._nodes.get(data)
        if node is not None:
            self._nodes.move_to_end(data)
            return node
        cut = len(data) - 1
        while cut > 0 and data[:cut] not in self._nodes:
            cut -= 1
        node = self._nodes[data[:cut]]
        for i in range(cut, len(data)):
            node = await self._child(data[: i + 1], node)
        return node

    async def _child(self, key: bytes, parent: _Node) -> _Node:
        """The node of `key`, read from its parent's by one byte (once, however many ask)."""
        node = self._nodes.get(key)
        if node is not None:
            return node
        pending = self._pending.get(key)
        if pending is None:
            pending = asyncio.ensure_future(self._read(key, parent))
            self._pending[key] = pending
            pending.add_done_callback(lambda _, key=key: self._pending.pop(key, None))
        return await asyncio.shield(pending)

    async def _read(self, key: bytes, parent: _Node) -> _Node:
        row1, row2 = await self._rows(parent)
        b = key[-1]
        logp1, logp2 = parent.logp1 + row1[b], parent.logp2 + row2[b]

        async def advance(beam: Any, logp: float) -> Any:
            return None if logp == -math.inf else await (beam.prune() << b)

        beam1, beam2 = await asyncio.gather(
            advance(parent.beam1, logp1), advance(parent.beam2, logp2)
        )
        node = _Node(beam1, beam2, float(logp1), float(logp2))
        self._nodes[key] = node
        while len(self._nodes) > self.cache_size:
            oldest = next(iter(self._nodes))
            if oldest == b"":
                self._nodes.move_to_end(oldest)
                continue
            del self._nodes[oldest]
        return node

    async def _rows(self, node: _Node) -> tuple[np.ndarray, np.ndarray]:
        if node.rows is not None:
            return node.rows
        if node.pending is None:
            node.pending = asyncio.ensure_future(asyncio.gather(_row(node.beam1), _row(node.beam2)))
        rows = await asyncio.shield(node.pending)
        node.rows, node.pending = (rows[0], rows[1]), None
        return node.rows

    # ------------------------------------------------------------ the two models apart
    async def get_beam_states(self, context: Sequence[Any]) -> tuple[Any, Any]:
        """Both models' beams after `context` (genlm-control's name); None for a dead model."""
        node = await self._node(context)
        return node.beam1, node.beam2

    async def component_rows(self, context: Sequence[Any]) -> EnsembleRows:
        """Both models' log-probabilities of `context` and their next-byte rows."""
        node = await self._node(context)
        row1, row2 = await self._rows(node)
        return EnsembleRows(node.logp1, node.logp2, row1, row2)

    async def component_logws(self, context: Sequence[Any]) -> tuple[float, float]:
        """Each model's log-probability of `context`: of the whole text if it ends with EOS."""
        context = list(context)
        ended = bool(context) and context[-1] == self.eos
        rows = await self.component_rows(context[:-1] if ended else context)
        if not ended:
            return rows.logp1, rows.logp2
        return rows.logp1 + float(rows.row1[-1]), rows.logp2 + float(rows.row2[-1])

    # ------------------------------------------------------------ the potential
    async def prefix(self, context: Sequence[Any]) -> float:
        """`op(P_1(context), P_2(context))`, in log space."""
        node = await self._node(context)
        return float(self.op(node.logp1, node.logp2))

    async def complete(self, context: Sequence[Any]) -> float:
        """`op` of both models' probabilities of the whole text `context`, in log space."""
        rows = await self.component_rows(context)
        return float(self.op(rows.logp1 + rows.row1[-1], rows.logp2 + rows.row2[-1]))

    async def logw_next(self, context: Sequence[Any]) -> LazyWeights:
        """`prefix(context + [y]) - prefix(context)` for every byte `y`, EOS from `complete`.

        Raises:
            ValueError: if `context` has weight zero under `prefix`.
        """
        rows = await self.component_rows(context)
        base = float(self.op(rows.logp1, rows.logp2))
        if base == -math.inf:
            raise ValueError(
                f"context {bytes(self.encode(context))!r:.80} has weight zero under {self.name}: "
                "nothing can follow it"
            )
        return self.make_lazy_weights(
            self.op(rows.logp1 + rows.row1, rows.logp2 + rows.row2) - base
        )

    async def cleanup(self) -> None:
        """Drop every cached context but the start, and stop both beams' background work."""
        self._nodes = OrderedDict({b"": self._root})
        await asyncio.gather(
            *(b.cleanup() for b in (self._root.beam1, self._root.beam2) if hasattr(b, "cleanup"))
        )

    def __repr__(self) -> str:
        return f"ByteEnsemble({self.p1!r}, {self.p2!r}, {self.op.label})"
