"""Shared test set-up: offline hub, modest torch threads, model fixtures, GPU skips."""

import ctypes
import gc
import importlib.util
import os
import sys
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Kernels started by tests (nbval, nbclient, JupyterLab) draw no progress bars:
# their outputs are compared or stored, and a bar's timings differ every run.
os.environ.setdefault("GENLM_LAB_PROGRESS", "0")

import pytest  # noqa: E402
import torch  # noqa: E402

# Test modules import under pytest's importlib mode (so same-named test files in
# different folders do not clash); shared helper modules (oracles, strategies)
# sit beside the tests that use them, so each test folder is importable.
for _folder in sorted(Path(__file__).parent.iterdir()):
    if _folder.is_dir() and not _folder.name.startswith((".", "_")):
        sys.path.append(str(_folder))
# tests/ itself holds helpers shared across folders (tokenizer_panel.py); last, so that
# `from conftest import ...` in a folder still finds that folder's conftest first.
sys.path.append(str(Path(__file__).parent))

# One thread per process: the tests share two cores with Jupyter kernels and
# chromium, and an oversubscribed small forward is ~30x slower than a serial one.
torch.set_num_threads(1)


def pytest_collection_finish(session):
    """Freeze what collection imported, so the garbage collector stops walking it.

    torch, transformers, hypothesis and the package are millions of objects that
    live until exit; every full collection walked them all. Frozen, they are
    left out: 4-9% less CPU measured on the trie, byte-beam, sampler and vocabulary tests.
    """
    gc.collect()
    gc.freeze()


HAS_VLLM = importlib.util.find_spec("vllm") is not None


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """Under `--dist loadfile`, hand out the heaviest work first (tests/xdist_schedule.py)."""
    if config.getoption("dist", None) != "loadfile":
        return None
    from xdist_schedule import HeaviestFirst

    return HeaviestFirst(config, log)


def pytest_collection_modifyitems(config, items):
    """Skip tests marked `gpu` where CUDA is not available, `vllm` where vLLM is not installed."""
    skip_gpu = pytest.mark.skip(reason="needs CUDA (marked gpu)")
    skip_vllm = pytest.mark.skip(
        reason="needs the vLLM engine: make test runs these in .venv-vllm (marked vllm)"
    )
    for item in items:
        if "gpu" in item.keywords and not torch.cuda.is_available():
            item.add_marker(skip_gpu)
        elif "vllm" in item.keywords and not HAS_VLLM:
            item.add_marker(skip_vllm)


def _resident_bytes() -> int:
    """This process's resident memory (Linux; 0 elsewhere, where nothing is collected)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


_GREW = 256 << 20  # a test or module that left this much more resident memory


def _collect_if_grown(before: int) -> None:
    """A full garbage collection where memory grew by `_GREW` since `before`.

    Models sit in reference cycles (a backend and its batcher's bound methods), so a
    dropped one waits for a full collection, which a process whose objects are mostly
    frozen (above) seldom runs: a test worker otherwise held the models of tests long
    finished, past 4 GB. The few tests that load a model or a big vocabulary pay for it.
    """
    if _resident_bytes() - before > _GREW:
        gc.collect()
        _give_back_free_heap()


def _give_back_free_heap() -> None:
    """Return the C heap's free pages to the system (glibc's `malloc_trim`).

    torch allocates tensors of a few megabytes from the heap, and glibc keeps what they
    free for reuse: a test that copied SmolLM2 in float64 (1 GB) left 0.4 GB resident
    with no tensor alive, and each such test raised a worker's floor for good.
    """
    if _LIBC is not None:
        _LIBC.malloc_trim(0)


def _load_glibc():
    try:
        return ctypes.CDLL("libc.so.6")  # glibc only: elsewhere nothing is trimmed
    except OSError:
        return None


_LIBC = _load_glibc() if sys.platform == "linux" else None


@pytest.fixture(autouse=True)
def _free_a_tests_garbage():
    before = _resident_bytes()
    yield
    _collect_if_grown(before)


def _close_widgets() -> None:
    """Close every widget still open, as a notebook's kernel does when it shuts down.

    ipywidgets keeps each widget it creates in a registry until `close()`, for the
    front end that may still show it; in a test process nothing ever shows them, and a
    view kept there holds its potentials and through them a whole model (SmolLM2: half
    a gigabyte each; a worker kept every one a test file had viewed, past 4 GB).
    """
    if "ipywidgets" in sys.modules:
        sys.modules["ipywidgets"].Widget.close_all()


@pytest.fixture(autouse=True, scope="module")
def _free_a_modules_garbage():
    before = _resident_bytes()
    yield
    _close_widgets()
    _collect_if_grown(before)


@pytest.fixture(scope="session")
def smollm2_tokenizer():
    """The SmolLM2 tokenizer (shared across the session: do not mutate it)."""
    from genlm_lab.backend.models import load_tokenizer

    return load_tokenizer("smollm2-135m")


@pytest.fixture(scope="session")
def tiny_random_hf():
    """`(model, tokenizer)` of the seeded 2-layer "tiny-random" LLaMA, on CPU."""
    from genlm_lab.backend.models import load_hf_model

    return load_hf_model("tiny-random", device="cpu")


@pytest.fixture(scope="session")
def default_hf():
    """`(model, tokenizer)` of the real SmolLM2-135M-Instruct, on CPU (use in slow tests)."""
    from genlm_lab.backend.models import load_hf_model

    return load_hf_model("default", device="cpu")


@pytest.fixture(scope="session")
def vllm_default():
    """SmolLM2-135M on the real vLLM engine (CPU build in .venv-vllm, or CUDA).

    On the CPU with 2,048-token contexts and a 128 MiB KV cache (they take 94 MiB: 30
    layers x 3 KV heads x 64 x 2 x 4 bytes a token): the default 8,192 needed 352 MiB,
    held for the whole vLLM lane, whose one process must stay under 4 GB.
    """
    from vllm_engines import vllm_test_engine

    small = {} if torch.cuda.is_available() else {"kv_cache_memory_bytes": 128 << 20}
    return vllm_test_engine("smollm2-135m", max_model_len=2048, **small)


@pytest.fixture(scope="session")
def vllm_tiny():
    """tiny-random on the real vLLM engine, LoRA enabled (the adapter tests build theirs).

    On the CPU with a 16 MiB KV cache: its 8,192 tokens take 4 MiB (2 layers, one KV head
    of 32), and CPU engines live as long as the process, so the default 512 MiB stayed.
    """
    from vllm_engines import vllm_test_engine

    small = {} if torch.cuda.is_available() else {"kv_cache_memory_bytes": 16 << 20}
    return vllm_test_engine("tiny-random", enable_lora=True, max_lora_rank=8, **small)
