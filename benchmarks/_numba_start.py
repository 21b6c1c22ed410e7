"""A trivial cached numba function: its first call times numba's own start-up.

numba starts its runtime once per process, at the first jitted call of any
library (ours or genlm-backend's). The benchmarks time that apart, so that it
is charged to neither side's per-run cost but reported beside it.
"""

import time


def numba_startup() -> float:
    """Seconds to import numba and make its first (disk-cached) jitted call."""
    start = time.perf_counter()
    import numba

    @numba.njit(cache=True)
    def _noop(x):
        return x + 1

    _noop(1)
    return time.perf_counter() - start
