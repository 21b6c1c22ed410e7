"""`genlm-lab eval run | report | merge | compare | migrate | status`: evaluate, report, join shards.

`run` loads each `--model` (repeatable: models are a dimension like methods),
builds each `--method` and evaluates it on the domain's first `--limit`
instances (or shard `--shard i/n` of them) into `--db`, with a tqdm bar per
method; an interrupted run resumes where it stopped when started again with
the same arguments (a run is reused only if its model, method, instance,
evaluator and seed are the same). `report` writes a self-contained HTML page
of a store (no script, no network). `merge` copies shard stores into one.
`compare` tests two methods or models paired by instance. `migrate` brings a
store of an older format up to date (a copy of the old file is kept).
`run --ray [ADDRESS]` runs on Ray actors (`genlm_lab.eval.cluster`); `status`
counts a store's runs per domain, method, model and status.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
import warnings
from pathlib import Path
from typing import Any

from genlm_lab.eval.cli_paper import add_paper_parser
from genlm_lab.eval.method_args import HelpWithMethods, method_help, parse_method
from genlm_lab.eval.wording import plural

__all__ = ["add_eval_parser", "method_help", "parse_method"]


def add_eval_parser(sub: argparse._SubParsersAction) -> None:
    """Register `eval run`, `report`, `merge`, `compare` and `migrate` under the main parser."""
    from genlm_lab.eval.domains import DOMAINS

    ev = sub.add_parser(
        "eval", help="evaluate methods on a domain; report, compare, merge, migrate stores"
    )
    esub = ev.add_subparsers(dest="eval_command", required=True)

    run = esub.add_parser(
        "run",
        help="run methods on a domain into a SQLite store",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        add_help=False,
    )
    run.add_argument("-h", "--help", action=HelpWithMethods, help="show this help and exit")
    run.add_argument("domain", choices=sorted(DOMAINS))
    run.add_argument(
        "--method",
        action="append",
        help="KIND[:key=value,...], e.g. awrs_smc:n_particles=5 (repeat for several; "
        "kinds and keys below)",
    )
    run.add_argument(
        "--preset",
        help="a named set of methods at a paper's settings, its replicates and max_tokens "
        "(awrs-colm-2025: the AWRS paper's five methods); with --method, both run",
    )
    run.add_argument("--limit", type=int, help="the first N instances")
    run.add_argument("--db", required=True, help="the SQLite results file (created if missing)")
    run.add_argument(
        "--model",
        action="append",
        help="model name or HF directory (repeat for several; default: 'default', SmolLM2-135M)",
    )
    run.add_argument(
        "--backend",
        choices=["hf", "vllm"],
        help="the models' backend (default: vllm where CUDA and vLLM are, else hf); "
        "vllm on the CPU needs its CPU build (docs/scaling-out.md)",
    )
    run.add_argument(
        "--replicates", type=int, help="runs per instance (default 1, or the preset's)"
    )
    run.add_argument("--concurrency", type=int, default=8, help="instances in flight at once")
    run.add_argument("--shard", help="i/n: run only shard i of n (Slurm arrays, Ray tasks)")
    run.add_argument("--seed", type=int, help="the experiment's seed (default 0, or the preset's)")
    run.add_argument("--max-tokens", type=int, help="default max_tokens for every method")
    run.add_argument(
        "--ray",
        nargs="?",
        const="local",
        metavar="ADDRESS",
        help="run on Ray actors, one per model replica (no ADDRESS: a local Ray; "
        "'auto' or ray://host:port: join one; needs genlm-lab[ray])",
    )
    run.set_defaults(func=_cmd_run)
    add_paper_parser(esub)

    report = esub.add_parser("report", help="write a standalone HTML report of a store")
    report.add_argument("db")
    report.add_argument("-o", "--output", help="output HTML (default: DB.html)")
    report.set_defaults(func=_cmd_report)

    merge = esub.add_parser("merge", help="copy the runs of shard stores into one store")
    merge.add_argument("output", help="the store to merge into (created if missing)")
    merge.add_argument("inputs", nargs="+", help="shard stores")
    merge.set_defaults(func=_cmd_merge)

    export = esub.add_parser(
        "export", help="a single-file copy of a store, safe while another process writes it"
    )
    export.add_argument("db", help="the store")
    export.add_argument("output", help="the copy to write (must not exist)")
    export.add_argument(
        "--no-records",
        action="store_true",
        help="leave out the runs' particle records (most of the bytes; scores stay)",
    )
    export.set_defaults(func=_cmd_export)

    comp = esub.add_parser("compare", help="compare two methods or models, paired by instance")
    comp.add_argument("db")
    comp.add_argument("a", help="a method or model name")
    comp.add_argument("b", help="another method or model name")
    comp.add_argument("--model", help="compare methods on this model only")
    comp.add_argument("--method", help="compare models with this method only")
    comp.add_argument("--domain", help="on this domain only")
    comp.set_defaults(func=_cmd_compare)

    mig = esub.add_parser("migrate", help="bring a store of an older format up to date")
    mig.add_argument("db")
    mig.set_defaults(func=_cmd_migrate)

    status = esub.add_parser(
        "status", help="count a store's runs per domain, method, model, status"
    )
    status.add_argument("db")
    status.set_defaults(func=_cmd_status)


def _cmd_run(args: argparse.Namespace) -> int:
    from genlm_lab.eval.domains import load_domain
    from genlm_lab.eval.runner import parse_shard

    methods, options = [], {}
    if args.preset is not None:  # its settings, unless the command line says otherwise
        from genlm_lab.eval.presets import preset

        chosen = preset(args.preset)
        options = dict(chosen.domain_options.get(args.domain, {}))
        args.seed = chosen.seed if args.seed is None else args.seed
        args.replicates = chosen.replicates if args.replicates is None else args.replicates
        methods += [
            m.model_copy(update={"seed": args.seed, "max_tokens": args.max_tokens or m.max_tokens})
            for m in chosen.methods_for(args.domain)
        ]
    args.seed = 0 if args.seed is None else args.seed
    args.replicates = 1 if args.replicates is None else args.replicates
    defaults = {"seed": args.seed}
    if args.max_tokens is not None:
        defaults["max_tokens"] = args.max_tokens
    methods += [parse_method(text, **defaults) for text in args.method or []]
    if not methods:
        raise ValueError("eval run needs --method (repeatable) or --preset")
    parse_shard(args.shard)  # fail before loading a model
    if args.limit is not None and args.limit < 1:
        raise ValueError(f"--limit must be >= 1, got {args.limit}")
    cluster = None
    if args.ray is not None:  # the actors load the models; this process only schedules and stores
        from genlm_lab.eval.cluster import RayCluster, require_ray

        require_ray()
        cluster = RayCluster(args.ray)
    domain = load_domain(args.domain, **options)
    from genlm_lab.backend import load_model_by_name

    # A constraint nothing can satisfy ends a run with log_ml = -inf: the store says so per run.
    warnings.filterwarnings("ignore", message="every particle has weight zero")
    try:
        for model_name in args.model or ["default"]:
            llm = (
                None
                if cluster is not None
                else load_model_by_name(model_name, backend=args.backend)
            )
            for method in methods:
                _run_one(args, domain, method, llm, model_name, cluster, options)
    finally:
        if cluster is not None:
            cluster.shutdown()
    return 0


def _run_one(
    args: argparse.Namespace,
    domain: Any,
    method: Any,
    llm: Any,
    model_name: str,
    cluster: Any = None,
    options: dict | None = None,
) -> None:
    """Evaluate one method with one model into the store and print its line (`options`:
    what the domain was built with, for the Ray actors to build it the same way)."""
    from genlm_lab.eval.model_spec import method_model
    from genlm_lab.eval.runner import run_evaluation

    model = method_model(
        method,
        domain,
        args.domain,
        llm,
        model_name,
        cluster=cluster,
        backend=args.backend,
        domain_options=options,
    )
    started = time.perf_counter()
    results = asyncio.run(
        run_evaluation(
            domain.dataset,
            model,
            domain.evaluator,
            max_instances=args.limit or float("inf"),
            n_replicates=args.replicates,
            max_concurrency=args.concurrency,
            store=args.db,
            domain=domain.name,
            seed=args.seed,
            shard=args.shard,
            progress=True,
            cluster=cluster,
        )
    )
    wall = time.perf_counter() - started
    lo, hi = results["ci"]
    print(
        f"{method.label} on {domain.name} with {model_name}: weighted accuracy "
        f"{results['average_weighted_accuracy']:.3f} (95% CI {lo:.3f}-{hi:.3f}), "
        f"{plural(results['n_instances'], 'instance')}, {plural(results['n_errors'], 'error')}, "
        f"{wall:.1f} s of wall time -> {args.db}"
    )


def _cmd_report(args: argparse.Namespace) -> int:
    from genlm_lab.eval.report import store_report_html

    db = Path(args.db)
    out = Path(args.output) if args.output else db.with_suffix(".html")
    if out.resolve() == db.resolve():
        raise ValueError(f"the output {out} is the store itself: pass another path with -o")
    with _existing_store(args.db) as store:
        out.write_text(store_report_html(store), encoding="utf-8")
    print(f"wrote {out}")
    return 0


def _existing_store(path: str, migrate: bool = True):
    from genlm_lab.eval.store import ResultsStore

    if not Path(path).is_file():
        raise ValueError(f"no results store at {path}")
    return ResultsStore(path, migrate=migrate)


def _cmd_compare(args: argparse.Namespace) -> int:
    from genlm_lab.eval.paired import compare

    common = {k: getattr(args, k) for k in ("model", "method", "domain") if getattr(args, k)}
    with _existing_store(args.db) as store:
        print(compare(store, args.a, args.b, **common).summary())
    return 0


def _cmd_migrate(args: argparse.Namespace) -> int:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with _existing_store(args.db) as store:
            n = len(store.runs_frame())
    said = [str(w.message) for w in caught if "migrated" in str(w.message)]
    print(said[0] if said else f"{args.db}: already up to date ({n} runs)")
    return 0


def status_text(store: Any) -> str:
    """A store's runs counted per domain, method and model, by status, with mean accuracy."""
    runs = store.runs_frame()
    if runs.empty:
        return f"{store.path}: no runs"
    keys = ["domain", "method", "model"]
    counts = runs.pivot_table(index=keys, columns="status", values="run_id", aggfunc="count")
    counts = counts.fillna(0).astype(int)
    order = ["finished", "all_dead", "error"]
    for status in order:
        if status not in counts:
            counts[status] = 0
    counts = counts[order + sorted(c for c in counts.columns if c not in order)]
    counts["runs"] = counts.sum(axis=1)
    counts["accuracy"] = runs.groupby(keys)["weighted_accuracy"].mean().round(3)
    last = runs["finished_at"].max()
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(last))
    lines = [
        f"{store.path}: {len(runs)} runs, the last finished {when}",
        counts.reset_index().to_string(index=False),
    ]
    return "\n".join(lines)


def _cmd_status(args: argparse.Namespace) -> int:
    with _existing_store(args.db) as store:
        print(status_text(store))
    return 0


def _cmd_merge(args: argparse.Namespace) -> int:
    from genlm_lab.eval.store import ResultsStore

    missing = [p for p in args.inputs if not Path(p).is_file()]
    if missing:
        raise ValueError(f"no results store at {', '.join(missing)}")
    with ResultsStore(args.output) as store:
        for path in args.inputs:
            n = store.merge(path)
            print(f"{path}: {n} new runs", file=sys.stdout)
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    from genlm_lab.eval.store import ResultsStore

    if not Path(args.db).is_file():
        raise ValueError(f"no results store at {args.db}")
    import sqlite3

    with ResultsStore(args.db) as store:
        out = store.export(args.output, records=not args.no_records)
    copy = sqlite3.connect(f"file:{out}?mode=ro", uri=True)  # read as it is: not made a store
    try:
        n = copy.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
    finally:
        copy.close()
    print(f"{out}: {n} runs in one file (copy it alone)")
    return 0
