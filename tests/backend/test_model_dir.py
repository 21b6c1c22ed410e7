"""Converted model directories: a layout any engine reads, and the one-off repair of format 1."""

import json

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import save_file

from genlm_lab.backend import model_dir
from genlm_lab.backend.tiny import tiny_llama


def _keys(directory):
    with safe_open(str(directory / "model.safetensors"), "pt") as f:
        return set(f.keys())


def _logits(model, ids=(1, 40, 41, 42)):
    with torch.no_grad():
        return model(torch.tensor([list(ids)])).logits[0]


@pytest.fixture
def tied(tiny_random_hf):
    _, tokenizer = tiny_random_hf
    return tiny_llama(tokenizer, tie_word_embeddings=True, seed=3), tokenizer


def _fresh_load(directory):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(directory, dtype=torch.float32).eval()


def test_a_tied_embedding_is_stored_once_under_the_embedding_name(tied, tmp_path):
    model, tokenizer = tied
    target = tmp_path / "tied"
    model_dir._write_converted(model, tokenizer, target, source="test")
    assert "model.embed_tokens.weight" in _keys(target)
    assert "lm_head.weight" not in _keys(target)
    config = json.loads((target / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"] and config["tie_word_embeddings"]
    assert torch.equal(_logits(_fresh_load(target)), _logits(model))


def test_untied_weights_are_all_kept(tiny_random_hf, tmp_path):
    model, tokenizer = tiny_random_hf
    target = tmp_path / "untied"
    model_dir._write_converted(model, tokenizer, target, source="test")
    assert {"model.embed_tokens.weight", "lm_head.weight"} <= _keys(target)
    assert torch.equal(_logits(_fresh_load(target)), _logits(model))


def _write_format_1(model, tokenizer, target):
    """What the code before format 2 wrote: the tied tensor as `lm_head.weight`, no architectures."""
    model_dir._write_converted(model, tokenizer, target, source="old")
    config = json.loads((target / "config.json").read_text())
    del config["architectures"]
    (target / "config.json").write_text(json.dumps(config))
    state = {k: v for k, v in model.state_dict().items() if k != "model.embed_tokens.weight"}
    save_file({k: v.contiguous() for k, v in state.items()}, str(target / "model.safetensors"))
    marker = json.loads((target / model_dir._MARKER).read_text())
    (target / model_dir._MARKER).write_text(json.dumps({**marker, "format": 1}))


def test_a_format_1_copy_is_repaired_once_with_one_line(tied, tmp_path, capsys):
    model, tokenizer = tied
    target = tmp_path / "models" / "old"
    _write_format_1(model, tokenizer, target)
    assert not model_dir._is_converted(target)
    assert _keys(target) >= {"lm_head.weight"} and "model.embed_tokens.weight" not in _keys(target)
    assert model_dir._repair_format_1(target)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "repaired" in err and str(target) in err
    assert model_dir._is_converted(target)
    assert "model.embed_tokens.weight" in _keys(target) and "lm_head.weight" not in _keys(target)
    config = json.loads((target / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"]
    marker = json.loads((target / model_dir._MARKER).read_text())
    assert marker["source"] == "old"
    assert [p.name for p in target.parent.iterdir()] == ["old"]  # no temp dirs left
    assert not model_dir._repair_format_1(target)  # the repaired copy is current: no second line
    assert capsys.readouterr().err == ""
    assert torch.equal(_logits(_fresh_load(target)), _logits(model))


@pytest.mark.parametrize("marker", ["{garbage", json.dumps({"format": 99}), json.dumps([1])])
def test_a_copy_that_is_not_format_1_is_left_for_a_rebuild(tied, tmp_path, marker):
    model, tokenizer = tied
    target = tmp_path / "other"
    _write_format_1(model, tokenizer, target)
    (target / model_dir._MARKER).write_text(marker)
    before = (target / "model.safetensors").read_bytes()
    assert not model_dir._repair_format_1(target)
    assert (target / "model.safetensors").read_bytes() == before
