"""A quick regression guard: a short workload per layer, side A against side B, interleaved.

`make bench-quick` runs six small workloads over the public API on the tiny
random model (SmolLM2's 49,152-token vocabulary, 2 layers, so our own code
dominates their time, not the model's): backend (batched, cached
`next_token_logprobs`), trie (build and `weight_sum`), bytes (the byte beam
reading a sentence with `logp_next` at every byte), smc (the lipogram),
control (AWRS-SMC under a regex) and eval (`run_evaluation` with a store).

Side A is the merge-base of HEAD with main, checked out in a worktree under
/tmp (or `--a REV_OR_DIR`); side B is this working tree, uncommitted edits
included (or `--b REV_OR_DIR`). Each side is one long-lived worker process
that imports genlm_lab from its own tree (checked) and runs the workload code
of this file; the two are driven in turn, A then B, then B then A, so that
machine load falls on both alike. Each workload is run once untimed on each
side (compilation, caches), then `--repeats` times per side (each sample the
fastest of `--inner` runs; fewer repeats, at least 3, once `--budget` seconds
have passed).

Per workload the ratio is the median of the paired ratios B/A (time; above 1
is slower), and the noise band is twice the standard error of that median,
from the spread of the pairs (1.4826 MAD of the log-ratios, times
1.2533/sqrt(n)), and never below the spread of one pair. A workload whose
ratio exceeds 1.10 times (1 + band) (`--tolerance`) is measured again, as many
pairs again, and fails if it still does on all its pairs; the run then exits 1. A workload that fails on side A (a
name the older tree lacks) is reported and skipped; one failing on side B
fails the run.

Usage::

    python benchmarks/bench_quick.py [--a REV_OR_DIR] [--b REV_OR_DIR]
        [--repeats 5] [--inner 2] [--budget 200] [--workloads smc,bytes] [--scale 1.0]
        [--slow-b WORKLOAD=SECONDS]   # inject a sleep into side B (tests the guard)
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TAG = "@@bench_quick "  # prefix of the worker's protocol lines on stdout
SLEEP_ENV = "BENCH_QUICK_SLEEP"  # "workload=seconds": a sleep inside that workload's timing
TOLERANCE = 0.10
TEXT = b"The cat sat, 42 times."
PROMPT = "Write a sentence about the sea:"
PATTERNS = [r"[a-z]{3}\d{2}", r"(ab)+c"]


# ---------------------------------------------------------------- the workloads


class Setup:
    """What the workloads share inside one worker: the tiny model, loaded once."""

    def __init__(self, scale: float) -> None:
        self.scale = scale
        self._lm: Any = None

    @property
    def lm(self) -> Any:
        if self._lm is None:
            from genlm_lab.backend import load_model_by_name

            self._lm = load_model_by_name("tiny-random", backend="hf")
        return self._lm

    def n(self, base: int) -> int:
        """`base` iterations, scaled (at least 1)."""
        return max(1, round(base * self.scale))


def _backend(s: Setup) -> Callable[[], Any]:
    lm = s.lm
    rounds = s.n(8)

    async def go() -> float:
        lm.clear_cache()
        total = 0.0
        for r in range(rounds):  # 8 contexts that each grow by one token per round: KV reuse
            ctxs = [[lm.bos_token_id, *range(100 + 7 * i, 110 + 7 * i + r)] for i in range(8)]
            out = await asyncio.gather(*(lm.next_token_logprobs(c) for c in ctxs))
            total += float(out[0][5])
        return round(total, 4)

    return lambda: asyncio.run(go())


def _trie(s: Setup) -> Callable[[], Any]:
    import numpy as np

    from genlm_lab.trie import TokenCharacterTrie

    decode = [bytes(t) for t in s.lm.byte_vocab]
    ws = np.random.default_rng(0).random((8, len(decode)))
    sums = s.n(10)

    def go() -> float:
        trie = TokenCharacterTrie(decode)
        total = 0.0
        for _ in range(sums):
            total += float(trie.weight_sum(ws[0])[0])
        total += float(np.asarray(trie.batch_weight_sum(ws))[:, 0].sum())
        return round(total, 4)

    return go


def _bytes(s: Setup) -> Callable[[], Any]:
    from genlm_lab.bytes import BeamParams, ByteBeamState

    lm = s.lm
    text = TEXT[: max(4, round(len(TEXT) * min(1.0, s.scale)))]

    async def go() -> float:
        lm.clear_cache()
        beam = await ByteBeamState.initial(lm, BeamParams(K=5))
        for b in text:
            beam = beam.prune()
            await beam.logp_next()
            beam = await (beam << b)
        return round(float(beam.logZ), 4)

    return lambda: asyncio.run(go())


def _smc(s: Setup) -> Callable[[], Any]:
    from genlm_lab.smc import smc_standard
    from genlm_lab.smc.examples import Lipogram

    lm = s.lm
    runs = s.n(2)

    async def go() -> float:
        total = 0.0
        for seed in range(runs):
            lm.clear_cache()
            model = Lipogram(lm, PROMPT, max_tokens=10)
            result = await smc_standard(model, 8, ess_threshold=0.5, seed=seed)
            total += result.log_ml
        return round(total, 4)

    return lambda: asyncio.run(go())


def _control(s: Setup) -> Callable[[], Any]:
    from genlm_lab.control import AWRS, SMC, BoolFSA, PromptedLLM

    lm = s.lm
    llm = PromptedLLM(lm, prompt="Email: ")
    condition = BoolFSA.from_regex(r"[a-z]+(@[a-z]+)?").coerce(llm, f=b"".join)
    tokens = s.n(8)

    async def go() -> float:
        lm.clear_cache()
        seqs = await SMC(AWRS(llm, condition, seed=0))(4, 0.5, tokens, seed=0, progress=False)
        return round(float(seqs.log_ml), 4)

    return lambda: asyncio.run(go())


def _eval(s: Setup) -> Callable[[], Any]:
    from genlm_lab.eval import Method, ResultsStore, run_evaluation
    from genlm_lab.eval.domains.pattern_matching import PatternMatchingDomain

    lm = s.lm
    domain = PatternMatchingDomain(PATTERNS)
    method = Method(kind="base", n_particles=4, max_tokens=s.n(6))

    async def go() -> float:
        lm.clear_cache()
        with tempfile.TemporaryDirectory() as tmp, ResultsStore(Path(tmp) / "q.sqlite") as store:
            results = await run_evaluation(
                list(domain.dataset),
                method.adaptor(domain, lm),
                domain.evaluator,
                store=store,
                domain=domain.name,
                max_concurrency=len(PATTERNS),
            )
        return round(float(results["average_weighted_accuracy"]), 4)

    return lambda: asyncio.run(go())


WORKLOADS: dict[str, Callable[[Setup], Callable[[], Any]]] = {
    "backend": _backend,
    "trie": _trie,
    "bytes": _bytes,
    "smc": _smc,
    "control": _control,
    "eval": _eval,
}


# ---------------------------------------------------------------- the worker


def _say(out: Any, message: dict) -> None:
    out.write(TAG + json.dumps(message) + "\n")
    out.flush()


def worker(tree: Path, scale: float, inner: int) -> int:
    """Serve timing requests on stdin (a workload's name per line); answer after TAG.

    Each answer is the fastest of `inner` runs of the workload.
    """
    import warnings

    warnings.filterwarnings("ignore")
    out = sys.stdout
    sys.stdout = sys.stderr  # library prints must not mix with the protocol
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:
        pass
    import genlm_lab

    where = Path(genlm_lab.__file__).resolve()
    if not where.is_relative_to(tree.resolve()):
        _say(out, {"error": f"genlm_lab imported from {where}, not from {tree}"})
        return 2
    _say(out, {"ready": str(where)})
    sleep = dict(item.split("=") for item in os.environ.get(SLEEP_ENV, "").split(",") if item)
    setup, prepared = Setup(scale), {}
    for line in sys.stdin:
        name = line.strip()
        if not name:
            continue
        try:
            if name not in prepared:
                prepared[name] = WORKLOADS[name](setup)
                prepared[name]()  # untimed: compilation, first-use caches
            best = math.inf
            for _ in range(inner):  # the fastest of a few: load spikes only ever add time
                gc.collect()
                start = time.perf_counter()
                value = prepared[name]()
                if name in sleep:
                    time.sleep(float(sleep[name]))
                best = min(best, time.perf_counter() - start)
            _say(out, {"seconds": best, "value": repr(value)})
        except Exception as exc:  # reported per workload; the worker goes on
            _say(out, {"error": f"{type(exc).__name__}: {exc}"})
    return 0


class Side:
    """One worker process for a tree."""

    def __init__(
        self, label: str, tree: Path, desc: str, scale: float, inner: int, env: dict
    ) -> None:
        from _worktrees import tree_env

        self.label, self.tree, self.desc = label, tree, desc
        self.proc = subprocess.Popen(
            [
                sys.executable,
                str(Path(__file__).resolve()),
                "--worker",
                str(tree),
                str(scale),
                str(inner),
            ],
            cwd=tree,
            env=tree_env(tree, env),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL if not os.environ.get("BENCH_QUICK_DEBUG") else None,
            text=True,
        )

    def read(self) -> dict:
        for line in self.proc.stdout:
            if line.startswith(TAG):
                return json.loads(line[len(TAG) :])
        raise RuntimeError(f"side {self.label}'s worker ended (exit {self.proc.wait()})")

    def ask(self, name: str) -> dict:
        self.proc.stdin.write(name + "\n")
        self.proc.stdin.flush()
        return self.read()

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


# ---------------------------------------------------------------- the verdict


def verdict(a: list[float], b: list[float], tolerance: float = TOLERANCE) -> dict:
    """Paired timings of A and B: median ratio B/A, its noise band, and whether B regressed."""
    logs = [math.log(y / x) for x, y in zip(a, b, strict=True)]
    mid = statistics.median(logs)
    mad = 1.4826 * statistics.median(abs(v - mid) for v in logs)
    # Twice the standard error of the median, but never below the spread of one pair: a
    # median absolute deviation from a handful of pairs underestimates the spread often.
    band = max(2 * 1.2533 * mad / math.sqrt(len(logs)), mad)
    limit = (1 + tolerance) * math.exp(band)
    ratio = math.exp(mid)
    return {
        "a": statistics.median(a),
        "b": statistics.median(b),
        "ratio": ratio,
        "noise": math.exp(band) - 1,
        "spread": math.exp(mad) - 1,
        "limit": limit,
        "regressed": ratio > limit,
    }


def table(results: dict[str, dict]) -> str:
    """The Markdown table of a run."""
    lines = [
        "| workload | A median (s) | B median (s) | B/A | noise band | fails above | same result | verdict |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, r in results.items():
        if "skip" in r:
            lines.append(f"| {name} | | | | | | | {r['skip']} |")
            continue
        verdict_text = "REGRESSION" if r["regressed"] else "ok"
        if "confirmed" in r:
            verdict_text += f" (re-measured: {r['confirmed']} -> {r['pairs']} pairs)"
        lines.append(
            f"| {name} | {r['a']:.4f} | {r['b']:.4f} | {r['ratio']:.3f} | ±{r['noise']:.1%} "
            f"(pair spread {r['spread']:.0%}) | {r['limit']:.3f} | "
            f"{'yes' if r['same'] else 'no'} | {verdict_text} |"
        )
    return "\n".join(lines)


def compare(
    a_spec: str,
    b_spec: str,
    names: list[str],
    repeats: int,
    scale: float = 1.0,
    tolerance: float = TOLERANCE,
    slow_b: str = "",
    inner: int = 2,
    budget: float = 200.0,
) -> tuple[int, str]:
    """Run the workloads on both sides, interleaved; (exit status, report)."""
    from _worktrees import check_under, tree_for

    started = time.perf_counter()
    load = os.getloadavg()[0]
    confirmed: dict[str, int] = {}  # workloads re-measured, and their first number of pairs
    (tree_a, desc_a), (tree_b, desc_b) = tree_for(a_spec), tree_for(b_spec)
    sides = [
        Side("A", tree_a, desc_a, scale, inner, {}),
        Side("B", tree_b, desc_b, scale, inner, {SLEEP_ENV: slow_b} if slow_b else {}),
    ]
    try:
        for side in sides:
            hello = side.read()
            if "error" in hello:
                raise RuntimeError(f"side {side.label}: {hello['error']}")
            check_under(Path(hello["ready"]), side.tree)
        times: dict[str, dict[str, list[float]]] = {n: {"A": [], "B": []} for n in names}
        values: dict[str, dict[str, set[str]]] = {n: {"A": set(), "B": set()} for n in names}
        errors: dict[str, dict[str, str]] = {n: {} for n in names}

        def pair(name: str, r: int) -> None:
            """One timing on each side, A first on even rounds and B first on odd ones."""
            for side in sides if r % 2 == 0 else sides[::-1]:
                answer = side.ask(name)
                if "error" in answer:
                    errors[name][side.label] = answer["error"]
                    continue
                times[name][side.label].append(answer["seconds"])
                values[name][side.label].add(answer["value"])

        for r in range(repeats):
            if r >= 3 and time.perf_counter() - started > budget:
                break  # a loaded machine: fewer repeats (at least 3), still interleaved
            for name in names:
                if not errors[name]:
                    pair(name, r)
        # A workload that looks slower is measured again, as long again, before it fails:
        # five pairs under a load spike can look like a regression once.
        for name in names:
            a, b = times[name]["A"], times[name]["B"]
            if errors[name] or not verdict(a, b[: len(a)], tolerance)["regressed"]:
                continue
            confirmed[name] = len(a)
            for r in range(len(a), 2 * len(a)):
                if not errors[name]:
                    pair(name, r)
    finally:
        for side in sides:
            side.close()
    results, status = {}, 0
    for name in names:
        if "B" in errors[name]:
            results[name] = {"skip": f"FAILED on B: {errors[name]['B'][:120]}"}
            status = 1
        elif "A" in errors[name]:
            results[name] = {"skip": f"skipped (fails on A: {errors[name]['A'][:120]})"}
        else:
            n = min(len(times[name]["A"]), len(times[name]["B"]))
            results[name] = verdict(times[name]["A"][:n], times[name]["B"][:n], tolerance)
            results[name]["same"] = values[name]["A"] == values[name]["B"]
            results[name]["pairs"] = n
            if name in confirmed:
                results[name]["confirmed"] = confirmed[name]
            status = max(status, int(results[name]["regressed"]))
    elapsed = time.perf_counter() - started
    report = "\n".join(
        [
            f"A: {desc_a}",
            f"B: {desc_b}" + (f" [injected sleep: {slow_b}]" if slow_b else ""),
            f"up to {repeats} interleaved repeats per side (each the fastest of {inner} runs), "
            f"scale {scale}; load average "
            f"{load:.2f} -> {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; {elapsed:.0f} s",
            "",
            table(results),
            "",
            f"fails when B/A > {1 + tolerance:.2f} x (1 + noise band): "
            + ("REGRESSION" if status else "passed"),
        ]
    )
    return status, report


def run() -> list[dict]:
    """For `run_all.py`: this tree against the merge-base with main, one row per workload."""
    sys.path.insert(0, str(HERE))
    from _row import result_row
    from _worktrees import REPO, merge_base

    status, report = compare(merge_base(), str(REPO), list(WORKLOADS), 5)
    rows = []
    for line in report.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if line.startswith("| ") and cells[0] in WORKLOADS:
            ratio = float(cells[3]) if cells[3] else None
            rows.append(
                result_row(
                    "quick guard: this tree (B) vs the merge-base with main (A), tiny-random",
                    cells[0],
                    cells[2],
                    cells[1],
                    ratio,
                    f"<= {cells[5]}" if cells[5] else "",
                    cells[7] == "ok",
                    f"time B/A, median of paired interleaved runs; noise {cells[4]}",
                )
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--a", default=None, help="side A: a revision or a tree (merge-base)")
    parser.add_argument("--b", default=None, help="side B: a revision or a tree (this tree)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--budget", type=float, default=200.0, help="seconds; fewer repeats past it"
    )
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--inner", type=int, default=2, help="runs per sample (the fastest)")
    parser.add_argument("--tolerance", type=float, default=TOLERANCE)
    parser.add_argument("--slow-b", default="", help="WORKLOAD=SECONDS: sleep in side B")
    parser.add_argument("--main", default="main", help="the branch whose merge-base is side A")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(HERE))
    from _worktrees import REPO, merge_base

    names = [n for n in args.workloads.split(",") if n]
    unknown = sorted(set(names) - set(WORKLOADS))
    if unknown:
        parser.error(f"unknown workload(s) {unknown}; expected some of {list(WORKLOADS)}")
    status, report = compare(
        args.a or merge_base(args.main),
        args.b or str(REPO),
        names,
        args.repeats,
        args.scale,
        args.tolerance,
        args.slow_b,
        args.inner,
        args.budget,
    )
    print(report, flush=True)
    return status


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "--worker":
        sys.exit(worker(Path(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])))
    sys.exit(main())
