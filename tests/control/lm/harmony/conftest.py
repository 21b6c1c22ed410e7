"""The Harmony tests' shared pieces: gpt-oss's tokenizer as a HarmonyChat, OpenAI's parser."""

from __future__ import annotations

import pytest
from tokenizer_panel import load_panel_tokenizer, panel_dir, release_vocabulary_caches

from genlm_lab.control.lm.harmony import HarmonyChat
from tests.control.lm.harmony._gptoss import harmony_encoding


@pytest.fixture(scope="session")
def gptoss_chat():
    """A HarmonyChat over gpt-oss's 200k-token o200k_harmony vocabulary (the panel's)."""
    yield HarmonyChat(load_panel_tokenizer("gptoss"))
    release_vocabulary_caches()


@pytest.fixture(scope="session")
def openai_encoding(gptoss_chat, tmp_path_factory):
    """openai-harmony's gpt-oss encoding, over the same vocabulary."""
    return harmony_encoding(panel_dir("gptoss"), tmp_path_factory.mktemp("tiktoken"))
