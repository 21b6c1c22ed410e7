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

The Ray column (skipped without ray, or with BENCH_EVAL_RAY=0): the same
instances and method on a local Ray (`RayCluster`, 2 CPUs: two replicas of
the model, one CPU thread each) against the local run above; and the
scheduling overhead per run, with a model that costs nothing: BENCH_EVAL_FREE
runs (default 1000), stored, on Ray minus locally, per run (target <= 5 ms,
so 10k runs cost under a minute). `python bench_eval.py --ray` runs the
local and Ray rows only.
"""

from __future__ import annotations

import asyncio
import importlib.util
import math
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

from _row import result_row

N = int(os.environ.get("BENCH_EVAL_N", "40"))
MAX_TOKENS = int(os.environ.get("BENCH_EVAL_MAX_TOKENS", "32"))
N_PARTICLES = 5
FREE_RUNS = int(os.environ.get("BENCH_EVAL_FREE", "1000"))


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


def _method():
    from genlm_lab.eval import Method

    return Method(
        kind="awrs_smc", n_particles=N_PARTICLES, ess_threshold=0.5, max_tokens=MAX_TOKENS
    )


async def _ours(
    domain, lm, instances, cluster=None, errors=None
) -> tuple[float, dict[int, float], float, int]:
    """Our runner, here (`lm` the loaded model) or on Ray (`lm` a `ModelSpec`)."""
    from genlm_lab.eval import ResultsStore, run_evaluation

    model = _method().adaptor(domain, lm) if cluster is None else lm
    with tempfile.TemporaryDirectory() as tmp, ResultsStore(Path(tmp) / "bench.sqlite") as store:
        start = time.perf_counter()
        results = await run_evaluation(
            instances,
            model,
            domain.evaluator,
            store=store,
            domain=domain.name,
            # on Ray: per replica, so every instance is in flight there too
            max_concurrency=len(instances),
            cluster=cluster,
        )
        wall = time.perf_counter() - start
        runs = store.to_pandas("runs")
    if errors is not None:
        errors.extend(results["errors"])
    accs = {
        k: r[0]["weighted_accuracy"]
        for k, r in enumerate(results["all_instance_results"])
        if r[0].get("weighted_accuracy") is not None
    }
    return wall, accs, float(runs["store_seconds"].sum()), results["n_errors"]


def _free_adaptor():
    """A model that costs nothing: the same answer at once (pickled by value, a closure)."""
    from genlm_lab.eval import ModelOutput, ModelResponse

    output = ModelOutput(responses=[ModelResponse(response="a", weight=1.0)])

    async def free(instance, output_dir, replicate):
        return output

    return free


async def _free_wall(domain, instances, replicates: int, cluster) -> float:
    from genlm_lab.eval import ResultsStore, run_evaluation

    with tempfile.TemporaryDirectory() as tmp, ResultsStore(Path(tmp) / "free.sqlite") as store:
        start = time.perf_counter()
        results = await run_evaluation(
            instances,
            _free_adaptor(),
            domain.evaluator,
            store=store,
            domain=domain.name,
            n_replicates=replicates,
            max_concurrency=64,
            model_id="free",
            cluster=cluster,
        )
        wall = time.perf_counter() - start
        assert len(store.to_pandas("runs")) == len(instances) * replicates
    assert results["n_errors"] == 0
    return wall


def ray_rows(domain, instances, local_wall: float, local_accs: dict[int, float]) -> list[dict]:
    """Rows of the Ray column: the same evaluation on a local Ray, and the overhead per run."""
    from genlm_lab.eval.cluster import ModelSpec, RayCluster

    cluster = RayCluster("local", num_cpus=2)
    try:
        spec = ModelSpec.method(_method(), domain, "smollm2-135m", backend="hf")
        _progress(f"Ray: {N} patterns on {cluster.num_cpus} CPUs (replicas load the model)")
        start = time.perf_counter()
        asyncio.run(_free_wall(domain, instances[:1], 1, cluster))  # start Ray: not timed below
        ray_start = time.perf_counter() - start
        start = time.perf_counter()
        asyncio.run(_ours(domain, spec, instances[:1], cluster))  # the replicas load the model
        load_s = time.perf_counter() - start
        failures: list[dict] = []
        wall, accs, _, errors = asyncio.run(_ours(domain, spec, instances, cluster, failures))
        cluster.release()
        same = sum(1 for k, a in accs.items() if local_accs.get(k) == a)
        replicates = max(1, FREE_RUNS // len(instances))
        runs = replicates * len(instances)
        _progress(
            f"scheduling overhead: {runs} runs of a model that costs nothing, here and on Ray"
        )
        local_free = asyncio.run(_free_wall(domain, instances, replicates, None))
        asyncio.run(_free_wall(domain, instances[:1], 1, cluster))  # the free model's replicas
        ray_free = asyncio.run(_free_wall(domain, instances, replicates, cluster))
        n_actors = len(next(iter(cluster._pools.values())))
    finally:
        cluster.shutdown()
    overhead_ms = (ray_free - local_free) / runs * 1000
    load = os.getloadavg()[0]
    return [
        result_row(
            "eval",
            "wall on a local Ray (s), 2 replicas",
            round(wall, 1),
            round(local_wall, 1),
            round(local_wall / wall, 2),
            "report (parity on 2 cores)",
            None,
            f"same {N} instances and method; baseline: the local runner above (one model, torch's "
            f"threads); Ray: {n_actors} replicas of 1 CPU each, each with all {N} in flight; "
            f"{load_s:.0f} s more to load the replicas (and run one instance), {ray_start:.0f} s to start Ray "
            "(with two empty replicas); "
            f"{same} of {len(accs)} instances' weighted accuracy equal to the local run's "
            f"(float32 batches differ in the last bits); {errors} errors"
            f"{': ' + str(failures[0]['error']) if failures else ''}; load average {load:.1f}",
        ),
        result_row(
            "eval",
            "Ray scheduling overhead per run (ms)",
            round(overhead_ms, 2),
            round(local_free / runs * 1000, 2),
            None,
            "<= 5 ms",
            overhead_ms <= 5,
            f"a model that costs nothing, {runs} runs stored: {ray_free:.1f} s on Ray "
            f"({n_actors} replicas, 64 in flight each) against {local_free:.1f} s here (baseline: "
            "per run, local); the driver alone writes the store",
        ),
    ]


def _has_ray() -> bool:
    return os.environ.get("BENCH_EVAL_RAY", "1") != "0" and importlib.util.find_spec("ray")


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
    _progress(f"ours took {wall:.0f} s")
    extra = ray_rows(domain, instances, wall, accs) if _has_ray() else []
    if "--ray" in sys.argv:
        return extra
    _progress("genlm-control next, one instance at a time")
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
        *extra,
    ]


if __name__ == "__main__":
    for row in run():
        print(row)
