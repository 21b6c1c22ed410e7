"""benchmarks/bench_quick.py: the guard fails on an injected slowdown and passes on identical code."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "bench_quick.py"


@pytest.fixture(scope="module")
def quick():
    sys.path.insert(0, str(SCRIPT.parent))
    spec = importlib.util.spec_from_file_location("bench_quick_under_test", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_verdict_passes_equal_timings_and_fails_a_clear_slowdown(quick):
    a = [1.00, 1.05, 0.98, 1.02, 1.01]
    assert not quick.verdict(a, [1.01, 1.03, 0.99, 1.02, 1.00])["regressed"]
    slow = quick.verdict(a, [1.30, 1.36, 1.28, 1.33, 1.31])
    assert slow["regressed"] and slow["ratio"] > 1.25


def test_verdict_widens_its_band_with_the_noise_it_measures(quick):
    a = [1.0, 1.0, 1.0, 1.0, 1.0]
    noisy = quick.verdict(a, [1.15, 0.8, 1.3, 0.9, 1.2])
    assert not noisy["regressed"] and noisy["limit"] > 1.2
    assert quick.verdict(a, [1.2] * 5)["regressed"]  # 20% with no noise at all


def _guard(*extra: str) -> subprocess.Popen:
    args = ["--a", str(ROOT), "--b", str(ROOT), "--workloads", "backend", "--repeats", "3"]
    args += ["--inner", "1", "--scale", "0.1", *extra]
    return subprocess.Popen(
        [sys.executable, str(SCRIPT), *args], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )


@pytest.mark.slow  # four processes that import torch: ~100 s under load, kept out of test-quick
def test_the_guard_fails_on_an_injected_slowdown_and_passes_identical_code():
    # Both runs at once: each is two workers that mostly wait on the tiny model's load.
    # The workload takes milliseconds, so a 1 s sleep stands far out of any load's noise.
    slow, same = _guard("--slow-b", "backend=1.0"), _guard()
    slow_out, same_out = slow.communicate(timeout=300)[0], same.communicate(timeout=300)[0]
    assert slow.returncode == 1, slow_out
    assert "REGRESSION" in slow_out and "injected sleep: backend=1.0" in slow_out
    assert same.returncode == 0, same_out
    assert "| backend |" in same_out and "passed" in same_out
