"""`load_model_by_name`: backend choice, wiring, and clear errors."""

import importlib.util
import sys
import types

import pytest
import torch

from genlm_lab.backend import MockAsyncLM, ModelNotFoundError, load_model_by_name, registry
from genlm_lab.tokenization import decode_vocab


@pytest.mark.parametrize("backend", ["mlx", "sgl", "MLX"])
def test_seed_backends_we_do_not_implement_are_refused_clearly(backend):
    with pytest.raises(ValueError, match="not supported by genlm_lab"):
        load_model_by_name("tiny-random", backend=backend)


@pytest.mark.parametrize("backend", ["tpu", "", 3])
def test_unknown_backend_is_named_in_the_error(backend):
    with pytest.raises(ValueError, match="backend"):
        load_model_by_name("tiny-random", backend=backend)


def test_llm_opts_must_be_a_dict():
    with pytest.raises(ValueError, match="llm_opts"):
        load_model_by_name("tiny-random", backend="mock", llm_opts=[("seed", 1)])


@pytest.mark.parametrize("backend", ["mock", "hf"])
def test_unknown_llm_opts_are_one_value_error_before_loading(backend, monkeypatch):
    from genlm_lab.backend import models

    def no_loading(*args, **kwargs):
        raise AssertionError("loaded a model for options that were going to be rejected")

    monkeypatch.setattr(models, "load_hf_model", no_loading)
    monkeypatch.setattr(models, "load_tokenizer", no_loading)
    with pytest.raises(ValueError, match=r"\['batch_sise'\] are not options"):
        load_model_by_name("tiny-random", backend=backend, llm_opts={"batch_sise": 4})


def test_mock_backend_uses_the_models_tokenizer(smollm2_tokenizer):
    lm = load_model_by_name("tiny-random", backend="mock", llm_opts={"seed": 3})
    assert isinstance(lm, MockAsyncLM)
    byte_vocab, _ = decode_vocab(smollm2_tokenizer)
    assert lm.vocab_size == len(smollm2_tokenizer)
    assert [bytes(t) for t in lm.byte_vocab] == [bytes(t) for t in byte_vocab]
    other = load_model_by_name("default", backend="mock", llm_opts={"seed": 4})
    ids = smollm2_tokenizer.encode("hello", add_special_tokens=False)
    assert not torch.equal(lm.next_token_logprobs_sync(ids), other.next_token_logprobs_sync(ids))


def test_missing_model_is_one_clear_error_for_every_backend():
    for backend in ("mock", "hf"):
        with pytest.raises(ModelNotFoundError, match="offline"):
            load_model_by_name("genlm-lab-test/no-such-model", backend=backend)


def test_hf_backend_wraps_the_named_model():
    hf = pytest.importorskip("genlm_lab.backend.hf")
    from genlm_lab.backend.models import load_hf_model

    lm = load_model_by_name("tiny-random", backend="hf", llm_opts={"batch_size": 4})
    assert isinstance(lm, hf.AsyncTransformer)
    model, tokenizer = load_hf_model("tiny-random", device="cpu")
    ids = [tokenizer.bos_token_id] + tokenizer.encode("The capital", add_special_tokens=False)
    with torch.no_grad():
        expected = torch.log_softmax(model(torch.tensor([ids])).logits[0, -1], dim=0)
    assert torch.allclose(lm.next_token_logprobs_sync(ids).cpu(), expected, atol=1e-5)


def test_vllm_backend_is_built_from_the_name(monkeypatch):
    calls = []

    class FakeVirtualLM:
        @classmethod
        def from_name(cls, name, **opts):
            calls.append((name, opts))
            return "fake-vllm"

    monkeypatch.setitem(
        sys.modules, "genlm_lab.backend.vllm", types.SimpleNamespace(AsyncVirtualLM=FakeVirtualLM)
    )
    opts = {"engine_opts": {"tensor_parallel_size": 2}}
    assert load_model_by_name("default", backend="vllm", llm_opts=opts) == "fake-vllm"
    assert calls == [("default", opts)]


@pytest.mark.parametrize(
    ("cuda", "vllm", "expected"),
    [(False, False, "hf"), (False, True, "hf"), (True, False, "hf"), (True, True, "vllm")],
)
def test_default_backend_is_vllm_only_with_cuda_and_vllm(monkeypatch, cuda, vllm, expected):
    real = importlib.util.find_spec
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a, **k: (
            (object() if vllm else None) if name == "vllm" else real(name, *a, **k)
        ),
    )
    assert registry.default_backend() == expected


def test_hf_backend_passes_progress_on_to_the_model_loader(monkeypatch, tiny_random_hf):
    from genlm_lab.backend import models

    seen = {}

    def fake_load(name, device=None, dtype=None, progress=None):
        seen.update(name=name, progress=progress)
        return tiny_random_hf

    monkeypatch.setattr(models, "load_hf_model", fake_load)
    load_model_by_name("tiny-random", backend="hf", llm_opts={"progress": False})
    assert seen == {"name": "tiny-random", "progress": False}


def test_hf_opts_of_genlm_backend_set_dtype_and_refuse_unknown_keys():
    import torch

    from genlm_lab.backend import load_model_by_name
    from genlm_lab.backend.models import hf_load_options

    lm = load_model_by_name(
        "tiny-random", backend="hf", llm_opts={"hf_opts": {"torch_dtype": torch.float64}}
    )
    assert next(lm.model.parameters()).dtype == torch.float64
    assert hf_load_options({"device_map": "cpu", "dtype": "float32"}) == {
        "device": "cpu",
        "dtype": "float32",
    }
    with pytest.raises(ValueError, match=r"hf_opts \['trust_remote_code'\] are not supported"):
        load_model_by_name(
            "tiny-random", backend="hf", llm_opts={"hf_opts": {"trust_remote_code": True}}
        )


def test_mock_from_name_uses_the_named_tokenizer():
    from genlm_lab.backend import MockAsyncLM
    from genlm_lab.backend.models import load_tokenizer

    lm = MockAsyncLM.from_name("tiny-random", seed=3)
    assert len(lm.byte_vocab) == len(load_tokenizer("tiny-random")) and lm.seed == 3
