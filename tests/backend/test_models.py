"""Offline model loading: names, tiny-random, local dirs, hub ids, clear errors.

The default model's conversion and cached copy: test_default_model.py.
"""

import os

import pytest
import torch

from genlm_lab.backend import default_model, model_dir, models
from genlm_lab.backend.models import (
    ModelNotFoundError,
    load_hf_model,
    load_tokenizer,
)

PROMPTS = ["The capital of France is", "def fib(n):\n    return", " 😀 unicode ünïcödé"]


def _last_logits(model, tokenizer, text):
    ids = [tokenizer.bos_token_id] + tokenizer.encode(text, add_special_tokens=False)
    with torch.no_grad():
        return model(torch.tensor([ids])).logits[0, -1]


def test_tiny_random_is_deterministic_and_leaves_global_rng_alone():
    state = torch.random.get_rng_state()
    first, tokenizer = load_hf_model("tiny-random", device="cpu")
    second, _ = load_hf_model("tiny-random", device="cpu")
    assert torch.equal(state, torch.random.get_rng_state())
    a, b = first.state_dict(), second.state_dict()
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert torch.equal(
        _last_logits(first, tokenizer, PROMPTS[0]), _last_logits(second, tokenizer, PROMPTS[0])
    )


def test_tiny_random_is_a_small_llama_over_the_smollm2_tokenizer(tiny_random_hf, smollm2_tokenizer):
    model, tokenizer = tiny_random_hf
    assert model.config.model_type == "llama"
    assert model.config.vocab_size == len(tokenizer) == len(smollm2_tokenizer)
    assert sum(p.numel() for p in model.parameters()) < 10_000_000
    assert model.dtype == torch.float32 and not model.training
    logits = _last_logits(model, tokenizer, PROMPTS[0])
    assert logits.shape == (len(tokenizer),) and torch.isfinite(logits).all()
    # Not a flat distribution: tests on it can tell tokens apart.
    assert torch.log_softmax(logits, 0).std() > 0.5


def test_local_directory_reloads_to_identical_logits(tiny_random_hf, tmp_path):
    model, tokenizer = tiny_random_hf
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    again, again_tokenizer = load_hf_model(str(tmp_path), device="cpu")
    assert len(again_tokenizer) == len(tokenizer)
    for text in PROMPTS:
        assert torch.equal(
            _last_logits(model, tokenizer, text), _last_logits(again, tokenizer, text)
        )


def test_dtype_argument_is_honoured(tiny_random_hf):
    model, _ = load_hf_model("tiny-random", device="cpu", dtype=torch.bfloat16)
    assert model.dtype == torch.bfloat16


@pytest.mark.parametrize("name", ["tiny-random", "local"])
def test_dtype_may_be_given_by_name_for_every_model(name, tiny_random_hf, tmp_path):
    # a name worked for directories (from_pretrained takes it) but was a TypeError
    # from torch's .to() for tiny-random
    if name == "local":
        tiny_random_hf[0].save_pretrained(tmp_path)
        tiny_random_hf[1].save_pretrained(tmp_path)
        name = str(tmp_path)
    for dtype in ("bfloat16", "torch.float16"):
        model, _ = load_hf_model(name, device="cpu", dtype=dtype)
        assert model.dtype == getattr(torch, dtype.removeprefix("torch."))
    for bad in ("bfloat17", "Tensor", 16):
        with pytest.raises(ValueError, match="dtype must be a torch dtype"):
            load_hf_model(name, device="cpu", dtype=bad)


@pytest.mark.parametrize(
    "name", ["", "   ", "not a valid/hub id!!", "./no/such/dir", "/no/such/dir"]
)
def test_bad_names_give_one_clear_error(name):
    with pytest.raises(ModelNotFoundError) as info:
        load_hf_model(name)
    assert isinstance(info.value, ValueError)
    assert "model" in str(info.value)


def test_directory_without_a_model_is_rejected(tmp_path):
    with pytest.raises(ModelNotFoundError, match="config.json"):
        load_tokenizer(str(tmp_path))


def test_hub_id_not_in_local_cache_fails_offline_without_network(monkeypatch):
    # a socket probe of the hub (a 2 s stall where unreachable) ran before the offline check
    import socket

    def no_network(*args, **kwargs):
        raise AssertionError("an offline lookup opened a network connection")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    for load in (load_hf_model, load_tokenizer):
        with pytest.raises(ModelNotFoundError) as info:
            load("genlm-lab-test/no-such-model")
        message = str(info.value)
        assert "'genlm-lab-test/no-such-model'" in message and "HF_HUB_OFFLINE" in message


def test_hub_id_that_fails_to_download_is_one_clear_error(monkeypatch):
    import huggingface_hub

    real = huggingface_hub.snapshot_download

    def fake(name, local_files_only=False, **kwargs):
        if local_files_only:
            return real(name, local_files_only=True, **kwargs)
        raise ConnectionError("hub unreachable")

    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake)
    with pytest.raises(ModelNotFoundError, match="could not be downloaded.*hub unreachable"):
        load_tokenizer("genlm-lab-test/no-such-model")


def _file_times(directory):
    return {p.name: p.stat().st_mtime_ns for p in directory.iterdir()}


def test_tiny_random_directory_is_cached_for_backends_that_need_a_path(monkeypatch, tmp_path):
    smollm2_dir = default_model._converted_dir()  # keep the (already converted) tokenizer source
    monkeypatch.setattr(default_model, "_converted_dir", lambda: smollm2_dir)
    monkeypatch.setenv("GENLM_LAB_CACHE_DIR", str(tmp_path))
    directory = models.local_model_dir("tiny-random")
    assert directory.is_relative_to(tmp_path) and model_dir._is_converted(directory)
    before = _file_times(directory)
    assert models.local_model_dir("tiny-random") == directory
    assert _file_times(directory) == before


@pytest.mark.parametrize(
    ("name", "canonical"),
    [
        ("default", "smollm2-135m"),
        (" Default ", "smollm2-135m"),
        ("SmolLM2-135M", "smollm2-135m"),
        ("TINY-RANDOM", "tiny-random"),
        ("org/Some-Model", "org/Some-Model"),
    ],
)
def test_names_resolve_case_insensitively_but_hub_ids_are_kept(name, canonical):
    assert models.resolve_model_name(name) == canonical


@pytest.mark.parametrize("device", ["gpu", "cuda:x", "cpu:-3", 3.5])
def test_a_device_torch_cannot_parse_is_one_value_error(device):
    from genlm_lab.backend.models import load_hf_model

    with pytest.raises(ValueError, match=r"device .* is not a torch device"):
        load_hf_model("tiny-random", device=device)


def test_cuda_without_cuda_is_one_value_error_naming_the_device():
    import torch

    from genlm_lab.backend.models import load_hf_model

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(ValueError, match=r"device 'cuda:0'.*no CUDA device"):
        load_hf_model("tiny-random", device="cuda:0")
