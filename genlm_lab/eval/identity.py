"""What decides a run's output, written down as data: the model, the instance, the evaluator.

A stored run is reused only when everything that decides its output is the
same (lm-evaluation-harness keys its cache the same way, by the model's
arguments). This module turns each of those things into a JSON-able dict;
the runner hashes the dicts into a run's key:

- `model_identity(llm)`: name, architecture, backend, dtype, device, the
  LoRA adapter, the sampling temperature and a fingerprint of the weights.
  The fingerprint hashes the weights in memory (0.05 s for tiny-random,
  0.75 s for the 135M default model on two quiet cores, 3.7 s on busy ones) and is cached per
  model object until a parameter changes in place; a model over
  `HASH_LIMIT_BYTES` loaded from a directory is fingerprinted by its weight
  files' names, sizes and modification times instead (cheap; sound as long
  as files are not rewritten with their old mtime). A model this module
  cannot read (a custom adaptor, an unknown backend) gets an identity with
  `"identified": False`, and the runner then reuses its stored runs only on
  request (`run_evaluation(..., reuse_unidentified=True)`).
- `describe_potential(potential)`: a constraint or critic as built, by its
  class, kind and source (the pattern, the schema, the grammar).
- `method_identity`, `adaptor_model_identity`, `instance_identity`: the same
  for what `run_evaluation` is given (an adaptor, its method, an instance);
  `run_keys` hashes them into a run's key and its output's key.
- `evaluator_identity(evaluator)`: its class and `version` (bump it when a
  checker changes).
- `provenance()`: versions of genlm_lab, torch, transformers and
  llguidance, Python, CPU and GPU: recorded with every run, not part of its key.
"""

from __future__ import annotations

import hashlib
import json
import platform
import sys
import weakref
from pathlib import Path
from typing import Any

__all__ = [
    "HASH_LIMIT_BYTES",
    "UNKNOWN_MODEL",
    "adaptor_model_identity",
    "describe_potential",
    "evaluator_identity",
    "identity_hash",
    "instance_identity",
    "method_identity",
    "model_identity",
    "provenance",
    "run_keys",
]

#: Name under which runs of an unidentified model (and runs migrated from old stores) are shown.
UNKNOWN_MODEL = "model unknown"
#: Models whose weights take more bytes than this are fingerprinted by their files, if any.
HASH_LIMIT_BYTES = 2 * 1024**3
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf")
_FINGERPRINTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def identity_hash(identity: Any) -> str:
    """A short stable hash of a JSON-able identity (sorted keys)."""
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _unwrap(llm: Any) -> tuple[Any, float | None]:
    """The AsyncLM under a `PromptedLLM` (or a counting wrapper), and the temperature if known."""
    temperature = getattr(llm, "temperature", None)
    inner = getattr(llm, "model", None)
    if inner is not None and hasattr(inner, "next_token_logprobs"):
        return _unwrap(inner)[0], temperature
    return llm, temperature


def _weight_files(path: str) -> list[Path]:
    if not path:
        return []
    folder = Path(path)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.suffix in _WEIGHT_SUFFIXES and p.is_file())


def _hash_tensors(module: Any) -> str:
    import torch

    h = hashlib.blake2b(digest_size=16)
    for name, tensor in sorted(module.state_dict().items()):
        t = tensor.detach()
        h.update(f"{name}:{t.dtype}:{tuple(t.shape)}".encode())
        if t.numel():
            h.update(t.contiguous().reshape(-1).view(torch.uint8).cpu().numpy().tobytes())
    return "tensors:" + h.hexdigest()


def weights_fingerprint(module: Any) -> str:
    """A fingerprint of a torch module's weights (see the module docstring for the method).

    Args:
        module: a `torch.nn.Module` (a Hugging Face model, LoRA adapters included).

    Returns:
        "tensors:<hash>" (weights hashed in memory) or "files:<hash>" (weight files'
        names, sizes and mtimes).
    """
    params = list(module.state_dict(keep_vars=True).values())  # the tensors themselves
    size = sum(p.numel() * p.element_size() for p in params)
    files = _weight_files(str(getattr(getattr(module, "config", None), "_name_or_path", "") or ""))
    if size > HASH_LIMIT_BYTES and files:
        stats = [(p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in files]
        return "files:" + identity_hash(stats)
    # Cached while the very same tensors hold the weights (weak references: a freed tensor's
    # memory may be reused by a new one) and none was written in place (torch bumps a
    # tensor's version on every in-place write).
    versions = [p._version for p in params]
    cached = _FINGERPRINTS.get(module)
    if (
        cached is not None
        and len(cached[0]) == len(params)
        and all(r() is p for r, p in zip(cached[0], params, strict=True))
        and cached[1] == versions
    ):
        return cached[2]
    fingerprint = _hash_tensors(module)
    _FINGERPRINTS[module] = ([weakref.ref(p) for p in params], versions, fingerprint)
    return fingerprint


def _function_identity(fn: Any) -> str | None:
    if fn is None:
        return None
    code = getattr(fn, "__code__", None)
    if code is None:
        return f"{type(fn).__module__}.{type(fn).__qualname__}"
    text = f"{fn.__module__}.{fn.__qualname__}:{code.co_code.hex()}:{code.co_consts!r}"
    return identity_hash(text)


def model_identity(llm: Any, name: str | None = None) -> dict[str, Any]:
    """Everything about a model that decides what it generates, as a JSON-able dict.

    Args:
        llm: a `PromptedLLM`, an `AsyncLM` (Hugging Face, ToyLM, ...), or any
            object with a `model_identity` attribute (a dict, or a method returning one).
        name: the name to show (default: the model's directory name, else its architecture).

    Returns:
        A dict with "name" and "identified" (False where the model could not be
        read: such runs are reused only on request).
    """
    lm, temperature = _unwrap(llm)
    own = getattr(lm, "model_identity", None)
    if callable(own):
        own = own()
    if isinstance(own, dict):
        out = {"identified": True, **own}
        out["name"] = name or str(own.get("name") or type(lm).__name__)
        return out
    backend = f"{type(lm).__module__}.{type(lm).__qualname__}"
    hf = getattr(lm, "model", None)
    if hf is not None and hasattr(hf, "state_dict") and hasattr(hf, "config"):
        config = hf.config
        path = str(getattr(config, "_name_or_path", "") or "")
        arch = str(getattr(config, "model_type", "") or type(hf).__name__)
        fingerprint = weights_fingerprint(hf)
        first = next(iter(hf.parameters()), None)
        shown = name or getattr(lm, "name", None) or (Path(path).name if path else None)
        return {
            "identified": True,
            "name": str(shown or f"{arch}-{fingerprint.split(':')[1][:8]}"),
            "path": path or None,
            "architecture": arch,
            "backend": backend,
            "dtype": None if first is None else str(first.dtype),
            "device": None if first is None else first.device.type,
            "lora": getattr(lm, "active_lora", None),
            "weights": fingerprint,
            "vocab_size": getattr(lm, "vocab_size", None),
            "temperature": temperature,
        }
    if hasattr(lm, "logprobs_fn") and hasattr(lm, "byte_vocab"):  # ToyLM: its rule and its seed
        vocab = identity_hash([bytes(t).hex() for t in lm.byte_vocab])
        return {
            "identified": True,
            "name": name or f"{type(lm).__name__}(seed={getattr(lm, 'seed', None)})",
            "backend": backend,
            "vocab": vocab,
            "seed": getattr(lm, "seed", None),
            "logprobs_fn": _function_identity(lm.logprobs_fn),
            "temperature": temperature,
        }
    return {
        "identified": False,
        "name": name or f"{UNKNOWN_MODEL} ({type(lm).__qualname__})",
        "backend": backend,
        "temperature": temperature,
    }


def describe_potential(potential: Any) -> dict[str, Any] | None:
    """A built constraint or critic as data: its class, kind, source and repr (None for none)."""
    if potential is None:
        return None
    out: dict[str, Any] = {"class": f"{type(potential).__module__}.{type(potential).__qualname__}"}
    for attr in ("kind", "source", "pattern", "schema", "grammar"):
        value = getattr(potential, attr, None)
        if isinstance(value, (str, int, float, bool, dict, list)):
            out[attr] = value
    text = repr(potential)
    if " at 0x" not in text:  # a default repr names a memory address: no identity at all
        out["repr"] = text
    return out


def evaluator_identity(evaluator: Any) -> dict[str, str]:
    """An evaluator's class and its `version` (bump `version` when the checker changes)."""
    cls = type(evaluator)
    return {
        "class": f"{cls.__module__}.{cls.__qualname__}",
        "version": str(getattr(evaluator, "version", "")),
    }


def method_identity(model: Any, method: Any) -> tuple[str, dict]:
    """(name, config) that identify a model adaptor's method in the store.

    Args:
        model: the adaptor (its `config`, a `Method`, is used when `method` is None).
        method: a name, a pydantic config or a dict; None: the adaptor's own.
    """
    if method is None:
        method = getattr(model, "config", None)
    if method is None:
        name = getattr(model, "__qualname__", type(model).__name__)
        return name, {"adaptor": name}
    if isinstance(method, str):
        return method, {"name": method}
    if hasattr(method, "model_dump"):
        config = method.model_dump(mode="json")
        return str(config.get("name") or config.get("kind") or type(method).__name__), config
    config = dict(method)
    return str(config.get("name", "method")), config


def adaptor_model_identity(model: Any, model_id: Any, model_name: str | None) -> dict[str, Any]:
    """The identity of the model behind an adaptor: `model_id` if given, else the adaptor's own.

    An adaptor that cannot say (a plain async function) gets `"identified": False`
    and a name under `UNKNOWN_MODEL`.
    """
    if isinstance(model_id, str):
        return {"identified": True, "name": model_name or model_id, "id": model_id}
    if isinstance(model_id, dict):
        return {"identified": True, **model_id, "name": model_name or model_id.get("name", "model")}
    own = getattr(model, "model_identity", None)
    if callable(own):
        identity = dict(own())
        if model_name:
            identity["name"] = model_name
        return identity
    adaptor = getattr(model, "__qualname__", type(model).__qualname__)
    return {
        "identified": False,
        "name": model_name or f"{UNKNOWN_MODEL} ({adaptor})",
        "adaptor": adaptor,
    }


def instance_identity(model: Any, instance: Any) -> dict[str, Any]:
    """An instance as the adaptor builds it (prompt, constraint), else the instance's own data."""
    own = getattr(model, "instance_identity", None)
    if callable(own):
        return own(instance)
    return {"instance": instance.model_dump(mode="json")}


def run_keys(
    method_hash: str,
    model_hash: str,
    instance_hash: str,
    evaluator: dict,
    domain: str,
    replicate: int,
    seed: int,
) -> tuple[str, str]:
    """(run_key, output_key): a run's identity, and the same without the evaluator."""
    output_key = identity_hash(
        {
            "method": method_hash,
            "model": model_hash,
            "instance": instance_hash,
            "domain": domain,
            "replicate": int(replicate),
            "seed": int(seed),
        }
    )
    return identity_hash({"output": output_key, "evaluator": evaluator}), output_key


def _version(package: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return None


def provenance() -> dict[str, Any]:
    """Where and with what a run was made: package versions, Python, CPU, GPU (not part of a key)."""
    out: dict[str, Any] = {
        "genlm_lab": _version("genlm-lab") or _version("genlm_lab"),
        "torch": _version("torch"),
        "transformers": _version("transformers"),
        "llguidance": _version("llguidance"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu": platform.processor() or platform.machine(),
        "gpu": None,
    }
    torch = sys.modules.get("torch")  # never imported for this alone
    if torch is not None and torch.cuda.is_available():
        out["gpu"] = torch.cuda.get_device_name(0)
    return out
