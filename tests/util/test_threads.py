"""Thread policy: the share per process, the kernel environment, and the oversubscription check."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from genlm_lab.util import threads
from genlm_lab.util.threads import (
    TorchProcess,
    other_torch_processes,
    oversubscription_line,
    shared_threads,
    thread_env,
)


def test_shared_threads_is_half_the_cores_and_never_zero():
    assert [shared_threads(c) for c in (1, 2, 3, 4, 16)] == [1, 1, 1, 2, 8]


def test_thread_env_fills_unset_variables_and_keeps_the_users():
    env = thread_env({"PATH": "/bin"}, cores=2)
    assert env == {"PATH": "/bin", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    kept = thread_env({"OMP_NUM_THREADS": "3"}, cores=2)
    assert kept == {"OMP_NUM_THREADS": "3", "MKL_NUM_THREADS": "3"}
    blank = thread_env({"OMP_NUM_THREADS": " ", "MKL_NUM_THREADS": "2"}, cores=8)
    assert blank["OMP_NUM_THREADS"] == "2"


def _fake_proc(root: Path, pid: int, argv0: str, torch: bool, env: dict[str, str]) -> None:
    d = root / str(pid)
    d.mkdir(parents=True)
    (d / "cmdline").write_bytes(argv0.encode() + b"\0-m\0ipykernel\0")
    lib = "/venv/lib/torch/lib/libtorch_cpu.so" if torch else "/usr/lib/libc.so.6"
    (d / "maps").write_text(f"7f00-7f01 r-xp 00000000 08:01 1 {lib}\n")
    (d / "environ").write_bytes(b"".join(f"{k}={v}\0".encode() for k, v in env.items()))


def test_other_torch_processes_reads_proc(tmp_path: Path):
    _fake_proc(tmp_path, 10, "/venv/bin/python3", True, {"OMP_NUM_THREADS": "1"})
    _fake_proc(tmp_path, 11, "/venv/bin/python", True, {"HOME": "/x"})  # torch default
    _fake_proc(tmp_path, 12, "/venv/bin/python", False, {})  # no torch
    _fake_proc(tmp_path, 13, "/usr/bin/bash", True, {})  # not python
    _fake_proc(tmp_path, 14, "/venv/bin/python", True, {})  # itself
    (tmp_path / "loadavg").write_text("0 0 0 1/1 1\n")  # not a pid
    found = sorted(other_torch_processes(tmp_path, cores=4, self_pid=14), key=lambda p: p.pid)
    assert found == [TorchProcess(10, 1, True), TorchProcess(11, 4, False)]


def test_line_only_when_threads_outnumber_the_cores():
    one = [TorchProcess(10, 1, True)]
    assert oversubscription_line(1, one, cores=2) is None
    assert oversubscription_line(2, [], cores=2) is None  # alone: its own threads are its business
    line = oversubscription_line(2, one, cores=2)
    assert line is not None and "\n" not in line
    assert "1 other torch process shares these 2 cores (3 compute threads" in line
    assert "OMP_NUM_THREADS=1" in line
    two = oversubscription_line(1, [TorchProcess(10, 2, False), TorchProcess(11, 2, False)], 4)
    assert two is not None and "2 other torch processes share these 4 cores (5" in two


def test_no_line_when_lowering_threads_would_not_help():
    # every process already computes on one thread: fewer threads cannot help
    ones = [TorchProcess(10, 1, True), TorchProcess(11, 1, False)]
    assert oversubscription_line(1, ones, cores=2) is None
    assert oversubscription_line(1, [TorchProcess(10, 1, True)], cores=1) is None


def test_line_asks_only_the_processes_that_can_lower():
    # this kernel uses one thread: the line names the other process, not this one
    line = oversubscription_line(1, [TorchProcess(10, 4, False)], cores=2)
    assert line is not None and "\n" not in line
    assert "process 10" in line and "4 threads" in line and "1 here" in line
    assert "torch.set_num_threads" not in line  # nothing to lower here
    here = oversubscription_line(2, [TorchProcess(10, 1, True)], cores=2)
    assert here is not None and "torch.set_num_threads(1)" in here and "process 10" not in here


def test_warns_once_per_process(tmp_path: Path, monkeypatch, capsys):
    torch = pytest.importorskip("torch")
    _fake_proc(tmp_path, 10, "/venv/bin/python", True, {})
    monkeypatch.setattr(threads, "_warned", False)
    monkeypatch.setattr(threads, "cpu_count", lambda: 1)
    monkeypatch.setattr(torch, "get_num_threads", lambda: 2)  # one more than it needs
    first = threads.warn_if_oversubscribed(tmp_path)
    assert first is not None and capsys.readouterr().err == first + "\n"
    assert threads.warn_if_oversubscribed(tmp_path) is None
    assert capsys.readouterr().err == ""


@pytest.mark.integration
@pytest.mark.skipif(not Path(f"/proc/{os.getpid()}/maps").exists(), reason="needs /proc")
def test_sees_a_real_torch_process(tmp_path: Path):
    import subprocess
    import sys
    import time

    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    code = "import torch, sys; print('ok', flush=True); sys.stdin.read()"
    child = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == b"ok\n"
        deadline = time.monotonic() + 5
        while True:
            mine = [p for p in other_torch_processes() if p.pid == child.pid]
            if mine or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert mine == [TorchProcess(child.pid, 1, True)]
    finally:
        child.communicate(b"")


def test_lab_starts_kernels_on_a_share_of_the_cores(tmp_path: Path, monkeypatch, capsys):
    from genlm_lab import cli

    envs: list[dict[str, str]] = []
    monkeypatch.setattr(cli, "_hand_over", lambda cmd, env: envs.append(env) or 0)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    monkeypatch.setattr(threads, "cpu_count", lambda: 6)
    assert cli.main(["lab", "--dir", str(tmp_path)]) == 0
    assert envs[-1]["OMP_NUM_THREADS"] == "3" and envs[-1]["MKL_NUM_THREADS"] == "3"
    assert "kernels compute on 3 thread(s)" in capsys.readouterr().out
    monkeypatch.setenv("OMP_NUM_THREADS", "5")  # the user's choice wins
    assert cli.main(["lab", "--dir", str(tmp_path)]) == 0
    assert envs[-1]["OMP_NUM_THREADS"] == "5"
