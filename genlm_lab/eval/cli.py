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
import difflib
import sys
import time
import warnings
from pathlib import Path
from typing import Any

from genlm_lab.eval.wording import plural

__all__ = ["add_eval_parser", "method_help", "parse_method"]

#: One line per method kind (`genlm_lab.eval.methods` has the full table).
KIND_HELP = {
    "base": "the LM alone, n plain samples",
    "lcd": "locally constrained decoding: LM x constraint renormalised per token (1 particle)",
    "sample_rerank": "n LM samples, weighted by the constraint (and critic) once finished",
    "smc": "SMC on LM x constraint, critic twisting, resampling below ess_threshold",
    "awrs_smc": "SMC with AWRS proposals: the constraint checked only on drawn tokens",
}
#: What each `--method` key sets.
KEY_HELP = {
    "n_particles": "particles (samples for base and sample_rerank)",
    "ess_threshold": "resample below this fraction of n_particles (smc, awrs_smc)",
    "max_tokens": "longest answer in tokens, EOS included",
    "seed": "the experiment's seed (each instance and replicate derives its own)",
    "name": "the label shown in tables (default: the kind)",
    "budget": "hand max_tokens to the constraint: a token after which the answer cannot "
    "end in time gets weight zero at once, not at the cut (budget=false: off)",
}


def method_help() -> str:
    """The method kinds and the keys `--method KIND:key=value,...` takes, with their defaults."""
    from genlm_lab.eval.methods import KINDS, Method

    lines = ["method kinds (--method KIND or KIND:key=value,...):"]
    lines += [f"  {kind:<14} {KIND_HELP.get(kind, '')}" for kind in KINDS]
    lines.append("keys (default):")
    for key, field in Method.model_fields.items():
        if key == "kind":
            continue
        default = "" if field.default is None else f" ({field.default})"
        lines.append(f"  {key + default:<19} {KEY_HELP.get(key, '')}")
    lines.append("e.g. --method awrs_smc:n_particles=10,max_tokens=64 --method lcd")
    return "\n".join(lines)


class _HelpWithMethods(argparse._HelpAction):
    """`eval run --help`, ending with the method kinds and keys (read only when asked:
    the methods module imports torch, which every other command can do without)."""

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        parser.epilog = method_help()
        super().__call__(parser, *args, **kwargs)


def _valid_keys() -> list[str]:
    from genlm_lab.eval.methods import Method

    return [k for k in Method.model_fields if k != "kind"]


def parse_method(text: str, **defaults: Any) -> Any:
    """`Method.parse` with errors that name the valid kinds, keys and what was wrong.

    Raises:
        ValueError: "bad method 'awrs_smc:particles=3': unknown key 'particles' (did you
            mean n_particles?); valid keys: n_particles, ...".
    """
    from genlm_lab.eval.methods import KINDS, Method

    kind, _, rest = text.partition(":")
    kind = kind.strip()
    keys = ", ".join(_valid_keys())
    if kind not in KINDS:
        near = difflib.get_close_matches(kind, KINDS, n=1)
        hint = f" (did you mean {near[0]}?)" if near else ""
        raise ValueError(
            f"bad method {text!r}: unknown kind {kind!r}{hint}; kinds: {', '.join(KINDS)}"
        )
    fields: dict[str, Any] = {}
    for item in filter(None, (s.strip() for s in rest.split(","))):
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq:
            raise ValueError(
                f"bad method {text!r}: {item!r} must look like key=value; keys: {keys}"
            )
        if key not in _valid_keys():
            near = difflib.get_close_matches(key, _valid_keys(), n=1)
            hint = f" (did you mean {near[0]}?)" if near else ""
            raise ValueError(f"bad method {text!r}: unknown key {key!r}{hint}; valid keys: {keys}")
        fields[key] = value.strip()
    try:
        return Method.parse(text, **defaults)
    except ValueError:
        pass
    from pydantic import ValidationError

    try:
        Method(kind=kind, **{**defaults, **fields})
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(x) for x in e['loc'])}={e.get('input')!r}: {e['msg'].lower()}"
            for e in exc.errors()
        )
        raise ValueError(f"bad method {text!r}: {problems}") from None
    raise ValueError(f"bad method {text!r}")  # pragma: no cover - parse and the model agree


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
    run.add_argument("-h", "--help", action=_HelpWithMethods, help="show this help and exit")
    run.add_argument("domain", choices=sorted(DOMAINS))
    run.add_argument(
        "--method",
        action="append",
        required=True,
        help="KIND[:key=value,...], e.g. awrs_smc:n_particles=5 (repeat for several; "
        "kinds and keys below)",
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
    run.add_argument("--replicates", type=int, default=1)
    run.add_argument("--concurrency", type=int, default=8, help="instances in flight at once")
    run.add_argument("--shard", help="i/n: run only shard i of n (Slurm arrays, Ray tasks)")
    run.add_argument("--seed", type=int, default=0)
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

    defaults = {"seed": args.seed}
    if args.max_tokens is not None:
        defaults["max_tokens"] = args.max_tokens
    methods = [parse_method(text, **defaults) for text in args.method]
    parse_shard(args.shard)  # fail before loading a model
    if args.limit is not None and args.limit < 1:
        raise ValueError(f"--limit must be >= 1, got {args.limit}")
    cluster = None
    if args.ray is not None:  # the actors load the models; this process only schedules and stores
        from genlm_lab.eval.cluster import RayCluster, require_ray

        require_ray()
        cluster = RayCluster(args.ray)
    domain = load_domain(args.domain)
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
                _run_one(args, domain, method, llm, model_name, cluster)
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
) -> None:
    """Evaluate one method with one model into the store and print its line."""
    from genlm_lab.eval.runner import run_evaluation

    if cluster is None:
        model = method.adaptor(domain, llm, model_name=model_name)
    else:
        from genlm_lab.eval.cluster import ModelSpec

        model = ModelSpec.method(method, args.domain, model_name, backend=args.backend)
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
        out = store.export(args.output)
    copy = sqlite3.connect(f"file:{out}?mode=ro", uri=True)  # read as it is: not made a store
    try:
        n = copy.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
    finally:
        copy.close()
    print(f"{out}: {n} runs in one file (copy it alone)")
    return 0
