"""Tiny random LLaMA models over any tokenizer's vocabulary.

A model this small runs the whole stack (backend, trie, byte beam, control,
SMC, views) on a real vocabulary in seconds, offline: the tool for testing a
tokenizer you bring before its real weights are at hand. Weights are drawn large
(standard deviation 0.3; about 5 in the logits) so that next-token distributions
are peaked, not near-uniform: a near-uniform model hides caching and indexing bugs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def model_vocab_size(tokenizer: Any) -> int:
    """Rows the output layer needs: ids can run past `len(tokenizer)` (vocabularies with holes)."""
    return max(len(tokenizer), max(tokenizer.get_vocab().values()) + 1)


def start_token_id(tokenizer: Any) -> int | None:
    """The id a model config names as BOS: the tokenizer's, else (BOS-less, as Qwen) pad or EOS."""
    for token_id in (tokenizer.bos_token_id, tokenizer.pad_token_id, tokenizer.eos_token_id):
        if token_id is not None:
            return token_id
    return None


def tiny_llama(
    tokenizer: Any,
    *,
    hidden_size: int = 16,
    num_layers: int = 2,
    num_heads: int = 2,
    num_kv_heads: int = 1,
    std: float = 0.3,
    head_std: float | None = None,
    tie_word_embeddings: bool = False,
    bos_token_id: int | None = None,
    max_position_embeddings: int = 512,
    seed: int = 0,
) -> Any:
    """A LLaMA with `tokenizer`'s vocabulary and seeded random weights of standard deviation `std`.

    Args:
        tokenizer: a Hugging Face tokenizer; its vocabulary sizes the embedding and output layers.
        std: standard deviation of every weight matrix but the output layer's.
        head_std: the output layer's; by default `5 / sqrt(hidden_size)`, so logits have a
            standard deviation near 5 and the next-token entropy sits well below log V
            (at `std` alone, a hidden size of 16 gives logits of deviation ~1: near-uniform).
        bos_token_id: the config's BOS; by default `start_token_id(tokenizer)`.
        seed: weights depend on it alone (torch's global generator is left as it was).
    """
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=model_vocab_size(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=num_kv_heads,
        max_position_embeddings=max_position_embeddings,
        bos_token_id=start_token_id(tokenizer) if bos_token_id is None else bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        tie_word_embeddings=tie_word_embeddings,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
        with torch.no_grad():
            for parameter in model.parameters():
                if parameter.dim() >= 2:
                    parameter.normal_(0.0, std)
            head = model.get_output_embeddings().weight
            head.normal_(0.0, 5 / hidden_size**0.5 if head_std is None else head_std)
    return model.eval()


def save_tiny_llama(tokenizer: Any, directory: str | Path, **options: Any) -> Path:
    """`tiny_llama(tokenizer, **options)` saved with its tokenizer as a local model directory.

    The directory loads as users load theirs: `load_model_by_name(str(directory))`.
    """
    directory = Path(directory)
    tiny_llama(tokenizer, **options).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory
