"""Generating JSON under real-world schemas on the embedded model: ours vs llguidance's schema-order mask.

The panel: object schemas with required keys taken from the SchemaStore
schemas that check-jsonschema vendors (`check_jsonschema/builtin_schemas/
vendor/`, each file's licence in `vendor/licenses/`, listed in SOURCES
below): each file's root and its definitions that are objects with
`properties` and `required`, with the file's definitions kept so `$ref`s
resolve, at most PER_SOURCE per file. A schema joins the panel when our
`JsonSchema` compiles it without falling back and a shortest document built
from it (required keys only, smallest values) passes jsonschema.

Each schema is put in the prompt (compact, cut at PROMPT_CHARS) and the
model (SmolLM2-135M, "default") writes a document with 4 particles and a
budget of twice the shortest document's tokens plus 40 (the issue's rule):

- `default`: AWRS-SMC with our `JsonSchema` (its defaults), budgets on (SMC's
  default: a token is refused where the document provably can no longer end
  within the tokens left; sound, see `constraint/budget/`);
- `off`: the same with `budget=False` (particles are cut at max_tokens);
- `direct`: direct-sampler SMC with our `JsonSchema`, budgets on;
- `greedy`: AWRS-SMC with our `JsonSchema` inside `WithinBudget(...,
  greedy=True)` (the run's `max_tokens`), SMC's budget off: a token is refused
  once the schema's greedy `finish`, counted in tokens, no longer fits (not
  exact: it may set aside what a shorter completion ends in time);
- `llg`: AWRS-SMC with llguidance's own mask of the schema (keys in the
  schema's order, compact, `lenient`), no completion check, no budget: what
  outlines, xgrammar and llguidance generate;
- `xgr`: AWRS-SMC with xgrammar 0.2.8's mask of the schema (compiled for the
  tokenizer, compact), no completion check, no budget, in `llg`'s place
  (`_xgrammar_json.py`);
- `outlines`: the same with outlines 1.3.3's mask of the schema (outlines-core's
  regex and token automaton, its default whitespace `[ ]?`; built under a
  memory and time cap, `_outlines_json.py`);
- `gc`: genlm-control 0.4.1's `JsonSchema` with AWRS-SMC, in a child process
  capped at `--their-cap` seconds (`_genlm_control_json.py`); `gc-ws` the same
  with its leading-whitespace regex grouped (as shipped, a first token "\\n\\n"
  is a dead end under an object schema). `--theirs N`: on the first N schemas.

Per schema and method: solved (>= 1 finished document valid under
jsonschema), the posterior mass on valid documents, the particles cut at
max_tokens (the budget, not the mask, failed them), mean tokens, wall time,
and wall per particle-step (what a step costs: mask, budget checks, forward).
The mask cost: along the shortest document's tokens, our coerced mask per
step (llguidance's mask of the relaxed schema and the key rules) against the
same llguidance mask alone (a fresh engine each, no cache hits).

Run: `python benchmarks/bench_json_gen.py [--quick] [--methods ...] [--theirs N]
[--set key=value] [--json FILE] [--merge FILE]`; `--quick` takes 10 schemas;
`--set key_order=schema --set max_whitespace=0` passes options to our
`JsonSchema` (how the defaults were chosen); `--merge` adds the columns an
earlier run saved with `--json` (the foreign ones are slow: run them once).
Rows go to RESULTS.md's bench_json_gen section (`_json_gen_report.py`); a
`--quick` run's to a section of its own, so it does not replace the whole panel's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import statistics
import time
from pathlib import Path
from typing import Any

import _genlm_control_json
import _json_gen_report as report
import _outlines_json
import _xgrammar_json

HERE = Path(__file__).resolve().parent
os.environ.setdefault("HF_HUB_OFFLINE", "1")

PER_SOURCE = 5
MAX_SCHEMA_CHARS = 2500
PROMPT_CHARS = 900
N_PARTICLES = 4
SOURCES = {  # vendored file -> its licence (vendor/licenses/LICENSE.<x>, SchemaStore's by default)
    "azure-pipelines": "MIT (Microsoft)",
    "bitbucket-pipelines": "MIT (Atlassian)",
    "buildkite": "MIT (Buildkite)",
    "changie": "MIT (Ronnie Smith)",
    "citation-file-format": "CC-BY-4.0",
    "compose-spec": "Apache-2.0",
    "gitlab-ci": "MIT (GitLab)",
    "meltano": "MIT (Arch Data)",
    "readthedocs": "MIT (Read the Docs)",
    "renovate": "AGPL-3.0 (Renovate)",
    "snapcraft": "GPL-3.0 (Canonical)",
    "taskfile": "MIT (Andrey Nering)",
}
SKIP = {"drone-ci"}  # a $ref to a remote document


def _vendor() -> Path:
    import check_jsonschema.builtin_schemas.vendor as vendor

    return Path(vendor.__file__).parent


def minimal(node: Any, root: dict, depth: int = 0) -> Any:
    """A small value for `node`: required keys only, smallest values (None if none is found)."""
    if depth > 12 or node is False:
        return None
    if not isinstance(node, dict) or node is True:
        return {}
    if "$ref" in node and isinstance(node["$ref"], str) and node["$ref"].startswith("#"):
        target: Any = root
        for part in node["$ref"][2:].split("/") if node["$ref"] != "#" else []:
            target = target.get(part.replace("~1", "/").replace("~0", "~"), {})
        return minimal(target, root, depth + 1)
    if "const" in node:
        return node["const"]
    if node.get("enum"):
        return node["enum"][0]
    for key in ("anyOf", "oneOf"):
        if node.get(key):
            for sub in node[key]:
                merged = {**{k: v for k, v in node.items() if k != key}, **sub}
                value = minimal(merged, root, depth + 1)
                if value is not None:
                    return value
    if node.get("allOf"):
        merged = {k: v for k, v in node.items() if k != "allOf"}
        for sub in node["allOf"]:
            if isinstance(sub, dict):
                merged = {**merged, **sub}
        return minimal(merged, root, depth + 1)
    kind = node.get("type")
    kind = kind[0] if isinstance(kind, list) and kind else kind
    if kind == "object" or (kind is None and ("properties" in node or "required" in node)):
        props = node.get("properties", {})
        return {k: minimal(props.get(k, {}), root, depth + 1) for k in node.get("required", [])}
    if kind == "array":
        n = node.get("minItems", 0)
        return [minimal(node.get("items", {}), root, depth + 1) for _ in range(n)]
    if kind == "string":
        return "a" * node.get("minLength", 0)
    if kind in ("integer", "number"):
        return max(0, node.get("minimum", 0))
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return {}


def _candidates(name: str, schema: dict) -> list[tuple[str, dict, dict]]:
    """(id, standalone schema, the part shown in the prompt) for the root and each definition."""
    container = "$defs" if "$defs" in schema else "definitions"
    defs = schema.get(container) or {}
    out = []
    for key, sub in [("(root)", schema), *sorted(defs.items())]:
        if not isinstance(sub, dict) or not sub.get("required") or "properties" not in sub:
            continue
        shown = {k: v for k, v in sub.items() if k not in ("$defs", "definitions")}
        standalone = {**shown, container: defs} if defs else shown
        if "$schema" in schema:
            standalone["$schema"] = schema["$schema"]
        out.append((f"{name}:{key}", standalone, shown))
    return out


def build_panel(limit: int | None = None) -> list[dict]:
    """The panel's schemas, each with its source, licence, prompt text and shortest document."""
    from genlm_lab.control import JsonSchema

    panel = []
    for path in sorted(_vendor().glob("*.json")):
        if path.stem in SKIP:
            continue
        schema = json.loads(path.read_text())
        taken = 0
        for ident, standalone, shown in _candidates(path.stem, schema):
            text = json.dumps(shown, separators=(",", ":"))
            if len(text) > MAX_SCHEMA_CHARS or taken >= PER_SOURCE:
                continue
            try:
                js = JsonSchema(standalone)
            except ValueError:
                continue
            if any(r["keyword"] == "(all)" for r in js.coverage):
                continue
            doc = minimal(standalone, standalone)
            shortest = json.dumps(doc, ensure_ascii=False)
            if doc is None or not js.validate(shortest):
                continue
            panel.append({
                "id": ident, "schema": standalone, "prompt_schema": text[:PROMPT_CHARS],
                "shortest": shortest, "licence": SOURCES.get(path.stem, "Apache-2.0 (SchemaStore)"),
            })  # fmt: skip
            taken += 1
    return panel[:limit] if limit else panel


def prompt_for(entry: dict) -> str:
    return (
        "Write one JSON document valid under this JSON schema.\n"
        f"Schema: {entry['prompt_schema']}\nJSON document:"
    )


def _summary(sequences, validate, wall: float, budget: int) -> dict:
    """solved, valid mass, cut particles, mean tokens of one run."""
    from genlm_lab.control.core.tokens import join_bytes

    weights = sequences.normalized_weights
    valid_mass = finished_mass = 0.0
    solved = False
    for context, done, w in zip(sequences.contexts, sequences.finished, weights, strict=True):
        if not done or w == 0:
            continue
        finished_mass += w
        text = join_bytes(context[:-1])
        if validate(text):
            valid_mass += w
            solved = True
    deaths = getattr(sequences, "deaths", None)
    reasons = [] if deaths is None or not len(deaths) else list(deaths.reason)
    cut = sum(str(r).startswith("cut at max_tokens") for r in reasons)
    died = len(reasons) - cut
    tokens = statistics.mean(len(c) for c in sequences.contexts)
    return {
        "solved": solved,
        "valid_mass": valid_mass / finished_mass if finished_mass else float("nan"),
        "cut": int(cut), "died": int(died), "tokens": tokens, "wall": wall,
    }  # fmt: skip


async def run_one(llm, entry: dict, method: str, options: dict, budget: int, seed: int) -> dict:
    from genlm_lab.control import AWRS, SMC, JsonSchema, WithinBudget, direct_token_sampler
    from genlm_lab.control.constraint.llg.grammar import GrammarPotential

    checker = JsonSchema(entry["schema"])
    if method in MASKS:  # xgrammar's or outlines' mask, used as llguidance's is in `llg`
        try:
            constraint = MASKS[method][0](entry["schema"], llm)
        except Exception as error:  # a schema the tool does not compile: measured nothing
            return {"error": f"{type(error).__name__}: {error}"[:160], "wall": math.nan}
    elif method == "llg":
        import llguidance

        grammar = llguidance.LLMatcher.grammar_from_json_schema(
            entry["schema"], overrides={"whitespace_flexible": False, "lenient": True}
        )
        potential = GrammarPotential(grammar, entry["id"], "JSON schema")
    else:
        potential = JsonSchema(entry["schema"], **options)
    if method == "greedy":
        constraint = WithinBudget(potential, llm, budget, greedy=True)
    elif method not in MASKS:
        constraint = potential.coerce(llm, f=b"".join)
    sampler = (
        direct_token_sampler(llm * constraint) if method == "direct" else AWRS(llm, constraint)
    )
    start = time.perf_counter()
    smc = SMC(sampler)
    sequences = await smc(
        n_particles=N_PARTICLES,
        ess_threshold=0.5,
        max_tokens=budget,
        seed=seed,
        budget=method in ("default", "direct"),
    )
    row = _summary(sequences, checker.validate, time.perf_counter() - start, budget)
    if method in MASKS:  # charged to no column's wall, as our grammar's build is not
        row["compile"] = constraint.compile_s
    steps = sum(
        1 for s in (sequences.record.steps if sequences.record else []) for e in s.get("extras", []) if e
    )  # fmt: skip
    row["per_step"] = row["wall"] / max(steps, 1)
    if method == "greedy":
        row["budget_stats"] = dict(constraint.stats)
    elif smc.budget_stats:  # every factor's (and the joint check's) counts, guide's aside
        row["budget_stats"] = {
            key: sum(
                counts.get(key, 0) for name, counts in smc.budget_stats.items() if name != "guide"
            )
            for key in ("kept", "refused", "unproven")
        }
    await constraint.cleanup()
    return row


def mask_cost(llm, entry: dict, options: dict) -> tuple[float, float]:
    """Median seconds per step along the shortest document: ours, llguidance's mask alone."""
    from genlm_lab.control import JsonSchema
    from genlm_lab.control.constraint.llg.grammar import TokenConstraint

    js = JsonSchema(entry["schema"], **options)
    ours = js.coerce(llm, f=b"".join)
    bare = TokenConstraint(js, llm.vocab, llm.eos)  # the same llguidance grammar, no key rules
    ids = llm.model.tokenizer.encode(entry["shortest"], add_special_tokens=False)
    position = {int(t.token_id): i for i, t in enumerate(llm.vocab)}
    contexts = [tuple(position[i] for i in ids[:k]) for k in range(len(ids))]
    times: dict[str, list[float]] = {"ours": [], "bare": []}
    for context in contexts:
        for name, engine in (("bare", bare.engine), ("ours", ours.engine)):
            start = time.perf_counter()
            engine.bits([context])
            times[name].append(time.perf_counter() - start)
    return statistics.median(times["ours"]), statistics.median(times["bare"])


def _option(text: str) -> tuple[str, Any]:
    key, _, value = text.partition("=")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


FOREIGN = ("gc", "gc-ws")  # run in a child process each (genlm-control), not through run_one
MASKS = {  # other tools' masks, used as AWRS's condition: (the Potential, its mask_cost)
    "xgr": (_xgrammar_json.XgrammarMask, _xgrammar_json.mask_cost),
    "outlines": (_outlines_json.OutlinesMask, _outlines_json.mask_cost),
}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10 schemas")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--start", type=int, default=0, help="skip the panel's first N schemas")
    parser.add_argument("--methods", default="default,off,greedy,llg")
    parser.add_argument("--theirs", type=int, default=None,
                        help="genlm-control (gc, gc-ws) on the first N only; --theirs N alone "
                        "adds gc")  # fmt: skip
    parser.add_argument("--their-cap", type=float, default=120.0, help="s per schema and run")
    parser.add_argument("--set", action="append", default=[], type=_option)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--json", default=None, help="also write the rows to this file")
    parser.add_argument("--merge", action="append", default=[],
                        help="a --json file of an earlier run: its columns this run lacks join "
                        "the table (same schema ids)")  # fmt: skip
    args = parser.parse_args()
    options = dict(args.set)
    methods = args.methods.split(",")
    if args.theirs and not any(m in FOREIGN for m in methods):
        methods.append("gc")
    if "xgr" in methods:
        import xgrammar  # noqa: F401  (fail before the model loads: `bash scripts/setup.sh bench`)
    if "outlines" in methods:
        import outlines  # noqa: F401  (the same)

    from genlm_lab.backend import load_model_by_name
    from genlm_lab.control import PromptedLLM

    began = time.perf_counter()
    panel = build_panel(10 if args.quick else args.limit)[args.start :]
    print(f"{len(panel)} schemas", flush=True)
    lm = load_model_by_name("default")
    rows = []
    for k, entry in enumerate(panel):
        llm = PromptedLLM(lm, prompt=prompt_for(entry))
        shortest = len(lm.tokenizer.encode(entry["shortest"], add_special_tokens=False))
        budget = 2 * shortest + 40
        row: dict[str, Any] = {"id": entry["id"], "licence": entry["licence"], "budget": budget}
        for method in methods:
            if method in FOREIGN:
                if args.theirs is None or k < args.theirs:
                    row[method] = _genlm_control_json.run(
                        entry, prompt_for(entry), budget, args.their_cap, args.seed,
                        fix=method == "gc-ws",
                    )  # fmt: skip
                continue
            if hasattr(lm, "clear_cache"):  # no method reads logits another one computed
                lm.clear_cache()
            row[method] = await run_one(llm, entry, method, options, budget, args.seed)
        row["mask_ours"], row["mask_bare"] = mask_cost(llm, entry, options)
        for m in (m for m in MASKS if m in methods and "error" not in row[m]):
            row[m]["mask"], row[m]["mask_native"] = MASKS[m][1](
                entry["schema"], llm, entry["shortest"]
            )
        rows.append(row)
        print(report.line(row, methods), flush=True)
        if args.json:  # after each schema: a cut-short run keeps what it measured
            Path(args.json).write_text(json.dumps(rows, indent=1, default=str))
    for path in args.merge:
        methods += report.merge(rows, json.loads(Path(path).read_text()), methods)
    elapsed = time.perf_counter() - began
    title = "bench_json_gen --quick" if args.quick else "bench_json_gen"  # its own section
    text = report.render(rows, methods, options, elapsed, PROMPT_CHARS, N_PARTICLES, args.seed,
                         title)  # fmt: skip
    print(text)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1, default=str))
    if not args.no_write:
        report.write_section(text, title)


if __name__ == "__main__":
    asyncio.run(main())
