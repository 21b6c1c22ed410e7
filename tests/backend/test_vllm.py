"""AsyncVirtualLM: plumbing against a stand-in engine (the real engine: test_vllm_engine.py)."""

import asyncio
import importlib.util
import sys
import types
from dataclasses import dataclass

import pytest
import torch

from genlm_lab.backend.toy import seeded_logits
from genlm_lab.backend.vllm import AsyncVirtualLM, lora_int_id

HAS_VLLM = importlib.util.find_spec("vllm") is not None
VOCAB = [bytes([b]) for b in range(32, 32 + 40)]


# -- a stand-in for the small part of vLLM that AsyncVirtualLM uses -------------------


@dataclass
class Logprob:
    logprob: float


class SamplingParams:
    def __init__(self, **kwargs):
        if kwargs.get("max_tokens", 1) < 1:  # as vLLM's own check
            raise ValueError(f"max_tokens must be at least 1, got {kwargs['max_tokens']}.")
        self.__dict__.update(kwargs)


class LoRARequest:
    def __init__(self, name, int_id, path):
        self.lora_name, self.lora_int_id, self.lora_path = name, int_id, path


def reference(ids, lora=None):
    """The stand-in model: seeded logits, shifted by the adapter's id."""
    seed = 0 if lora is None else lora.lora_int_id
    return torch.log_softmax(torch.as_tensor(seeded_logits(seed, ids, len(VOCAB))), 0).float()


def draw(ids, params, lora=None):
    """The stand-in sampler: seeded draws from `reference`, stopping after a stop token."""
    gen = torch.Generator().manual_seed(params.seed if params.seed is not None else 0)
    ids, out = list(ids), []
    for _ in range(params.max_tokens):
        probs = torch.softmax(reference(ids, lora).double() / params.temperature, 0)
        tok = int(torch.multinomial(probs, 1, generator=gen))
        out.append(tok)
        ids.append(tok)
        if tok in params.stop_token_ids:
            break
    return out


class FakeEngine:
    def __init__(self):
        self.calls = []
        self.fail = False

    def get_tokenizer(self):
        return types.SimpleNamespace(bos_token_id=0, eos_token_id=1)

    def generate(self, prompts, sampling_params, lora_request=None, use_tqdm=True):
        self.calls.append((len(prompts), sampling_params, lora_request))
        if self.fail:
            raise RuntimeError("engine died")
        if isinstance(sampling_params, list):  # sampling: one SamplingParams per prompt
            assert len(sampling_params) == len(prompts)
            return [
                types.SimpleNamespace(
                    outputs=[
                        types.SimpleNamespace(
                            token_ids=draw(p["prompt_token_ids"], sp, lora_request)
                        )
                    ]
                )
                for p, sp in zip(prompts, sampling_params, strict=True)
            ]
        assert sampling_params.logprobs == -1 and sampling_params.max_tokens == 1
        outs = []
        for p in prompts:
            lp = reference(p["prompt_token_ids"], lora_request)
            logprobs = [{i: Logprob(float(v) + 3.0) for i, v in enumerate(lp)}]  # unnormalised
            outs.append(types.SimpleNamespace(outputs=[types.SimpleNamespace(logprobs=logprobs)]))
        return outs


@pytest.fixture
def fake_vllm(monkeypatch):
    vllm = types.ModuleType("vllm")
    vllm.SamplingParams = SamplingParams
    lora = types.ModuleType("vllm.lora")
    request = types.ModuleType("vllm.lora.request")
    request.LoRARequest = LoRARequest
    for name, mod in (("vllm", vllm), ("vllm.lora", lora), ("vllm.lora.request", request)):
        monkeypatch.setitem(sys.modules, name, mod)
    return vllm


@pytest.fixture
def lm(fake_vllm):
    engine = FakeEngine()
    return AsyncVirtualLM(engine, timeout=60.0, byte_vocab=VOCAB)


async def test_gathered_queries_are_one_generate_call_with_dense_normalised_logprobs(lm):
    contexts = [[0, 3], [0, 3, 4], [0, 3], [0, 9, 9, 9]]
    results = await asyncio.gather(*(lm.next_token_logprobs(c) for c in contexts))
    assert len(lm.llm_engine.calls) == 1 and lm.llm_engine.calls[0][0] == 3
    for c, got in zip(contexts, results, strict=True):
        torch.testing.assert_close(got, reference(c))
    assert lm.stats["batches"] == 1 and lm.stats["deduplicated"] == 1


async def test_log_probs_are_cached_per_adapter(lm):
    await lm.next_token_logprobs([0, 5])
    await lm.next_token_logprobs([0, 5])
    assert len(lm.llm_engine.calls) == 1 and lm.stats["cache_hits"] == 1
    lm.add_new_lora("/adapters/x", "x")
    lm.set_lora(lora_name="x")
    got = await lm.next_token_logprobs([0, 5])
    assert lm.llm_engine.calls[-1][2].lora_int_id == lora_int_id("x")
    torch.testing.assert_close(got, reference([0, 5], LoRARequest("x", lora_int_id("x"), "")))
    lm.clear_lora()
    torch.testing.assert_close(await lm.next_token_logprobs([0, 5]), reference([0, 5]))
    assert len(lm.llm_engine.calls) == 2


async def test_engine_error_reaches_every_caller_and_backend_recovers(lm):
    lm.llm_engine.fail = True
    results = await asyncio.gather(
        *(lm.next_token_logprobs([0, i]) for i in range(3)), return_exceptions=True
    )
    assert all(isinstance(r, RuntimeError) for r in results)
    lm.llm_engine.fail = False
    torch.testing.assert_close(await lm.next_token_logprobs([0, 2]), reference([0, 2]))


async def test_bad_input_is_rejected_before_the_engine(lm):
    for bad in ([], [0, len(VOCAB)], [0, "x"]):
        with pytest.raises(ValueError):
            await lm.next_token_logprobs(bad)
    assert lm.llm_engine.calls == []


def test_sync_batch_equals_reference(lm):
    contexts = [[0, 1], [0, 2, 3]]
    out = lm.batch_next_token_logprobs_sync(contexts)
    for c, row in zip(contexts, out, strict=True):
        torch.testing.assert_close(row, reference(c))


def test_sync_batch_respects_batch_size_and_counts_cache_hits(lm):
    with pytest.raises(ValueError, match="batch_size"):
        lm.batch_size = 0
    lm.batch_size = 2
    contexts = [[0, i] for i in range(5)]
    out = lm.batch_next_token_logprobs_sync(contexts + [[0, 1]])
    assert [n for n, _, _ in lm.llm_engine.calls] == [2, 2, 1]
    for c, row in zip(contexts + [[0, 1]], out, strict=True):
        torch.testing.assert_close(row, reference(c))
    torch.testing.assert_close(lm.next_token_logprobs_sync([0, 3]), reference([0, 3]))
    assert lm.stats["cache_hits"] == 1 and len(lm.llm_engine.calls) == 3


def test_sample_rejects_bad_arguments_before_the_engine(lm):
    for kwargs in ({"max_tokens": -1}, {"max_tokens": 3, "temperature": 0.0}):
        with pytest.raises(ValueError):
            asyncio.run(lm.sample([0, 1], **kwargs))
    assert lm.llm_engine.calls == []


async def test_gathered_samples_are_one_generate_call_each_with_its_own_parameters(lm):
    requests = [([0, 3], 5, 1.0, 1), ([0, 3], 5, 1.0, 2), ([0, 4, 4], 3, 0.5, 1), ([0], 8, 2.0, 7)]
    results = await asyncio.gather(
        *(lm.sample(ids, n, temperature=t, seed=seed) for ids, n, t, seed in requests)
    )
    assert len(lm.llm_engine.calls) == 1 and lm.llm_engine.calls[0][0] == len(requests)
    for (ids, n, t, seed), got in zip(requests, results, strict=True):
        params = SamplingParams(max_tokens=n, temperature=t, seed=seed, stop_token_ids=[1])
        assert got == draw(ids, params)  # identical requests with other seeds stay apart
        assert 1 <= len(got) <= n


async def test_samples_queued_before_an_adapter_switch_keep_their_adapter(lm):
    lm.add_new_lora("/adapters/x", "x")
    base = asyncio.ensure_future(lm.sample([0, 2], 4, seed=3))
    await asyncio.sleep(0)  # queued under the base model
    lm.set_lora(lora_name="x")
    adapted = asyncio.ensure_future(lm.sample([0, 2], 4, seed=3))
    got_base, got_adapted = await asyncio.gather(base, adapted)
    x = LoRARequest("x", lora_int_id("x"), "")
    assert sorted(str(call[2] and call[2].lora_name) for call in lm.llm_engine.calls) == [
        "None",
        "x",
    ]
    params = SamplingParams(max_tokens=4, temperature=1.0, seed=3, stop_token_ids=[1])
    assert got_base == draw([0, 2], params)
    assert got_adapted == draw([0, 2], params, x)


async def test_batch_size_and_timeout_apply_to_samples_too(lm):
    lm.batch_size, lm.timeout = 2, 30.0
    assert (lm.batch_size, lm.timeout) == (2, 30.0)
    await asyncio.gather(*(lm.sample([0, 2], 2, seed=s) for s in range(5)))
    assert [n for n, _, _ in lm.llm_engine.calls] == [2, 2, 1]
    with pytest.raises(ValueError, match="batch_size"):
        lm.batch_size = 0
    assert lm.batch_size == 2


async def test_reset_async_queries_cancels_queued_samples(lm):
    waiting = asyncio.ensure_future(lm.sample([0, 2], 4, seed=1))
    await asyncio.sleep(0)
    lm.reset_async_queries()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert lm.llm_engine.calls == []
    assert await lm.sample([0, 2], 2, seed=1) == draw(
        [0, 2], SamplingParams(max_tokens=2, temperature=1.0, seed=1, stop_token_ids=[1])
    )


class AdapterKeepingEngine(FakeEngine):
    """Like vLLM: an adapter is loaded once per int id, and that id keeps its first path."""

    def __init__(self):
        super().__init__()
        self.loaded = {}

    def generate(self, prompts, sampling_params, lora_request=None, use_tqdm=True):
        if lora_request is not None:
            path = self.loaded.setdefault(lora_request.lora_int_id, lora_request.lora_path)
            lora_request = served(path)
        return super().generate(prompts, sampling_params, lora_request, use_tqdm)


def served(path):
    """The stand-in adapter of a path: its reference seed comes from the path."""
    return LoRARequest(path, lora_int_id(path), path)


async def test_replacing_an_adapter_serves_the_new_one_even_when_active(fake_vllm):
    # The replacement kept the name's id, under which vLLM keeps serving the
    # adapter it loaded first; the active request also kept the old path.
    lm = AsyncVirtualLM(AdapterKeepingEngine(), timeout=60.0, byte_vocab=VOCAB)
    lm.set_lora("/adapters/v1", "x")
    ctx = [0, 5]
    torch.testing.assert_close(
        await lm.next_token_logprobs(ctx), reference(ctx, served("/adapters/v1"))
    )
    for version in ("v2", "v1", "v3"):  # back to an earlier path too: a fresh id again
        lm.add_new_lora(f"/adapters/{version}", "x")
        assert lm.active_lora == "x"
        want = reference(ctx, served(f"/adapters/{version}"))
        torch.testing.assert_close(await lm.next_token_logprobs(ctx), want)
        params = SamplingParams(max_tokens=3, temperature=1.0, seed=2, stop_token_ids=[1])
        assert await lm.sample(ctx, 3, seed=2) == draw(ctx, params, served(f"/adapters/{version}"))
    lm.add_new_lora("/adapters/y", "y")
    lm.set_lora(lora_name="y")
    torch.testing.assert_close(
        await lm.next_token_logprobs(ctx), reference(ctx, served("/adapters/y"))
    )


def test_bad_adapter_names_are_one_value_error(lm):
    for name in (None, "", 7):
        with pytest.raises(ValueError, match="lora_name must be a non-empty str"):
            lm.add_new_lora("/adapters/x", name)
    assert lm._loras == {}


async def test_sample_of_zero_tokens_is_empty_without_the_engine(lm):
    # vLLM's SamplingParams refuses max_tokens=0, which the AsyncLM contract allows
    assert await lm.sample([0, 2], 0) == []
    assert lm.llm_engine.calls == []
    with pytest.raises(ValueError, match="eos_token_ids"):
        await lm.sample([0, 2], 3, eos_token_ids=1)


def test_unknown_adapter_raises_value_error(lm):
    with pytest.raises(ValueError, match="no LoRA adapter named"):
        lm.set_lora(lora_name="nope")


@pytest.mark.skipif(HAS_VLLM, reason="vLLM is installed")
def test_missing_vllm_gives_one_clear_import_error():
    with pytest.raises(ImportError, match=r"pip install genlm-lab\[vllm\]"):
        AsyncVirtualLM.from_name("tiny-random")


# The real engine (the CPU build in make test's vLLM lane, or CUDA): test_vllm_engine.py.


@pytest.mark.skipif(HAS_VLLM, reason="vLLM is installed")
def test_switching_adapter_without_vllm_is_the_clear_import_error():
    lm = AsyncVirtualLM(FakeEngine(), byte_vocab=VOCAB)
    with pytest.raises(ImportError, match=r"pip install genlm-lab\[vllm\]"):
        lm.set_lora("/adapters/x", "x")
    assert lm.active_lora is None


class OneCallAtATimeEngine(FakeEngine):
    """Fails where two threads are inside `generate` at once (vLLM's LLM is not re-entrant)."""

    def __init__(self):
        super().__init__()
        self.inside = 0

    def generate(self, *args, **kwargs):
        import time

        self.inside += 1
        try:
            assert self.inside == 1, "two generate calls at once"
            time.sleep(0.005)
            return super().generate(*args, **kwargs)
        finally:
            self.inside -= 1


def test_threads_never_call_the_engine_at_once_nor_switch_adapter_during_a_call(fake_vllm):
    import threading

    lm = AsyncVirtualLM(OneCallAtATimeEngine(), byte_vocab=VOCAB)
    lm.add_new_lora("/adapters/x", "x")
    x = LoRARequest("x", lora_int_id("x"), "/adapters/x")
    errors, checked = [], []

    def query(seed):
        try:
            for i in range(10):
                ctx = [0, seed, i]
                got = lm.next_token_logprobs_sync(ctx)
                # whichever adapter served it, the result is that adapter's
                want = [reference(ctx), reference(ctx, x)]
                assert any(torch.allclose(got, w) for w in want)
                checked.append(ctx)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    def switch():
        for i in range(20):
            lm.set_lora(lora_name="x") if i % 2 == 0 else lm.clear_lora()

    threads = [threading.Thread(target=query, args=(s,)) for s in range(3)]
    threads.append(threading.Thread(target=switch))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(checked) == 30
    for ctx in checked:  # nothing cached under one adapter came from the other
        for adapter, want in ((None, reference(ctx)), ("x", reference(ctx, x))):
            hit = lm.cache.get_logprobs(adapter, tuple(ctx))
            assert hit is None or torch.allclose(hit, want)


def test_llvmlite_library_answers_no_dunder_after_the_guard():
    # vLLM's CPU start-up reads vars() of every module global with a __dict__; llvmlite's
    # library object answered __dict__ with a function wrapper, and the engine failed to start
    import llvmlite.binding.ffi as ffi

    from genlm_lab.backend.vllm import _guard_llvmlite_against_dunder_lookups

    _guard_llvmlite_against_dunder_lookups()
    _guard_llvmlite_against_dunder_lookups()  # once is enough; twice changes nothing
    assert not hasattr(ffi.lib, "__dict__")
    assert not hasattr(ffi.lib, "__wrapped__")
    assert (
        ffi.lib.LLVMPY_GetVersionInfo is ffi.lib.LLVMPY_GetVersionInfo
    )  # C functions still resolve


def test_engine_options_suit_the_platform_and_the_caller_wins():
    from genlm_lab.backend.vllm import CPU_KV_CACHE_BYTES, engine_options

    cpu = engine_options(cuda=False)
    assert cpu["max_logprobs"] == -1 and cpu["enable_prefix_caching"]
    assert cpu["dtype"] == "float32" and cpu["enforce_eager"]  # transformers' numbers, fast start
    assert (
        cpu["kv_cache_memory_bytes"] == CPU_KV_CACHE_BYTES and "gpu_memory_utilization" not in cpu
    )
    gpu = engine_options(cuda=True)
    assert (
        gpu["gpu_memory_utilization"] == 0.5 and "dtype" not in gpu and "enforce_eager" not in gpu
    )
    mine = engine_options({"dtype": "bfloat16", "kv_cache_memory_bytes": 1 << 20}, cuda=False)
    assert mine["dtype"] == "bfloat16" and mine["kv_cache_memory_bytes"] == 1 << 20
