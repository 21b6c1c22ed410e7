"""The model doctor on models a user brings: tiny random LLaMAs over panel vocabularies.

Each model directory holds a real tokenizer of the panel (Qwen3 has no BOS,
Llama 2 is SentencePiece) and random weights, saved and loaded as a user's
own model would be. The doctor's cache check compares the KV-cached backend
with a plain forward; the BOS-less model must work wherever a BOS model does.
"""

import asyncio

import pytest
import torch
from tokenizer_panel import load_panel_tokenizer

from genlm_lab.backend.doctor import check_cache_consistency, model_report, register_tiny_builder
from genlm_lab.backend.tiny import tiny_llama


def _tiny_llama(tokenizer, bos_token_id):
    """One layer, tied embeddings, std-0.3 weights: peaked distributions, so cache errors show."""
    return tiny_llama(
        tokenizer,
        num_layers=1,
        tie_word_embeddings=True,
        bos_token_id=bos_token_id,
        max_position_embeddings=256,
    )


@pytest.fixture(scope="module")
def qwen_dir(tmp_path_factory):
    """A BOS-less Qwen3-vocabulary model directory; config BOS = <|endoftext|>, as Qwen's."""
    tokenizer = load_panel_tokenizer("qwen3")
    start = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    path = tmp_path_factory.mktemp("qwen3-tiny")
    _tiny_llama(tokenizer, start).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path, start


@pytest.mark.slow
def test_doctor_reports_a_bos_less_model_in_full(qwen_dir):
    path, _ = qwen_dir
    report = model_report(str(path))
    assert report.ok, str(report)
    text = str(report)
    assert "byte-level BPE" in text and "151,669 ids" in text
    assert "BOS                none" in text
    assert "start token        '<|endoftext|>' (151643)" in text
    assert report.cache.ok and report.cache.max_abs_error < 1e-3
    assert "the model's own weights" in report.cache.detail


def test_bos_less_model_starts_from_its_configs_special_start_token(qwen_dir):
    from genlm_lab.backend import AsyncTransformer
    from genlm_lab.backend.models import load_hf_model
    from genlm_lab.bytes.lm_state import StatefulTokenizedLM
    from genlm_lab.smc.distributions import encode_prompt

    path, start = qwen_dir
    model, tokenizer = load_hf_model(str(path), device="cpu")
    assert tokenizer.bos_token_id is None
    llm = AsyncTransformer(model, tokenizer)
    assert llm.bos_token_id == start
    assert encode_prompt(llm, "") == [start]
    state = StatefulTokenizedLM.initial(llm)
    logps = asyncio.run(state.logp_next())
    plain = torch.log_softmax(model(torch.tensor([[start]])).logits[0, -1, : llm.vocab_size], -1)
    assert torch.allclose(torch.as_tensor(logps).cpu(), plain, atol=1e-4)


def test_a_config_start_token_that_is_plain_text_is_never_prepended():
    from genlm_lab.backend import AsyncTransformer

    tokenizer = load_panel_tokenizer("qwen3")
    text_id = tokenizer.encode("the", add_special_tokens=False)[0]
    llm = AsyncTransformer(_tiny_llama(tokenizer, text_id), tokenizer)
    assert llm.bos_token_id is None
    with pytest.raises(ValueError, match="empty context"):
        llm.next_token_logprobs_sync([])


def test_cache_check_agrees_on_a_sentencepiece_model():
    tokenizer = load_panel_tokenizer("llama2")
    found = check_cache_consistency(_tiny_llama(tokenizer, tokenizer.bos_token_id), tokenizer)
    assert found.ok and found.max_abs_error < 1e-3


@pytest.mark.slow
def test_big_weights_use_the_registered_tiny_builder(qwen_dir, monkeypatch):
    import genlm_lab.backend.doctor as doctor

    path, start = qwen_dir
    monkeypatch.setattr(doctor, "SMALL_WEIGHTS_BYTES", 0)
    monkeypatch.setattr(doctor, "_TINY_BUILDER", [])
    assert model_report(str(path)).cache.ok is None  # too big, and no builder: says so
    built = []

    def build(config):
        built.append(config.model_type)
        return _tiny_llama(load_panel_tokenizer("qwen3"), start)

    register_tiny_builder(build)
    report = model_report(str(path))
    assert built == ["llama"] and report.cache.ok
    assert "tiny random" in report.cache.detail


def test_cli_doctor_model_prints_the_report(qwen_dir, capsys):
    from genlm_lab.cli import main

    path, _ = qwen_dir
    assert main(["doctor", "--model", str(path), "--no-cache-check"]) == 0
    out = capsys.readouterr().out
    assert "strategy           byte-level BPE" in out and out.rstrip().endswith("ok")


def test_cli_doctor_model_on_a_missing_directory_is_one_clear_line(tmp_path, capsys):
    from genlm_lab.cli import main

    code = main(["doctor", "--model", str(tmp_path / "nothing-here")])
    err = capsys.readouterr().err
    assert code == 2 and "nothing-here" in err and "Traceback" not in err
