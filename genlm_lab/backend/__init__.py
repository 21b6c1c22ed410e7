"""Async, auto-batched next-token log-probabilities from language models."""

from genlm_lab.backend.base import AsyncLM
from genlm_lab.backend.doctor import ModelReport, check_cache_consistency, model_report
from genlm_lab.backend.hf import AsyncTransformer
from genlm_lab.backend.mock import MockAsyncLM
from genlm_lab.backend.models import (
    ModelNotFoundError,
    default_model_path,
    default_model_status,
    known_model_names,
    load_hf_model,
    load_tokenizer,
)
from genlm_lab.backend.registry import load_model_by_name
from genlm_lab.backend.tiny import save_tiny_llama, tiny_llama
from genlm_lab.backend.toy import ToyLM
from genlm_lab.backend.vllm import AsyncVirtualLM

__all__ = [
    "AsyncLM",
    "AsyncTransformer",
    "AsyncVirtualLM",
    "MockAsyncLM",
    "ModelNotFoundError",
    "ModelReport",
    "ToyLM",
    "check_cache_consistency",
    "default_model_path",
    "default_model_status",
    "known_model_names",
    "load_hf_model",
    "load_model_by_name",
    "load_tokenizer",
    "model_report",
    "save_tiny_llama",
    "tiny_llama",
]
