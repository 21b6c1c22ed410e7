"""`genlm-lab eval paper`: a preset's methods on the papers' five domains, into a store and a table.

`eval paper [--db STORE] [--out PREFIX] [--limit N] [--model M ...] [--ray [ADDRESS]]`
runs `genlm_lab.eval.paper.run_paper` (resumable: started again with the same
arguments it reuses every stored run) and writes PREFIX.md, PREFIX.html and
PREFIX.png (`write_paper_table`), then prints the table.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

__all__ = ["add_paper_parser"]


def add_paper_parser(esub: argparse._SubParsersAction) -> None:
    """Register `eval paper` under `genlm-lab eval`."""
    from genlm_lab.eval.presets import PAPER_DOMAINS, PRESETS

    paper = esub.add_parser(
        "paper",
        help="run a preset (the AWRS paper's five methods) on the five domains; write the table",
    )
    paper.add_argument("--preset", default="awrs-colm-2025", choices=sorted(PRESETS))
    paper.add_argument("--db", default="paper.sqlite", help="the results store (paper.sqlite)")
    paper.add_argument(
        "--out", help="the table's path without suffix (default: the store's, plus -table)"
    )
    paper.add_argument("--limit", type=int, help="the first N instances of each domain")
    paper.add_argument(
        "--model", action="append", help="model name (repeatable; default: 'default', SmolLM2)"
    )
    paper.add_argument(
        "--domain",
        action="append",
        choices=PAPER_DOMAINS,
        help="only these domains (repeatable; default: all five)",
    )
    paper.add_argument(
        "--max-tokens",
        type=int,
        help="every method's max_tokens, in place of the preset's per-domain limits",
    )
    paper.add_argument("--backend", choices=["hf", "vllm"], help="the models' backend")
    paper.add_argument("--concurrency", type=int, default=8, help="instances in flight at once")
    paper.add_argument(
        "--ray",
        nargs="?",
        const="local",
        metavar="ADDRESS",
        help="run on Ray actors, as `eval run --ray` does (needs genlm-lab[ray])",
    )
    paper.set_defaults(func=_cmd_paper)


def _cmd_paper(args: argparse.Namespace) -> int:
    from genlm_lab.eval.paper import run_paper, write_paper_table
    from genlm_lab.eval.presets import PAPER_DOMAINS, preset
    from genlm_lab.eval.summary import summary_markdown

    if args.limit is not None and args.limit < 1:
        raise ValueError(f"--limit must be >= 1, got {args.limit}")
    print(preset(args.preset).describe())
    cluster = None
    if args.ray is not None:
        from genlm_lab.eval.cluster import RayCluster, require_ray

        require_ray()
        cluster = RayCluster(args.ray)
    try:
        table = asyncio.run(
            run_paper(
                args.db,
                preset_name=args.preset,
                limit=args.limit,
                models=args.model or ["default"],
                domains=args.domain or PAPER_DOMAINS,
                backend=args.backend,
                cluster=cluster,
                concurrency=args.concurrency,
                max_tokens=args.max_tokens,
            )
        )
    finally:
        if cluster is not None:
            cluster.shutdown()
    db = Path(args.db)
    out = Path(args.out) if args.out else db.with_name(db.stem + "-table")
    paths = write_paper_table(args.db, out, args.preset)
    print(summary_markdown(table))
    print("wrote " + ", ".join(str(p) for p in paths.values()))
    return 0
