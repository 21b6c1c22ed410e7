"""Tiny random causal LMs of many transformers architectures, saved the way users keep models.

Each is built from its config in-process (no download), with a small byte-level
BPE tokenizer trained here on a few sentences (360 tokens; the model scores 24
more rows, as padded real checkpoints do), and weights redrawn
with std 0.3: at the default init (std 0.02) every next-token distribution is
nearly uniform, and a cache that returned the wrong position's log-probs would
pass any comparison.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

#: Scale of every weight matrix and bias: attention patterns and activations far from uniform.
WEIGHT_STD = 0.3
#: Scale of the output head: the hidden state leaves the final norm with unit RMS, so at
#: hidden size 32 a head of std 0.3 gives logits of std ~1.7 (entropy ~0.8 log V); 1.0 gives
#: next-token distributions with a few dominant tokens.
HEAD_STD = 1.0
#: Sliding window for the architectures that have one, shorter than the test contexts.
WINDOW = 4
#: Output rows beyond the tokenizer's vocabulary (the backend must ignore them).
PAD_ROWS = 24

_TEXT = [
    "The quick brown fox jumps over the lazy dog. " * 3,
    "A language model assigns probabilities to sequences of tokens.",
    "def f(x):\n    return x + 1\n",
    '{"name": "Alice", "age": 30}',
]

_SMALL = {
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 256,
}

#: name -> (transformers config class, its keyword arguments beyond vocabulary and special ids)
ARCHITECTURES: dict[str, tuple[str, dict[str, Any]]] = {
    "llama": ("LlamaConfig", _SMALL),
    "qwen2": ("Qwen2Config", _SMALL),
    "qwen3": ("Qwen3Config", {**_SMALL, "head_dim": 8}),
    "mistral-sliding": ("MistralConfig", {**_SMALL, "sliding_window": WINDOW}),
    "gemma2": (
        "Gemma2Config",
        {**_SMALL, "head_dim": 8, "query_pre_attn_scalar": 8, "sliding_window": WINDOW},
    ),
    "gemma3-text": (
        "Gemma3TextConfig",
        {**_SMALL, "head_dim": 8, "query_pre_attn_scalar": 8, "sliding_window": WINDOW},
    ),
    "phi3": ("Phi3Config", _SMALL),
    "gpt2": ("GPT2Config", {"n_embd": 32, "n_layer": 2, "n_head": 4, "n_positions": 256}),
    "gpt-neox": (
        "GPTNeoXConfig",
        {k: v for k, v in _SMALL.items() if k != "num_key_value_heads"},
    ),
    "olmo2": ("Olmo2Config", _SMALL),
    "mixtral": ("MixtralConfig", {**_SMALL, "num_local_experts": 4, "num_experts_per_tok": 2}),
    "gemma": ("GemmaConfig", {**_SMALL, "head_dim": 8}),
    "phi": ("PhiConfig", _SMALL),
    "stablelm": ("StableLmConfig", _SMALL),
    "qwen3-moe": (
        "Qwen3MoeConfig",
        {
            **_SMALL,
            "head_dim": 8,
            "num_experts": 4,
            "num_experts_per_tok": 2,
            "moe_intermediate_size": 32,
        },
    ),
    "starcoder2-sliding": ("Starcoder2Config", {**_SMALL, "sliding_window": WINDOW}),
    "cohere": ("CohereConfig", {**_SMALL, "logit_scale": 1.0}),  # default 1/16 flattens it
    "granite": ("GraniteConfig", _SMALL),
    "smollm3": ("SmolLM3Config", _SMALL),
    "opt": (
        "OPTConfig",
        {
            "hidden_size": 32,
            "ffn_dim": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "word_embed_proj_dim": 32,
            "max_position_embeddings": 256,
        },
    ),
    "bloom": ("BloomConfig", {"hidden_size": 32, "n_layer": 2, "n_head": 4}),
    "gptj": (
        "GPTJConfig",
        {"n_embd": 32, "n_layer": 2, "n_head": 4, "n_positions": 256, "rotary_dim": 4},
    ),
    "falcon": (
        "FalconConfig",
        {
            "hidden_size": 32,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_kv_heads": 2,
            "new_decoder_architecture": True,
            "max_position_embeddings": 256,
        },
    ),
}


def tiny_tokenizer() -> Any:
    """A byte-level BPE tokenizer of 360 tokens (`<s>` = 0 is BOS, `</s>` = 1 is EOS)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=384,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=["<s>", "</s>"],
        show_progress=False,
    )
    tok.train_from_iterator(_TEXT * 5, trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="</s>"
    )


def build_model(arch: str, tokenizer: Any, seed: int = 0) -> Any:
    """The architecture's causal LM with seeded weights of std `WEIGHT_STD`, in float32 eval mode.

    Matrices and biases are redrawn (the output head with `HEAD_STD`); norm
    scales keep their init (Gemma's `1 + w` norms stay at 1), so every layer
    stays well conditioned.
    """
    import transformers

    class_name, kwargs = ARCHITECTURES[arch]
    ids = {
        "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": tokenizer.eos_token_id,
        "pad_token_id": tokenizer.pad_token_id,
    }
    # padded past the tokenizer, as real checkpoints often are (Qwen, Llama 3 fine-tunes)
    config = getattr(transformers, class_name)(
        vocab_size=len(tokenizer) + PAD_ROWS, tie_word_embeddings=False, **ids, **kwargs
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = transformers.AutoModelForCausalLM.from_config(config)
        with torch.no_grad():
            for name, p in model.named_parameters():
                if p.dim() >= 2 or name.endswith("bias"):
                    p.normal_(0.0, WEIGHT_STD)
            model.get_output_embeddings().weight.normal_(0.0, HEAD_STD)
    return model.float().eval()


def save_model_dir(model: Any, tokenizer: Any, directory: Path) -> Path:
    """Write config, safetensors and tokenizer files, as a user's local model directory."""
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


@torch.inference_mode()
def full_forward_logprobs(model: Any, ids: list[int], n_tokens: int) -> torch.Tensor:
    """Log-probs of the first `n_tokens` ids after `ids`, from one plain forward (no cache)."""
    logits = model(torch.tensor([ids]), use_cache=False).logits[0, -1, :n_tokens]
    return torch.log_softmax(logits.float(), dim=-1)


def entropy(logprobs: torch.Tensor) -> float:
    """Entropy in nats of one log-prob vector."""
    return float(-(logprobs.exp() * logprobs).sum())
