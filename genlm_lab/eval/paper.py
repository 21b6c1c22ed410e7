"""The papers' table on the workbench: a preset's methods on the five domains, one store, one table.

`run_paper(store)` runs every method of a preset (`genlm_lab.eval.presets`, the AWRS
paper's by default) on each domain's first `limit` instances with each model, into one
results store: a run already stored is reused, so an interrupted run resumes where it
stopped. `paper_table(store)` reads the store back as the paper prints its table: one
row per (model, method), per domain the weighted accuracy with its 95% interval
(`summarize`'s Wilson interval over instances) and the wall time per run (the method's
wall time over its runs: one instance, one replicate). `write_paper_table` writes it as
Markdown, HTML and the accuracy-versus-cost figure. `genlm-lab eval paper` is the
command line (`genlm_lab.eval.cli_paper`).
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Sequence
from html import escape
from pathlib import Path
from typing import Any

from genlm_lab.eval.presets import PAPER_DOMAINS, Preset, preset
from genlm_lab.eval.scores import score_name
from genlm_lab.eval.summary import summarize, summary_markdown
from genlm_lab.eval.wording import plural, readable

__all__ = ["paper_table", "run_paper", "write_paper_table"]


def _domains(names: Sequence[str], chosen: Preset) -> list[Any]:
    """Every domain built (with the preset's options) before any model loads, so a missing
    extra fails at once."""
    from genlm_lab.eval.domains import load_domain

    built = []
    for name in names:
        try:
            built.append(load_domain(name, **chosen.domain_options.get(name, {})))
        except ImportError as exc:
            raise ImportError(f"the {name} domain needs {exc.name or exc}: {exc}") from exc
    return built


async def run_paper(
    store: Any,
    *,
    preset_name: str = "awrs-colm-2025",
    limit: int | None = None,
    models: Sequence[str] = ("default",),
    domains: Sequence[str] = PAPER_DOMAINS,
    backend: str | None = None,
    cluster: Any = None,
    concurrency: int = 8,
    progress: bool = True,
    max_tokens: int | None = None,
    load_model: Callable[[str], Any] | None = None,
    log: Callable[[str], None] | None = print,
) -> Any:
    """Run a preset's methods on the domains into `store`; return `paper_table(store)`.

    Args:
        store: a `ResultsStore` or a path (created if missing).
        preset_name: the preset (`genlm_lab.eval.presets.PRESETS`).
        limit: the first this many instances of each domain (None: all).
        models: model names (`load_model_by_name`), each a row block of the table.
        domains: the domains, in table order.
        backend: the models' backend ("hf", "vllm"; None: `load_model_by_name`'s choice).
        cluster: a `RayCluster`: the runs go to its actors (`eval run --ray`).
        concurrency: (instance, replicate) tasks in flight per method.
        progress: a tqdm bar per (domain, method).
        max_tokens: every method's `max_tokens` on every domain, in place of the preset's
            per-domain limits (a quick look; the table is then not the paper's settings).
        load_model: name -> LM (default `load_model_by_name`); tests pass a tiny one.
        log: where a line per finished (domain, method) goes (None: nowhere).

    Raises:
        ValueError: for an unknown preset or domain, or `limit` < 1.
        ImportError: a domain whose optional dependencies are missing (named).
    """
    from genlm_lab.eval.model_spec import method_model
    from genlm_lab.eval.runner import run_evaluation
    from genlm_lab.eval.store import ResultsStore

    chosen = preset(preset_name)
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be >= 1, got {limit}")
    built = _domains(domains, chosen)
    if load_model is None:
        from genlm_lab.backend import load_model_by_name

        def load_model(name: str) -> Any:
            return load_model_by_name(name, backend=backend)

    owned = not isinstance(store, ResultsStore)
    handle = ResultsStore(store) if owned else store
    try:
        with warnings.catch_warnings():  # a run whose particles all die is stored as such
            warnings.filterwarnings("ignore", message="every particle has weight zero")
            for model_name in models:
                llm = None if cluster is not None else load_model(model_name)
                for name, domain in zip(domains, built, strict=True):
                    for method in chosen.methods_for(name):
                        if max_tokens is not None:
                            method = method.model_copy(update={"max_tokens": max_tokens})
                        started = time.perf_counter()
                        results = await run_evaluation(
                            domain.dataset,
                            method_model(
                                method,
                                domain,
                                name,
                                llm,
                                model_name,
                                cluster=cluster,
                                backend=backend,
                                domain_options=dict(chosen.domain_options.get(name, {})),
                            ),
                            domain.evaluator,
                            max_instances=limit or math.inf,
                            n_replicates=chosen.replicates,
                            max_concurrency=concurrency,
                            store=handle,
                            domain=domain.name,
                            seed=chosen.seed,
                            progress=progress,
                            cluster=cluster,
                        )
                        if log is not None:
                            log(_line(method.label, name, model_name, results, started))
        return paper_table(handle, chosen)
    finally:
        if owned:
            handle.close()


def _line(label: str, domain: str, model: str, results: dict, started: float) -> str:
    lo, hi = results["ci"]
    return (
        f"{label} on {domain} with {model}: {results['average_weighted_accuracy']:.3f} "
        f"[{lo:.3f}, {hi:.3f}], {plural(results['n_instances'], 'instance')}, "
        f"{plural(results['n_errors'], 'error')}, {time.perf_counter() - started:.1f} s"
    )


def paper_table(store: Any, chosen: Preset | str = "awrs-colm-2025", digits: int = 3) -> Any:
    """The store's runs as the paper's table: rows (model, method), per domain accuracy and wall.

    Args:
        store: a `ResultsStore`, a runs DataFrame or a `summarize` DataFrame.
        chosen: the preset (or its name): its methods give the row order, and only
            its methods' rows are shown.
        digits: decimals of the accuracies.

    Returns:
        A DataFrame: columns model, method, then per domain "<domain> accuracy [95% CI]"
        (or the domain's graded score: "molecular_synthesis QED [95% CI]", the expected
        QED), "<domain> s/run" and "<domain> n" (instances); "n/a" where nothing ran.
    """
    import pandas as pd

    chosen = preset(chosen) if isinstance(chosen, str) else chosen
    summary = store if _is_summary(store) else summarize(store)
    labels = [m.label for m in chosen.methods]
    summary = summary[summary["method"].isin(labels)]
    present = [d for d in PAPER_DOMAINS if d in set(summary["domain"])]
    present += sorted(set(summary["domain"]) - set(present))
    rows = []
    for model in sorted(summary["model"].unique()):
        for label in labels:
            row: dict[str, Any] = {"model": model, "method": label}
            for domain in present:
                hit = summary[
                    (summary["model"] == model)
                    & (summary["method"] == label)
                    & (summary["domain"] == domain)
                ]
                row.update(_cells(domain, hit.iloc[0] if len(hit) else None, digits))
            rows.append(row)
    return pd.DataFrame(rows)


def _is_summary(frame: Any) -> bool:
    return hasattr(frame, "columns") and "ci_low" in frame.columns


def _cells(domain: str, r: Any, digits: int) -> dict[str, Any]:
    if r is None or r["weighted_accuracy"] != r["weighted_accuracy"]:
        acc, wall, n = "n/a", "n/a", 0 if r is None else int(r["n_instances"])
    else:
        acc = f"{r['weighted_accuracy']:.{digits}f} [{r['ci_low']:.{digits}f}, {r['ci_high']:.{digits}f}]"
        wall, n = readable(float(r["wall_per_run"]), 3), int(r["n_instances"])
    score = f"{domain} {score_name(domain)} [95% CI]"
    return {score: acc, f"{domain} s/run": wall, f"{domain} n": n}


def write_paper_table(
    store: Any, out: str | Path, chosen: Preset | str = "awrs-colm-2025"
) -> dict[str, Path]:
    """Write the table as `out`.md and `out`.html and the accuracy-cost figure as `out`.png.

    `store` is a `ResultsStore`, its path, or a runs DataFrame.

    Returns:
        {"markdown": path, "html": path, "figure": path}.
    """
    from genlm_lab.eval.plot import plot_accuracy_cost

    chosen = preset(chosen) if isinstance(chosen, str) else chosen
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(store, str | Path):
        from genlm_lab.eval.store import ResultsStore

        with ResultsStore(store) as opened:
            summary = summarize(opened)
    else:
        summary = summarize(store)
    table = paper_table(summary, chosen)
    note = (
        f"Preset {chosen.name}: {chosen.replicates} replicates per instance; accuracy is the "
        "weighted accuracy (for molecular synthesis the expected QED of the molecule, 0 for "
        "an invalid one) with its 95% Wilson interval over instances; s/run is the "
        "method's wall time over its runs (one instance, one replicate)."
    )
    paths = {
        "markdown": out.with_suffix(".md"),
        "html": out.with_suffix(".html"),
        "figure": out.with_suffix(".png"),
    }
    paths["markdown"].write_text(f"{note}\n\n{summary_markdown(table)}", encoding="utf-8")
    html = table.to_html(index=False, escape=True, border=0)
    paths["html"].write_text(
        f"<!doctype html><meta charset='utf-8'><title>{escape(chosen.name)}</title>"
        f"<p>{escape(note)}</p>{html}\n",
        encoding="utf-8",
    )
    shown = summary[summary["method"].isin([m.label for m in chosen.methods])]
    plot_accuracy_cost(shown).savefig(paths["figure"], dpi=120)
    return paths
