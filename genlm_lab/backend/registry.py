"""`load_model_by_name`: one call from a model name to a ready `AsyncLM`."""

from __future__ import annotations

import importlib.util
import inspect
from typing import Any

from genlm_lab.backend.base import AsyncLM

__all__ = ["BACKENDS", "default_backend", "load_model_by_name"]

#: Backends genlm_lab implements.
BACKENDS = ("hf", "vllm", "mock")
#: Backends of the GenLM seeds that genlm_lab does not implement.
_UNSUPPORTED = {"mlx": "Apple MLX", "sgl": "SGLang"}


def _check_opts(
    opts: dict[str, Any],
    backend: str,
    fns: list[Any],
    taken: set[str],
    extra: tuple[str, ...] = (),
) -> None:
    """Raise one ValueError, before any loading, for `llm_opts` keys the backend does not take.

    Accepted: the keyword parameters of `fns` (a constructor, and `from_name`
    where it is called) after their first one (`self`, or the model name),
    less `taken` (what `load_model_by_name` fills in), plus `extra`.
    """
    accepted = set(extra)
    for fn in fns:
        for param in list(inspect.signature(fn).parameters.values())[1:]:
            if param.kind is param.VAR_KEYWORD and fn.__name__ == "__init__":
                return  # a constructor that takes anything
            if param.kind in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY):
                accepted.add(param.name)
    accepted -= taken
    unknown = sorted(set(opts) - accepted)
    if unknown:
        raise ValueError(
            f"llm_opts {unknown} are not options of the {backend!r} backend; "
            f"expected some of {sorted(accepted)}"
        )


def default_backend() -> str:
    """`"vllm"` where CUDA is available and vLLM is installed, else `"hf"`."""
    import torch

    if torch.cuda.is_available() and importlib.util.find_spec("vllm") is not None:
        return "vllm"
    return "hf"


def load_model_by_name(
    name: str, backend: str | None = None, llm_opts: dict[str, Any] | None = None
) -> AsyncLM:
    """Load a language model by name as an `AsyncLM`.

    Args:
        name: `"smollm2-135m"` / `"default"` (the embedded SmolLM2-135M-Instruct),
            `"tiny-random"`, a local HF model directory, or a hub id whose
            weights are in the local HF cache.
        backend: `"hf"` (`AsyncTransformer`), `"vllm"` (`AsyncVirtualLM`) or
            `"mock"` (`MockAsyncLM` over the model's tokenizer, no weights);
            None picks `default_backend()`.
        llm_opts: keyword arguments for the backend's constructor, e.g.
            `{"batch_size": 32, "timeout": 0.02}` for `"hf"` or
            `{"engine_opts": {...}}` for `"vllm"`. `"hf"` also takes
            `device`, `dtype` and `progress` (a bar for the one-off conversion
            of the default model) for `load_hf_model`, and genlm-backend's
            `hf_opts` (`{"torch_dtype": ..., "device_map": ...}`).

    Returns:
        An `AsyncLM`.

    Raises:
        ValueError: for an unknown or unsupported backend, or bad `llm_opts`.
        ModelNotFoundError: (a `ValueError`) if the name resolves to no model
            on this machine; the message says what to install.
    """
    if backend is None:
        backend = default_backend()
    if not isinstance(backend, str):
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    key = backend.strip().lower()
    if key in _UNSUPPORTED:
        raise ValueError(
            f"backend {backend!r} ({_UNSUPPORTED[key]}) is not supported by genlm_lab; "
            f"use one of {', '.join(BACKENDS)}"
        )
    if key not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}: expected one of {', '.join(BACKENDS)}")
    if llm_opts is None:
        llm_opts = {}
    if not isinstance(llm_opts, dict):
        raise ValueError(
            f"llm_opts must be a dict of keyword arguments, got {type(llm_opts).__name__}"
        )
    opts = dict(llm_opts)

    if key == "mock":
        from genlm_lab.backend.mock import MockAsyncLM
        from genlm_lab.backend.models import load_tokenizer

        _check_opts(opts, key, [MockAsyncLM.__init__], taken={"tokenizer"})
        return MockAsyncLM(tokenizer=load_tokenizer(name), **opts)
    if key == "vllm":
        from genlm_lab.backend.vllm import AsyncVirtualLM

        fns = [AsyncVirtualLM.__init__, AsyncVirtualLM.from_name]
        _check_opts(opts, key, fns, taken={"llm_engine"})
        return AsyncVirtualLM.from_name(name, **opts)

    from genlm_lab.backend.hf import AsyncTransformer
    from genlm_lab.backend.models import hf_load_options, load_hf_model

    _check_opts(
        opts,
        key,
        [AsyncTransformer.__init__],
        taken={"hf_model", "hf_tokenizer"},
        extra=("device", "dtype", "progress", "hf_opts"),
    )
    load = hf_load_options(opts.pop("hf_opts", None))
    for name_ in ("device", "dtype"):
        if name_ in opts:
            load[name_] = opts.pop(name_)
    model, tokenizer = load_hf_model(name, progress=opts.pop("progress", None), **load)
    return AsyncTransformer(model, tokenizer, **opts)
