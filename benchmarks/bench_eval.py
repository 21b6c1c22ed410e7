"""Evaluation throughput: our concurrent runner vs genlm-control 0.4.1's SMC awaited instance by instance.

Pattern matching (the AWRS paper's patterns, a fixed slice: the first
BENCH_EVAL_N, default 40), the default model (SmolLM2-135M on CPU),
AWRS-SMC with 5 particles, ess_threshold 0.5, max_tokens BENCH_EVAL_MAX_TOKENS
(default 32). One HF model object serves both sides:

- ours: `run_evaluation` with every instance in flight at once
  (`max_concurrency = N`) on our auto-batching `AsyncTransformer`, each run
  stored in a SQLite `ResultsStore` (store time is measured per run);
- the anchor: genlm-control 0.4.1's `AWRS(llm, condition).smc(...)` over
  genlm-backend's `AsyncTransformer`, awaited one instance after another as
  genlm-eval's runner does, with a genlm-control `Potential` that calls our
  `PythonRegex`'s byte-level checks, so both sides enforce the same constraint
  (genlm-eval's `PatternPotential` allows printable ASCII only; reading raw
  bytes loosely instead let the anchor's particles wander into invalid UTF-8).

Both answers are scored by the same checker; the weighted accuracies come
with 95% bootstrap intervals over instances. Rows: throughput (instances/s),
weighted accuracy (met = the two intervals overlap), store overhead (total
time writing runs / wall time of our run, target <= 5%).
"""

from __future__ import annotations

import asyncio
import math
import os
import tempfile
import time
import warnings
from pathlib import Path

from _row import result_row

N = int(os.environ.get("BENCH_EVAL_N", "40"))
MAX_TOKENS = int(os.environ.get("BENCH_EVAL_MAX_TOKENS", "32"))
N_PARTICLES = 5


def _progress(message: str) -> None:
    print(f"  eval: {message}", flush=True)


def _their_potential(pattern: str):
    """Our pattern constraint's own byte-level checks, as a genlm-control 0.4.1 Potential.

    Both sides then score every prefix identically (strict UTF-8; a prefix that
    ends inside a character must be completable into one the pattern allows), so
    the rows compare the runners and samplers, not two readings of the pattern.
    """
    import genlm.control as gc

    from genlm_lab.control import PythonRegex
    from genlm_lab.eval.domains.pattern_matching import MATCH_TIMEOUT

    ours = PythonRegex(pattern, timeout=MATCH_TIMEOUT)

    class RegexPotential(gc.Potential):
        async def prefix(self, context):
            return 0.0 if ours.viable(bytes(context)) else -math.inf

        async def complete(self, context):
            return 0.0 if ours.accepts(bytes(context)) else -math.inf

    return RegexPotential(list(range(256)))


async def _theirs(domain, hf_lm, instances) -> tuple[float, dict[int, float], set[int]]:
    import genlm.control as gc
    from genlm.backend.llm import AsyncTransformer as TheirTransformer

    from genlm_lab.eval import ModelOutput, ModelResponse

    their_lm = TheirTransformer(hf_lm.model, hf_lm.tokenizer)
    accs: dict[int, float] = {}
    finished: set[int] = set()  # instances with at least one particle that ended in EOS
    start = time.perf_counter()
    for k, instance in enumerate(instances):
        ids = list(hf_lm.tokenizer.encode(domain.prompt(instance)))
        llm = gc.PromptedLLM(their_lm, prompt_ids=ids, eos_byte_strings=[b"\n"])
        try:
            condition = _their_potential(instance.pattern).coerce(llm, f=b"".join)
            seqs = await gc.AWRS(llm, condition).smc(
                n_particles=N_PARTICLES, ess_threshold=0.5, max_tokens=MAX_TOKENS
            )
            output = ModelOutput(
                responses=[
                    ModelResponse(response=t, weight=w) for t, w in seqs.decoded_posterior.items()
                ]
            )
            accs[k] = domain.evaluator.evaluate_ensemble(instance, output)["weighted_accuracy"]
            if output.responses:
                finished.add(k)
        except Exception as exc:  # one bad pattern fails that instance alone, as in ours
            _progress(f"genlm-control failed on pattern {k}: {type(exc).__name__}: {exc}")
        _progress(f"genlm-control {k + 1}/{len(instances)}")
    return time.perf_counter() - start, accs, finished


async def _ours(domain, lm, instances) -> tuple[float, dict[int, float], float, int]:
    from genlm_lab.eval import Method, ResultsStore, run_evaluation

    method = Method(
        kind="awrs_smc", n_particles=N_PARTICLES, ess_threshold=0.5, max_tokens=MAX_TOKENS
    )
    with tempfile.TemporaryDirectory() as tmp, ResultsStore(Path(tmp) / "bench.sqlite") as store:
        start = time.perf_counter()
        results = await run_evaluation(
            instances,
            method.adaptor(domain, lm),
            domain.evaluator,
            store=store,
            domain=domain.name,
            max_concurrency=len(instances),
        )
        wall = time.perf_counter() - start
        runs = store.to_pandas("runs")
    accs = {
        k: r[0]["weighted_accuracy"]
        for k, r in enumerate(results["all_instance_results"])
        if r[0].get("weighted_accuracy") is not None
    }
    return wall, accs, float(runs["store_seconds"].sum()), results["n_errors"]


def run() -> list[dict]:
    from genlm_lab.backend import load_model_by_name
    from genlm_lab.eval import bootstrap_ci
    from genlm_lab.eval.domains.pattern_matching import PatternMatchingDomain, load_patterns

    warnings.filterwarnings("ignore", message="every particle has weight zero")
    load = os.getloadavg()[0]
    domain = PatternMatchingDomain(load_patterns()[:N])
    instances = list(domain.dataset)
    lm = load_model_by_name("smollm2-135m", backend="hf")
    _progress(f"ours: {N} patterns concurrently")
    wall, accs, store_s, errors = asyncio.run(_ours(domain, lm, instances))
    _progress(f"ours took {wall:.0f} s; genlm-control next, one instance at a time")
    their_wall, their_accs, finished = asyncio.run(_theirs(domain, lm, instances))
    load = max(load, os.getloadavg()[0])
    ours_tp, their_tp = N / wall, N / their_wall
    ours_ci, their_ci = bootstrap_ci(list(accs.values())), bootstrap_ci(list(their_accs.values()))
    # Both sides target the posterior over answers that end within max_tokens. Ours forces
    # EOS at the limit (weighted by its probability), so every live particle finishes;
    # genlm-control's `decoded_posterior` keeps only particles that reached EOS, and an
    # instance where none did has an empty posterior and scores 0. Where it finished at
    # least one particle, both estimate the same expectation: that row carries the target.
    both = sorted(k for k in finished if k in accs)
    ours_f, their_f = (
        bootstrap_ci([accs[k] for k in both]),
        bootstrap_ci([their_accs[k] for k in both]),
    )
    overlap = ours_f[1] <= their_f[2] and their_f[1] <= ours_f[2]
    where = (
        f"{N} patterns (first {N} of 454), SmolLM2-135M CPU, AWRS-SMC {N_PARTICLES} particles, "
        f"max_tokens {MAX_TOKENS}; load average up to {load:.1f} on {os.cpu_count()} cores"
    )
    return [
        result_row(
            "eval",
            "throughput (instances/s)",
            round(ours_tp, 4),
            round(their_tp, 4),
            round(ours_tp / their_tp, 2),
            ">= 5x",
            ours_tp / their_tp >= 5,
            f"ours: run_evaluation, all {N} in flight, stored; genlm-control 0.4.1 awaited one by one. {where}",
        ),
        result_row(
            "eval",
            "weighted accuracy [95% CI], all instances",
            f"{ours_ci[0]:.3f} [{ours_ci[1]:.3f}, {ours_ci[2]:.3f}]",
            f"{their_ci[0]:.3f} [{their_ci[1]:.3f}, {their_ci[2]:.3f}]",
            None,
            "report",
            None,
            f"same checker; {errors} of our runs and {N - len(their_accs)} of theirs failed; "
            f"genlm-control finished no particle within max_tokens on {N - len(finished)} of {N} "
            "instances (an empty posterior scores 0 there; ours forces EOS at the limit)",
        ),
        result_row(
            "eval",
            "weighted accuracy [95% CI], instances where genlm-control finished a particle",
            f"{ours_f[0]:.3f} [{ours_f[1]:.3f}, {ours_f[2]:.3f}]",
            f"{their_f[0]:.3f} [{their_f[1]:.3f}, {their_f[2]:.3f}]",
            None,
            "CIs overlap",
            overlap,
            f"{len(both)} of {N} instances: there both sides estimate the same posterior "
            "(answers ending within max_tokens)",
        ),
        result_row(
            "eval",
            "store overhead (share of wall)",
            round(store_s / wall, 5),
            None,
            None,
            "<= 5%",
            store_s / wall <= 0.05,
            f"{store_s:.3f} s writing {N} runs (output, scores, SMCRecord) of a {wall:.0f} s run",
        ),
    ]


if __name__ == "__main__":
    for row in run():
        print(row)
