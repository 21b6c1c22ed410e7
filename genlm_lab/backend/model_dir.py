"""A converted model directory: the layout every engine reads, published atomically, repaired.

genlm_lab writes model directories of its own (the default model dequantised
from its GGUF, tiny-random's weights) under its cache. This module holds their
on-disk contract: config with `architectures`, tokenizer, one safetensors file
with each shared tensor under its first name, and a marker file naming the
format; a format-1 copy (written before vLLM was tested) is repaired in place.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: Bumped whenever the converted layout changes. Format 1 stored a tied embedding only as
#: `lm_head.weight` and no `architectures`: transformers coped, vLLM loaded no input
#: embeddings. Such copies are repaired in place (`_repair_format_1`), others rebuilt.
_CACHE_FORMAT = 2
_MARKER = "genlm_lab_conversion.json"


def _is_converted(path: Path) -> bool:
    try:
        marker = json.loads((path / _MARKER).read_text())
    except (OSError, ValueError):
        return False
    if not isinstance(marker, dict):  # damaged marker: rebuild rather than crash
        return False
    return marker.get("format") == _CACHE_FORMAT and (path / "model.safetensors").is_file()


def _write_converted(model: Any, tokenizer: Any, target: Path, source: str) -> None:
    """Write config (without GGUF quantization_config), tokenizer and weights, atomically.

    `save_pretrained` refuses a GGUF-loaded model, so the parts are saved one
    by one, in the layout every engine reads: `architectures` in the config and
    each tied tensor under the name the model declares first (see
    `_engine_state_dict`). They go to a temporary sibling directory that is
    renamed into place, so concurrent processes never see a half-written
    cache: the first rename wins and the others discard their copy.
    """
    from safetensors.torch import save_file

    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        config = copy.deepcopy(model.config)
        if hasattr(config, "quantization_config"):
            del config.quantization_config
        config.architectures = [type(model).__name__]
        config.save_pretrained(tmp)
        model.generation_config.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        save_file(_engine_state_dict(model), str(tmp / "model.safetensors"), {"format": "pt"})
        _write_marker(tmp, source, str(model.dtype))
        _publish(tmp, target, _is_converted)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _write_marker(directory: Path, source: str, dtype: str) -> None:
    (directory / _MARKER).write_text(
        json.dumps({"format": _CACHE_FORMAT, "source": source, "dtype": dtype})
    )
    directory.chmod(0o755)


def _engine_state_dict(model: Any) -> dict[str, Any]:
    """The model's tensors with each shared one stored once, under its first name.

    A tied LLaMA holds one tensor as `model.embed_tokens.weight` and
    `lm_head.weight`. transformers reloads either name, but vLLM reads only the
    embedding's and skips `lm_head.weight` when tied; the state dict lists the
    embedding first, as `save_pretrained` keeps it.
    """
    kept: dict[str, Any] = {}
    seen: set[tuple[int, tuple[int, ...]]] = set()
    for name, tensor in model.state_dict().items():
        key = (tensor.data_ptr(), tuple(tensor.shape))
        if key in seen:
            continue
        seen.add(key)
        kept[name] = tensor.detach().contiguous()
    return kept


def _repair_format_1(target: Path) -> bool:
    """Bring a format-1 copy to the current layout, once, without dequantising the GGUF again.

    Renames a tied `lm_head.weight` to the embedding's name, adds
    `architectures`, and publishes the result as `_write_converted` does.

    Returns:
        False (and changes nothing) where `target` is not a readable format-1 copy.
    """
    try:
        marker = json.loads((target / _MARKER).read_text())
        config = json.loads((target / "config.json").read_text())
    except (OSError, ValueError):
        return False
    if not (isinstance(marker, dict) and marker.get("format") == 1 and isinstance(config, dict)):
        return False
    from safetensors.torch import load_file, save_file
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    architecture = MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.get(config.get("model_type"))
    if architecture is None:
        return False
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        for path in target.iterdir():
            if path.name not in ("model.safetensors", "config.json", _MARKER):
                shutil.copy2(path, tmp / path.name)
        weights = load_file(str(target / "model.safetensors"))
        if config.get("tie_word_embeddings") and "lm_head.weight" in weights:
            weights.setdefault("model.embed_tokens.weight", weights["lm_head.weight"])
            del weights["lm_head.weight"]
        save_file(weights, str(tmp / "model.safetensors"), {"format": "pt"})
        config["architectures"] = [architecture]
        (tmp / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
        _write_marker(tmp, marker.get("source", "unknown"), marker.get("dtype", "unknown"))
        _publish(tmp, target, _is_converted)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(
        f"genlm_lab: repaired the converted model in {target} (tied embedding saved under "
        "its own name, architectures added): vLLM and other engines can now read it",
        file=sys.stderr,
    )
    return True


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
