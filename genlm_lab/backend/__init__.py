"""Async, auto-batched next-token log-probabilities from language models."""

from genlm_lab.backend.base import AsyncLM
from genlm_lab.backend.mock import MockAsyncLM
from genlm_lab.backend.toy import ToyLM

__all__ = ["AsyncLM", "MockAsyncLM", "ToyLM"]
