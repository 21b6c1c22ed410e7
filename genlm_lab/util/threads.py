"""How many torch threads a process takes when it shares the machine, and a check for too many.

Torch starts one compute thread per core in every process. Two processes that
each run a forward at once then fight over the same cores, and their
forwards run many times slower than with fewer threads each (docs/workshop.md
has the numbers). A workshop laptop runs a notebook, the Playground and a
test run at once, so the kernels `genlm-lab lab` starts take half the cores
each (one on 2 cores), and a model load says so in one line when the threads
of the torch processes on the machine outnumber its cores.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")
"""The variables torch (OpenMP, MKL) reads for its compute-thread count at import."""


def cpu_count() -> int:
    """Cores this process may run on (its affinity mask where the OS has one)."""
    affinity = getattr(os, "sched_getaffinity", None)
    if affinity is not None:
        try:
            return max(1, len(affinity(0)))
        except OSError:  # pragma: no cover - platform quirk
            pass
    return max(1, os.cpu_count() or 1)


def shared_threads(cores: int | None = None) -> int:
    """Threads per process that leave room for one more process as busy: half the cores, >= 1.

    Fewer threads cost a lone forward a little and save a great deal when two
    forwards overlap (docs/workshop.md).
    """
    return max(1, (cpu_count() if cores is None else cores) // 2)


def thread_env(env: Mapping[str, str], cores: int | None = None) -> dict[str, str]:
    """A copy of `env` with the thread variables set to `shared_threads` where unset.

    A value the user set (either variable) is kept as it is, and copied to the other.
    """
    out = dict(env)
    given = next((out[v] for v in THREAD_VARS if out.get(v, "").strip()), None)
    value = given.strip() if given is not None else str(shared_threads(cores))
    for var in THREAD_VARS:
        if not out.get(var, "").strip():
            out[var] = value
    return out


@dataclass(frozen=True)
class TorchProcess:
    """Another process on this machine with torch loaded, and the threads it may compute with."""

    pid: int
    threads: int
    known: bool  # True when read from its OMP_NUM_THREADS, False when assumed (one per core)


def _env_threads(raw: bytes) -> int | None:
    for item in raw.split(b"\0"):
        name, _, value = item.partition(b"=")
        if name == b"OMP_NUM_THREADS":
            try:
                return max(1, int(value))
            except ValueError:
                return None
    return None


def other_torch_processes(
    proc: Path = Path("/proc"), cores: int | None = None, self_pid: int | None = None
) -> list[TorchProcess]:
    """The other readable processes that have torch's CPU library mapped.

    Cheap: it reads `/proc/PID/cmdline` of every process and the memory map of
    Python processes only. Processes of other users cannot be read and are not
    counted. A process's thread count is its `OMP_NUM_THREADS`, else one per
    core (torch's default): a `torch.set_num_threads` call inside it is not seen.
    """
    cores = cpu_count() if cores is None else cores
    me = os.getpid() if self_pid is None else self_pid
    found: list[TorchProcess] = []
    try:
        entries = list(proc.iterdir())
    except OSError:
        return found
    for entry in entries:
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            if b"python" not in cmdline.split(b"\0", 1)[0]:
                continue
            if b"libtorch_cpu" not in (entry / "maps").read_bytes():
                continue
        except OSError:
            continue
        try:
            threads = _env_threads((entry / "environ").read_bytes())
        except OSError:
            threads = None
        found.append(TorchProcess(int(entry.name), threads or cores, threads is not None))
    return found


def oversubscription_line(
    own_threads: int, others: list[TorchProcess], cores: int | None = None
) -> str | None:
    """One line saying the machine is oversubscribed, or None when the threads fit the cores.

    The line asks to lower threads only where that helps: in this process if
    it computes on more than one thread, and in each other process (named by
    pid) that does. When every process already uses one thread, fewer threads
    cannot help, and there is no line.
    """
    cores = cpu_count() if cores is None else cores
    total = own_threads + sum(p.threads for p in others)
    if not others or total <= cores:
        return None
    crowded = [p for p in others if p.threads > 1]
    if own_threads <= 1 and not crowded:
        return None
    least = min([own_threads] * (own_threads > 1) + [p.threads for p in crowded])
    fewer = max(1, min(shared_threads(cores), least - 1))
    asks = []
    if own_threads > 1:
        asks.append(
            f"OMP_NUM_THREADS={fewer} before this process starts, "
            f"or torch.set_num_threads({fewer}) here"
        )
    if crowded:
        named = ", ".join(f"process {p.pid} ({p.threads} threads)" for p in crowded)
        asks.append(f"start {named} with OMP_NUM_THREADS={fewer}")
    n = len(others)
    return (
        f"genlm-lab: {n} other torch process{'es' if n != 1 else ''} share{'s' if n == 1 else ''} "
        f"these {cores} cores ({total} compute threads in all, {own_threads} here): forwards "
        f"that overlap run many times slower; give fewer threads where there are several "
        f"({'; '.join(asks)}; docs/workshop.md)"
    )


_warned = False


def warn_if_oversubscribed(proc: Path = Path("/proc")) -> str | None:
    """Print the oversubscription line to stderr, once per process; returns it (None if fine)."""
    global _warned
    if _warned or not proc.is_dir():
        return None
    import torch

    line = oversubscription_line(torch.get_num_threads(), other_torch_processes(proc))
    if line is not None:
        _warned = True
        print(line, file=sys.stderr, flush=True)
    return line
