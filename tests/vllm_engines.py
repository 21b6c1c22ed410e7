"""Real vLLM engines for the tests marked `vllm` (fixtures in conftest.py)."""

import torch


def vllm_test_engine(name, **engine_opts):
    """An `AsyncVirtualLM` on the real engine, float32, with a small KV cache (tests share RAM)."""
    from genlm_lab.backend.vllm import AsyncVirtualLM

    if torch.cuda.is_available():
        sized = {"gpu_memory_utilization": 0.2}
    else:
        sized = {"kv_cache_memory_bytes": 512 << 20}  # SmolLM2 needs 0.35 GiB for 8,192 tokens
    return AsyncVirtualLM.from_name(name, engine_opts={"dtype": "float32", **sized, **engine_opts})
