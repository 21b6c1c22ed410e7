"""LoRA on AsyncTransformer: adapters equal their merged models, caches never leak across them."""

import asyncio
import copy
import logging

import pytest
import torch

from genlm_lab.backend.hf import AsyncTransformer


def fresh_tiny():
    from genlm_lab.backend.models import load_hf_model

    return load_hf_model("tiny-random", device="cpu")  # built anew: adapters mutate it


@pytest.fixture(scope="module")
def adapters(tmp_path_factory):
    """Two LoRA adapters with random (non-zero) weights, saved with peft offline."""
    from peft import LoraConfig, get_peft_model

    model, _ = fresh_tiny()
    root = tmp_path_factory.mktemp("lora")
    paths = {}
    for name, seed in (("a", 1), ("b", 2)):
        torch.manual_seed(seed)
        config = LoraConfig(
            r=4, target_modules=["q_proj", "v_proj", "o_proj"], init_lora_weights=False
        )
        get_peft_model(copy.deepcopy(model), config).save_pretrained(root / name)
        paths[name] = str(root / name)
    return paths


@pytest.fixture(scope="module")
def merged(adapters):
    """Reference log-prob functions: the base model and each adapter merged into a copy."""
    from peft import PeftModel

    logging.getLogger("transformers").setLevel(logging.ERROR)
    refs = {None: fresh_tiny()[0]}
    for name, path in adapters.items():
        refs[name] = PeftModel.from_pretrained(fresh_tiny()[0], path).merge_and_unload()

    def logprobs(name, ids):
        with torch.inference_mode():
            logits = refs[name](torch.tensor([ids])).logits[0, -1]
        return torch.log_softmax(logits.float(), dim=0)

    return logprobs


@pytest.fixture
def lm(adapters):
    model, tokenizer = fresh_tiny()
    lm = AsyncTransformer(model, tokenizer, timeout=60.0)
    for name, path in adapters.items():
        lm.add_new_lora(path, name)
    return lm


CONTEXTS = [[1, 5, 7, 9], [1, 5, 7, 9, 11], [1, 300, 2, 4000, 17, 6]]


def close(a, b):
    torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-4)


async def test_adapter_outputs_equal_the_merged_model_and_switching_back_and_forth(lm, merged):
    assert lm.active_lora is None
    for name in (None, "a", "b", "a", None, "b"):
        if name is None:
            lm.clear_lora()
        else:
            lm.set_lora(lora_name=name)
        results = await asyncio.gather(*(lm.next_token_logprobs(c) for c in CONTEXTS))
        for ctx, got in zip(CONTEXTS, results, strict=True):
            close(got, merged(name, ctx))
            close(lm.next_token_logprobs_uncached(ctx), merged(name, ctx))
    # Adapters really change the output (or the test above proves nothing).
    assert (merged("a", CONTEXTS[0]) - merged(None, CONTEXTS[0])).abs().max() > 1e-2


async def test_loading_an_adapter_does_not_activate_it(lm, merged):
    close(await lm.next_token_logprobs(CONTEXTS[0]), merged(None, CONTEXTS[0]))


async def test_kv_cached_under_one_adapter_is_never_reused_under_another(lm, merged):
    prompt = CONTEXTS[2]
    lm.cache_kv(prompt)  # base-model keys and values
    lm.set_lora(lora_name="a")
    ext = prompt + [42]
    close(await lm.next_token_logprobs(ext), merged("a", ext))
    assert lm.stats["kv_tokens_reused"] == 0
    lm.clear_lora()
    close(await lm.next_token_logprobs(ext), merged(None, ext))
    assert lm.stats["kv_tokens_reused"] == len(prompt)


async def test_queries_queued_before_a_switch_use_the_old_adapter(lm, merged):
    task = asyncio.ensure_future(lm.next_token_logprobs(CONTEXTS[1]))
    await asyncio.sleep(0)
    lm.set_lora(lora_name="b")
    close(await task, merged(None, CONTEXTS[1]))
    close(await lm.next_token_logprobs(CONTEXTS[1]), merged("b", CONTEXTS[1]))


def test_unknown_adapter_name_raises_value_error(lm):
    with pytest.raises(ValueError, match="no LoRA adapter named 'zzz'"):
        lm.set_lora(lora_name="zzz")


def test_set_lora_with_a_path_loads_it(adapters, merged):
    model, tokenizer = fresh_tiny()
    lm = AsyncTransformer(model, tokenizer)
    lm.set_lora(adapters["b"], lora_name="b")
    close(lm.next_token_logprobs_sync(CONTEXTS[0]), merged("b", CONTEXTS[0]))


async def test_a_failed_adapter_load_leaves_the_backend_as_it_was(lm, merged, adapters, tmp_path):
    lm.set_lora(lora_name="a")
    for name in ("a", "c"):  # replacing the active adapter, and adding a new one
        with pytest.raises(ValueError, match=f"LoRA adapter '{name}'.*missing"):
            lm.add_new_lora(tmp_path / "missing", name)
    assert lm.active_lora == "a"
    with pytest.raises(ValueError, match="no LoRA adapter named 'c'"):
        lm.set_lora(lora_name="c")
    close(await lm.next_token_logprobs(CONTEXTS[0]), merged("a", CONTEXTS[0]))
    lm.clear_lora()
    close(await lm.next_token_logprobs(CONTEXTS[1]), merged(None, CONTEXTS[1]))
    # A load that works replaces the adapter of that name, cached results included.
    lm.add_new_lora(adapters["b"], "a")
    lm.set_lora(lora_name="a")
    close(await lm.next_token_logprobs(CONTEXTS[0]), merged("b", CONTEXTS[0]))


@pytest.mark.parametrize("call", ["next_token_logprobs_sync", "next_token_logprobs_uncached"])
def test_switching_adapter_waits_for_a_forward_running_in_another_thread(lm, merged, call):
    # A switch in the middle of another thread's forward ran it under the new
    # adapter and cached the result under the old one (or, uncached, returned
    # the new adapter's log-probs to a caller who asked under the old one).
    import threading

    real_forward = lm.model.forward
    started, release = threading.Event(), threading.Event()

    def held_forward(*args, **kwargs):
        started.set()
        release.wait(10)
        return real_forward(*args, **kwargs)

    lm.model.forward = held_forward
    results = {}
    worker = threading.Thread(
        target=lambda: results.setdefault("base", getattr(lm, call)(CONTEXTS[0]))
    )
    worker.start()
    assert started.wait(10)
    switch = threading.Thread(target=lambda: lm.set_lora(lora_name="a"))
    switch.start()
    switch.join(0.2)  # the switch would be done by now if it did not wait
    release.set()
    worker.join(10)
    switch.join(10)
    del lm.model.forward
    close(results["base"], merged(None, CONTEXTS[0]))
    assert lm.active_lora == "a"
    close(lm.next_token_logprobs_sync(CONTEXTS[0]), merged("a", CONTEXTS[0]))
    lm.clear_lora()
    close(lm.next_token_logprobs_sync(CONTEXTS[0]), merged(None, CONTEXTS[0]))


@pytest.mark.parametrize("name", [None, "", 3, "__genlm_lab_staging__"])
async def test_a_name_no_adapter_can_have_is_one_value_error(name, lm, adapters, merged):
    # None loaded an adapter under the base model's cache key (and wiped that
    # cache); the internal staging name could be loaded but never replaced
    await lm.next_token_logprobs(CONTEXTS[0])
    with pytest.raises(ValueError, match="lora_name must be a non-empty str"):
        lm.add_new_lora(adapters["a"], name)
    assert sorted(lm._loras) == ["a", "b"] and lm.active_lora is None
    assert lm.cache.get_logprobs(None, tuple(CONTEXTS[0])) is not None
    close(await lm.next_token_logprobs(CONTEXTS[1]), merged(None, CONTEXTS[1]))
