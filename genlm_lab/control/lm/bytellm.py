"""`ByteLLM`: a byte-level language model (the byte beam) as a potential over bytes.

`prefix(x)` is the beam's log-probability of the bytes `x` after the prompt,
`logw_next(x)` its next-byte distribution with EOS; so `ByteLLM * regex`
constrains generation byte by byte, with no tokenization boundary in the
way. Beams are cached per context: a particle that extends its parent by
one byte reads one byte.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from genlm_lab.bytes import BeamParams, ByteBeamState
from genlm_lab.bytes.probs import EOS as EOS_SLOT
from genlm_lab.control.core.weights import LazyWeights
from genlm_lab.control.potential.base import Potential

__all__ = ["ByteLLM"]


class ByteLLM(Potential):
    """An `AsyncLM` read byte by byte through a `ByteBeamState`, over the bytes 0..255 and EOS.

    Args:
        llm: any `AsyncLM`.
        beam_params: the beam's settings (`BeamParams(K=..., eos_byte_strings=...)`).
        prompt: text (or bytes) the generation continues.
        cache_size: how many beams (one per context) to keep.
    """

    def __init__(
        self,
        llm: Any,
        beam_params: BeamParams | None = None,
        prompt: str | bytes = b"",
        cache_size: int = 1024,
    ) -> None:
        super().__init__(list(range(256)))
        self.llm = llm
        self.beam_params = BeamParams(K=5) if beam_params is None else beam_params
        if not isinstance(self.beam_params, BeamParams):
            raise ValueError(f"beam_params must be a BeamParams, got {beam_params!r}")
        self.cache_size = cache_size
        self._beams: OrderedDict[bytes, ByteBeamState] = OrderedDict()
        self._start: ByteBeamState | None = None
        self.prompt_bytes = prompt.encode("utf-8") if isinstance(prompt, str) else bytes(prompt)

    @classmethod
    def from_name(
        cls,
        name: str,
        beam_params: BeamParams | None = None,
        backend: str | None = None,
        cache_size: int = 1024,
        **kwargs: Any,
    ) -> ByteLLM:
        """Load a model by name (`load_model_by_name`) and read it byte by byte.

        Args:
            name: `"default"`, `"tiny-random"`, a local HF directory or a cached hub id.
            beam_params: as for the constructor.
            cache_size: as for the constructor.
            backend: `"hf"`, `"vllm"` or `"mock"`; None picks one.
            **kwargs: `llm_opts` for the backend, `prompt`.

        Raises:
            TypeError: for any other keyword.
        """
        from genlm_lab.backend import load_model_by_name

        llm_opts = kwargs.pop("llm_opts", None)
        prompt = kwargs.pop("prompt", b"")
        if kwargs:
            raise TypeError(f"ByteLLM.from_name got unexpected keywords {sorted(kwargs)}")
        llm = load_model_by_name(name, backend=backend, llm_opts=llm_opts)
        return cls(llm, beam_params, prompt=prompt, cache_size=cache_size)

    def set_prompt_from_str(self, prompt: str) -> None:
        """Continue `prompt` from now on (cached beams are dropped)."""
        self.prompt_bytes = prompt.encode("utf-8")
        self._beams.clear()
        self._start = None

    async def _beam(self, context: Sequence[Any]) -> ByteBeamState:
        data = bytes(self.encode(context))
        if self._start is None:
            start = await ByteBeamState.initial(self.llm, self.beam_params)
            self._start = await start.prefill(self.prompt_bytes) if self.prompt_bytes else start
        found = self._beams.get(data)
        if found is not None:
            self._beams.move_to_end(data)
            return found
        cut = len(data)
        while cut > 0 and data[:cut] not in self._beams:
            cut -= 1
        beam = self._beams[data[:cut]] if cut else self._start
        for i in range(cut, len(data)):
            beam = await (beam.prune() << data[i])
            self._beams[data[: i + 1]] = beam
        while len(self._beams) > self.cache_size:
            self._beams.popitem(last=False)
        return beam

    async def prefix(self, context: Sequence[Any]) -> float:
        beam = await self._beam(context)
        return beam.logZ - self._start.logZ

    async def complete(self, context: Sequence[Any]) -> float:
        beam = await self._beam(context)
        eos = (await beam.logp_next())[EOS_SLOT]
        return beam.logZ - self._start.logZ + eos

    async def logw_next(self, context: Sequence[Any]) -> LazyWeights:
        beam = await self._beam(context)
        probs = await beam.logp_next()
        weights = np.empty(257)
        weights[:256] = [probs[b] for b in range(256)]
        weights[256] = probs[EOS_SLOT]
        weights[np.isnan(weights)] = -math.inf
        return self.make_lazy_weights(weights)

    async def cleanup(self) -> None:
        """Release the beams and their caches (`async with ByteLLM(...)` does it on exit)."""
        if self._start is not None:
            await self._start.cleanup()
        self._beams.clear()
        self._start = None

    async def __aenter__(self) -> ByteLLM:
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.cleanup()

    def __repr__(self) -> str:
        return f"ByteLLM({type(self.llm).__name__}, K={self.beam_params.K}, prompt={self.prompt_bytes!r:.40})"
