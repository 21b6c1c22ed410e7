"""AsyncVirtualLM on the real vLLM engine: its CPU build in make test's vLLM lane, or CUDA.

Every comparison is against the transformers backend on the same weights, in
float32, over the whole vocabulary: the two engines differ only in kernels, so
1e-4 per log-prob is the bar (measured: 6e-5 on SmolLM2, 6e-6 on tiny-random).
"""

import asyncio
import copy

import pytest
import torch

from genlm_lab.backend.hf import AsyncTransformer

pytestmark = pytest.mark.vllm

TOLERANCE = 1e-4
PROMPTS = [
    "The capital of France is",
    "def fib(n):\n    return",
    " Café ünïcödé 😀 — 東京は",
    "",
]


def _ids(lm, text):
    return [lm.bos_token_id] + lm.tokenizer.encode(text, add_special_tokens=False)


def _assert_same_distribution(got, want, tolerance=TOLERANCE):
    assert got.shape == want.shape
    assert torch.equal(torch.isinf(got), torch.isinf(want))
    finite = torch.isfinite(want)
    gap = (got[finite].double() - want[finite].double()).abs().max().item()
    assert gap <= tolerance, gap


@pytest.fixture(scope="module")
def hf_default(default_hf):
    return AsyncTransformer(*default_hf)


@pytest.fixture(scope="module")
def hf_tiny(tiny_random_hf):
    return AsyncTransformer(*tiny_random_hf)


async def test_default_model_equals_the_gguf_it_was_converted_from(vllm_default):
    from transformers import AutoModelForCausalLM

    from genlm_lab.backend.default_model import _gguf_parsed_once, default_model_path

    gguf = default_model_path()
    with _gguf_parsed_once():
        reference = AutoModelForCausalLM.from_pretrained(
            gguf.parent, gguf_file=gguf.name, dtype=torch.float32
        ).eval()
    for text in PROMPTS:
        ids = _ids(vllm_default, text)
        with torch.no_grad():
            logits = reference(torch.tensor([ids])).logits[0, -1]
        want = torch.log_softmax(logits.double(), 0).float()
        _assert_same_distribution(await vllm_default.next_token_logprobs(ids), want)


async def test_default_model_says_paris_and_equals_transformers(vllm_default, hf_default):
    paris = await vllm_default.next_token_logprobs(_ids(vllm_default, PROMPTS[0]))
    assert vllm_default.str_vocab[int(paris.argmax())] == " Paris"
    assert abs(torch.logsumexp(paris.double(), 0).item()) < 1e-4  # float32 over 49,152 entries
    for text in PROMPTS:
        ids = _ids(vllm_default, text)
        want = hf_default.next_token_logprobs_uncached(ids)
        _assert_same_distribution(await vllm_default.next_token_logprobs(ids), want)


async def test_tiny_random_equals_transformers(vllm_tiny, hf_tiny):
    for text in PROMPTS:
        ids = _ids(vllm_tiny, text)
        want = hf_tiny.next_token_logprobs_uncached(ids)
        _assert_same_distribution(await vllm_tiny.next_token_logprobs(ids), want)


async def test_gathered_queries_are_one_generate_and_equal_one_at_a_time(vllm_default):
    lm = vllm_default
    contexts = [_ids(lm, f"Item {i}: the") for i in range(8)] + [_ids(lm, PROMPTS[2])]
    lm.clear_cache()
    lm.reset_stats()
    together = await asyncio.gather(*(lm.next_token_logprobs(c) for c in contexts))
    assert lm.stats["batches"] == 1 and lm.stats["rows"] == len(contexts)
    lm.clear_cache()
    for context, got in zip(contexts, together, strict=True):
        alone = lm.next_token_logprobs_sync(context)
        _assert_same_distribution(got, alone)
    assert lm.stats["batches"] == 1 + len(contexts)


@pytest.fixture(scope="module")
def tiny_without_prefix_caching():
    # tiny-random, not a second SmolLM2: CPU engines live as long as the process, and the
    # vLLM lane's one process must stay under 4 GB (a second SmolLM2 engine held 0.6 GB).
    from vllm_engines import vllm_test_engine

    small = {} if torch.cuda.is_available() else {"kv_cache_memory_bytes": 16 << 20}
    return vllm_test_engine("tiny-random", enable_prefix_caching=False, **small)


async def test_prefix_caching_on_and_off_give_the_same_numbers(
    vllm_tiny, tiny_without_prefix_caching
):
    # 40+ shared tokens: more than two of vLLM's 16-token KV blocks are reused when on
    shared = _ids(vllm_tiny, "Once upon a time, in a village by the sea, " * 3)
    contexts = [shared + vllm_tiny.tokenizer.encode(f" {word}") for word in ("a", "the", "an")]
    for lm in (vllm_tiny, tiny_without_prefix_caching):
        lm.clear_cache()
    for context in contexts:  # one at a time, so each later one finds the shared prefix cached
        on = await vllm_tiny.next_token_logprobs(context)
        off = await tiny_without_prefix_caching.next_token_logprobs(context)
        _assert_same_distribution(on, off, tolerance=1e-5)


async def test_gathered_samples_are_one_generate_and_seeds_reproduce(vllm_default, monkeypatch):
    engine, calls = vllm_default.llm_engine, []
    generate = engine.generate

    def counting(*args, **kwargs):
        calls.append(len(args[0]))
        return generate(*args, **kwargs)

    monkeypatch.setattr(engine, "generate", counting)
    prompt = _ids(vllm_default, "Once upon a time")
    first = await asyncio.gather(*(vllm_default.sample(prompt, 8, seed=s) for s in range(6)))
    assert calls == [6] and all(1 <= len(t) <= 8 for t in first)
    assert len({tuple(t) for t in first}) > 1  # the seeds differ, so (almost surely) the texts
    again = await asyncio.gather(*(vllm_default.sample(prompt, 8, seed=s) for s in range(6)))
    assert again == first


@pytest.fixture(scope="module")
def tiny_adapter(tiny_random_hf, tmp_path_factory):
    """A rank-4 LoRA on tiny-random's attention, with random (not zero) B so it changes outputs."""
    from peft import LoraConfig, get_peft_model

    model, _ = tiny_random_hf
    config = LoraConfig(
        r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False
    )
    torch.manual_seed(0)
    directory = tmp_path_factory.mktemp("adapter")
    get_peft_model(copy.deepcopy(model), config).save_pretrained(directory)
    return str(directory)


async def test_lora_add_set_clear_follows_transformers(vllm_tiny, tiny_random_hf, tiny_adapter):
    model, tokenizer = tiny_random_hf
    hf = AsyncTransformer(copy.deepcopy(model), tokenizer)  # an adapter wraps the model it is given
    ids = _ids(vllm_tiny, PROMPTS[0])
    base = await vllm_tiny.next_token_logprobs(ids)
    for lm in (vllm_tiny, hf):
        lm.add_new_lora(tiny_adapter, "adapter")
        lm.set_lora(lora_name="adapter")
    adapted = await vllm_tiny.next_token_logprobs(ids)
    assert (adapted - base).abs().max().item() > 0.1  # the adapter changes the distribution
    _assert_same_distribution(adapted, hf.next_token_logprobs_uncached(ids))
    vllm_tiny.clear_lora()
    vllm_tiny.clear_cache()  # recomputed by the engine, not read back from the cache
    _assert_same_distribution(await vllm_tiny.next_token_logprobs(ids), base, tolerance=0)


async def test_a_cancelled_query_leaves_the_engine_serving(vllm_tiny, hf_tiny):
    lm = vllm_tiny
    lm.clear_cache()
    contexts = [_ids(lm, text) for text in ("one", "two", "three")]
    tasks = [asyncio.ensure_future(lm.next_token_logprobs(c)) for c in contexts]
    await asyncio.sleep(0)  # all three are queued
    tasks[1].cancel()
    done = await asyncio.gather(*tasks, return_exceptions=True)
    assert isinstance(done[1], asyncio.CancelledError)
    for context in contexts:  # the cancelled context is served on asking again
        want = hf_tiny.next_token_logprobs_uncached(context)
        _assert_same_distribution(await lm.next_token_logprobs(context), want)
    queued = asyncio.ensure_future(lm.sample(contexts[0], 4, seed=1))
    await asyncio.sleep(0)
    lm.reset_async_queries()
    with pytest.raises(asyncio.CancelledError):
        await queued
    assert len(await lm.sample(contexts[0], 4, seed=1)) >= 1


async def test_a_bad_prompt_is_one_clear_error_and_poisons_no_other(vllm_tiny, hf_tiny):
    lm = vllm_tiny
    lm.clear_cache()
    good = [_ids(lm, "good"), _ids(lm, "also good")]
    too_long = [lm.bos_token_id] * (lm.max_context_length + 1)
    out_of_vocab = [lm.bos_token_id, lm.vocab_size + 5]
    results = await asyncio.gather(
        lm.next_token_logprobs(good[0]),
        lm.next_token_logprobs(too_long),
        lm.next_token_logprobs(out_of_vocab),
        lm.next_token_logprobs(good[1]),
        return_exceptions=True,
    )
    assert isinstance(results[1], ValueError) and "longer than the model allows" in str(results[1])
    assert isinstance(results[2], ValueError) and "vocabulary" in str(results[2])
    for context, got in zip(good, (results[0], results[3]), strict=True):
        _assert_same_distribution(got, hf_tiny.next_token_logprobs_uncached(context))
    longest = [lm.bos_token_id] * lm.max_context_length  # the longest context vLLM takes
    assert torch.isfinite(await lm.next_token_logprobs(longest)).any()


def test_load_model_by_name_starts_the_engine_on_this_machine():
    from genlm_lab.backend import load_model_by_name
    from genlm_lab.backend.registry import default_backend
    from genlm_lab.backend.vllm import AsyncVirtualLM

    if not torch.cuda.is_available():
        assert default_backend() == "hf"  # auto picks vLLM only with CUDA
    opts = {"engine_opts": {"dtype": "float32", "kv_cache_memory_bytes": 64 << 20}}
    lm = load_model_by_name("tiny-random", backend="vllm", llm_opts=opts)
    assert isinstance(lm, AsyncVirtualLM)
    assert torch.isfinite(lm.next_token_logprobs_sync([lm.bos_token_id, 300])).any()


async def test_an_engine_dropped_by_its_user_leaves_the_others_serving(vllm_default, hf_default):
    # vLLM's in-process engines share the process's distributed groups: the first collected
    # tore them down, and every other engine failed ("pipeline model parallel group is not
    # initialized") on its next call
    import gc

    from vllm_engines import vllm_test_engine

    dropped = vllm_test_engine("tiny-random", kv_cache_memory_bytes=16 << 20)
    assert torch.isfinite(dropped.next_token_logprobs_sync([dropped.bos_token_id, 300])).any()
    del dropped
    gc.collect()
    ids = _ids(vllm_default, "A dropped engine, and then")
    vllm_default.clear_cache()
    want = hf_default.next_token_logprobs_uncached(ids)
    _assert_same_distribution(await vllm_default.next_token_logprobs(ids), want)
