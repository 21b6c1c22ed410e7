"""The model doctor: what to check before trusting a model you bring.

`model_report(name)` reads a model directory (or a registry name, or a hub id
in the local cache) without trusting it: the config (architecture, dtype,
size), the chat template, the tokenizer (`TokenizerReport`) and, where the
weights are small, whether the KV-cached backend gives the same log-probs as
a plain full forward (`check_cache_consistency`). Bigger models are checked
on a tiny random model of their config when a builder is registered with
`register_tiny_builder` (the architecture tests provide one).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "CacheCheck",
    "ModelReport",
    "check_cache_consistency",
    "model_report",
    "print_model_report",
    "register_tiny_builder",
]

#: Weights up to this size are loaded for the cache check (float32 on CPU).
SMALL_WEIGHTS_BYTES = 600 * 2**20
_PROMPTS = ("The capital of France is", "def add(a, b):\n    return", "日本語 and emoji 😀")
_TINY_BUILDER: list[Callable[[Any], Any]] = []


def register_tiny_builder(build: Callable[[Any], Any]) -> None:
    """Register `build(config) -> model`: a tiny random model of a config's architecture.

    The doctor uses it to check the KV cache of models too big to load here.
    """
    _TINY_BUILDER[:] = [build]


@dataclass
class CacheCheck:
    """Cached vs plain forward log-probs on a few prompts: max error and verdict."""

    what: str
    max_abs_error: float | None
    tolerance: float
    detail: str = ""

    @property
    def ok(self) -> bool | None:
        """True/False, or None where the check did not run."""
        return None if self.max_abs_error is None else self.max_abs_error <= self.tolerance


def check_cache_consistency(
    model: Any, tokenizer: Any, prompts: Sequence[str] = _PROMPTS, tolerance: float = 1e-3
) -> CacheCheck:
    """Compare the backend's cached, batched log-probs with one plain forward per prefix.

    Every prefix of every prompt is scored through `AsyncTransformer` (later
    prefixes reuse the KV cache of earlier ones; prompts of different lengths
    share padded batches) and by the bare model on the whole prefix.

    Returns:
        A `CacheCheck` with the largest absolute difference of log-probabilities.
    """
    import torch

    from genlm_lab.backend.hf import AsyncTransformer

    llm = AsyncTransformer(model, tokenizer, batch_size=8)
    start = [] if llm.bos_token_id is None else [llm.bos_token_id]
    rows = [start + list(tokenizer.encode(p, add_special_tokens=False)) for p in prompts]
    prefixes = [tuple(r[:k]) for r in rows for k in range(1, len(r) + 1)]
    cached = llm.batch_next_token_logprobs_sync(prefixes[::2])  # warm the cache, then reuse it
    cached = torch.cat([cached, llm.batch_next_token_logprobs_sync(prefixes[1::2])])
    order = prefixes[::2] + prefixes[1::2]
    worst = 0.0
    device = next(model.parameters()).device
    with torch.no_grad():
        for k, prefix in enumerate(order):
            logits = model(torch.tensor([prefix], device=device)).logits[0, -1, : llm.vocab_size]
            plain = torch.log_softmax(logits.float(), dim=-1).cpu()
            worst = max(worst, float((cached[k].cpu() - plain).abs().max()))
    what = f"{type(model).__name__}, {len(order)} prefixes"
    return CacheCheck(what, worst, tolerance)


def _weights_bytes(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.glob("*.safetensors")) + sum(
        p.stat().st_size for p in directory.glob("*.bin")
    )


@dataclass
class ModelReport:
    """The doctor's findings on one model: config facts, tokenizer report, cache check."""

    name: str
    facts: list[tuple[str, str]] = field(default_factory=list)
    tokenizer: Any = None
    cache: CacheCheck | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No problem found (the tokenizer round-trips, the cache agrees where checked)."""
        cache_ok = self.cache is None or self.cache.ok is not False
        tok_ok = self.tokenizer is not None and self.tokenizer.ok
        return not self.problems and cache_ok and tok_ok

    def lines(self) -> list[str]:
        """Plain-text lines for the terminal."""
        out = [f"{w:<18} {v}" for w, v in self.facts]
        if self.tokenizer is not None:
            out += str(self.tokenizer).splitlines()
        if self.cache is not None:
            c = self.cache
            if c.max_abs_error is None:
                out.append(f"{'KV cache':<18} not checked: {c.detail}")
            else:
                verdict = "ok" if c.ok else "DIFFERS"
                out.append(
                    f"{'KV cache':<18} {verdict}: cached vs full forward, max |Δ log p| = "
                    f"{c.max_abs_error:.1e} (tolerance {c.tolerance:.0e}; {c.what}) {c.detail}"
                )
        out += [f"{'PROBLEM':<18} {p}" for p in self.problems]
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def _repr_html_(self) -> str:
        import html

        pre = html.escape("\n".join(self.lines()))
        return f"<pre class='genlm-model-report'>{pre}</pre>"


def model_report(name: str, check_cache: bool = True) -> ModelReport:
    """Check a model the way a user should before trusting it (see the module docstring).

    Args:
        name: a local HF model directory, a registry name, or a hub id in the local cache.
        check_cache: run the cached-vs-plain forward check (small weights, or a
            tiny random model of the config where a builder is registered).
    """
    from genlm_lab.backend.models import load_tokenizer, local_model_dir
    from genlm_lab.tokenization.report import TokenizerReport

    report = ModelReport(name)
    directory = local_model_dir(name)
    report.facts.append(("directory", str(directory)))
    config = _config(directory)
    if config:
        arch = ", ".join(config.get("architectures") or [config.get("model_type", "?")])
        report.facts += [
            ("architecture", f"{arch} (model_type {config.get('model_type')!r})"),
            ("dtype", str(config.get("torch_dtype") or config.get("dtype") or "unspecified")),
            ("layers × width", f"{config.get('num_hidden_layers')} × {config.get('hidden_size')}"),
            ("context length", str(config.get("max_position_embeddings"))),
            ("config vocab", str(config.get("vocab_size"))),
        ]
    weights = _weights_bytes(directory)
    report.facts.append(("weights", f"{weights / 2**20:,.0f} MiB on disk"))
    try:
        tokenizer = load_tokenizer(str(directory))
    except Exception as exc:  # report it: the doctor never crashes on a bad model
        report.problems.append(f"tokenizer does not load: {type(exc).__name__}: {exc}")
        return report
    if getattr(tokenizer, "bos_token_id", None) is None:
        report.facts.append(("start token", _start_fact(config, tokenizer)))
    template = getattr(tokenizer, "chat_template", None)
    report.facts.append(("chat template", "yes" if template else "none (plain prompts only)"))
    try:
        report.tokenizer = TokenizerReport(tokenizer)
    except ValueError as exc:
        report.problems.append(str(exc))
        return report
    vocab = config.get("vocab_size") if config else None
    if isinstance(vocab, int) and vocab < len(report.tokenizer.decoding.byte_vocab):
        report.problems.append(
            f"the config scores {vocab} tokens but the tokenizer has "
            f"{len(report.tokenizer.decoding.byte_vocab)}: they do not belong together"
        )
    if check_cache:
        report.cache = _cache_check(name, directory, tokenizer, weights)
    return report


def _start_fact(config: dict, tokenizer: Any) -> str:
    """What an empty context starts from for a BOS-less tokenizer (as `AsyncTransformer` decides)."""
    from types import SimpleNamespace

    from genlm_lab.backend.hf import _start_token

    model = SimpleNamespace(config=SimpleNamespace(bos_token_id=config.get("bos_token_id")))
    found = _start_token(model, tokenizer, len(tokenizer))
    if found is None:
        return "none (no BOS, no special start token in the config): give every context a token"
    return f"{tokenizer.convert_ids_to_tokens(found)!r} ({found}), the config's bos_token_id"


def _config(directory: Path) -> dict:
    try:
        return json.loads((directory / "config.json").read_text())
    except (OSError, ValueError):
        return {}


def _cache_check(name: str, directory: Path, tokenizer: Any, weights: int) -> CacheCheck:
    from genlm_lab.backend.models import load_hf_model

    if weights and weights <= SMALL_WEIGHTS_BYTES:
        model, tok = load_hf_model(name, device="cpu")
        found = check_cache_consistency(model, tok)
        found.detail = "(the model's own weights)"
        return found
    if _TINY_BUILDER:
        from transformers import AutoConfig

        model = _TINY_BUILDER[0](AutoConfig.from_pretrained(directory))
        found = check_cache_consistency(model.eval(), tokenizer)
        found.detail = "(tiny random model of this config)"
        return found
    size = f"{weights / 2**30:.1f} GiB" if weights else "no weights found"
    return CacheCheck("", None, 1e-3, f"weights too big to load here ({size})")


def print_model_report(name: str, check_cache: bool = True) -> int:
    """`genlm-lab doctor --model NAME`: print the report; 1 where it found a problem, else 0."""
    report = model_report(name, check_cache=check_cache)
    print(str(report))
    print(f"{'verdict':<18} {'ok' if report.ok else 'PROBLEMS: see above'}")
    return 0 if report.ok else 1
