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
  within the tokens left; sound, see `constraint/finish_distance/`);
- `off`: the same with `budget=False` (particles are cut at max_tokens);
- `direct`: direct-sampler SMC with our `JsonSchema`, budgets on;
- `greedy`: AWRS-SMC with our `JsonSchema` inside `WithinBudget(...,
  greedy=True)` (the run's `max_tokens`), SMC's budget off: a token is refused
  once the schema's greedy `finish`, counted in tokens, no longer fits (not
  exact: it may set aside what a shorter completion ends in time);
- `llg`: AWRS-SMC with llguidance's own mask of the schema (keys in the
  schema's order, compact, `lenient`), no completion check, no budget: what
  outlines, xgrammar and llguidance generate;
- `genlm-control` (with `--theirs N`, the first N schemas): genlm-control
  0.4.1's `JsonSchema` with AWRS-SMC, in a child process capped at
  `--their-cap` seconds.

Per schema and method: solved (>= 1 finished document valid under
jsonschema), the posterior mass on valid documents, the particles cut at
max_tokens (the budget, not the mask, failed them), mean tokens, wall time,
and wall per particle-step (what a step costs: mask, budget checks, forward).
The mask cost: along the shortest document's tokens, our coerced mask per
step (llguidance's mask of the relaxed schema and the key rules) against the
same llguidance mask alone (a fresh engine each, no cache hits).

Run: `python benchmarks/bench_json_gen.py [--quick] [--theirs N] [--set key=value]`;
`--quick` takes 10 schemas; `--set key_order=schema --set max_whitespace=0`
passes options to our `JsonSchema` (how the defaults were chosen).
Rows go to RESULTS.md's bench_json_gen section.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

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
    if method == "llg":
        import llguidance

        grammar = llguidance.LLMatcher.grammar_from_json_schema(
            entry["schema"], overrides={"whitespace_flexible": False, "lenient": True}
        )
        potential = GrammarPotential(grammar, entry["id"], "JSON schema")
    else:
        potential = JsonSchema(entry["schema"], **options)
    if method == "greedy":
        constraint = WithinBudget(potential, llm, budget, greedy=True)
    else:
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
    steps = sum(
        1 for s in (sequences.record.steps if sequences.record else []) for e in s.get("extras", []) if e
    )  # fmt: skip
    row["per_step"] = row["wall"] / max(steps, 1)
    if method == "greedy":
        row["budget_stats"] = dict(constraint.stats)
    elif smc.budget_stats:
        row["budget_stats"] = next(iter(smc.budget_stats.values()))
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


def _theirs(entry: dict, budget: int, cap: float) -> dict:
    """genlm-control 0.4.1's JsonSchema with AWRS-SMC, in a child process capped at `cap` s."""
    code = (
        "import asyncio, json, sys, time\n"
        "from genlm.control import PromptedLLM, JsonSchema, AWRS\n"
        "e = json.loads(sys.stdin.read())\n"
        "llm = PromptedLLM.from_name(e['model_path'], backend='hf')\n"
        "llm.set_prompt_from_str(e['prompt'])\n"
        "js = JsonSchema(e['schema']).coerce(llm, f=b''.join)\n"
        "async def main():\n"
        "    t = time.perf_counter()\n"
        "    s = await AWRS(llm, js).smc(n_particles=4, ess_threshold=0.5, "
        "max_tokens=e['budget'])\n"
        "    print(json.dumps({'posterior': dict(s.decoded_posterior), "
        "'wall': time.perf_counter() - t}))\n"
        "asyncio.run(main())\n"
    )
    from genlm_lab.backend.models import local_model_dir

    path = str(local_model_dir("default"))  # the embedded weights' folder, no model loaded
    payload = json.dumps({**entry, "prompt": prompt_for(entry), "budget": budget,
                          "model_path": path})  # fmt: skip
    start = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-c", code], input=payload, capture_output=True,
                              text=True, timeout=cap)  # fmt: skip
    except subprocess.TimeoutExpired:
        return {"timeout": True, "wall": cap, "cap": cap}
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1][:100] if done.stderr else "failed",
                "wall": time.perf_counter() - start}  # fmt: skip
    found = json.loads(done.stdout.strip().splitlines()[-1])
    return {**found, "wall": time.perf_counter() - start, "cap": cap}


def _option(text: str) -> tuple[str, Any]:
    key, _, value = text.partition("=")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10 schemas")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--start", type=int, default=0, help="skip the panel's first N schemas")
    parser.add_argument("--methods", default="default,off,greedy,llg")
    parser.add_argument("--theirs", type=int, default=0, help="genlm-control on the first N")
    parser.add_argument("--their-cap", type=float, default=120.0)
    parser.add_argument("--set", action="append", default=[], type=_option)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--json", default=None, help="also write the rows to this file")
    args = parser.parse_args()
    options = dict(args.set)

    from genlm_lab.backend import load_model_by_name
    from genlm_lab.control import PromptedLLM

    began = time.perf_counter()
    panel = build_panel(10 if args.quick else args.limit)[args.start :]
    print(f"{len(panel)} schemas", flush=True)
    lm = load_model_by_name("default")
    rows = []
    methods = args.methods.split(",")
    for k, entry in enumerate(panel):
        llm = PromptedLLM(lm, prompt=prompt_for(entry))
        shortest = len(lm.tokenizer.encode(entry["shortest"], add_special_tokens=False))
        budget = 2 * shortest + 40
        row: dict[str, Any] = {"id": entry["id"], "licence": entry["licence"], "budget": budget}
        for method in methods:
            if hasattr(lm, "clear_cache"):  # no method reads logits another one computed
                lm.clear_cache()
            row[method] = await run_one(llm, entry, method, options, budget, args.seed)
        row["mask_ours"], row["mask_bare"] = mask_cost(llm, entry, options)
        if k < args.theirs:
            row["theirs"] = _theirs(entry, budget, args.their_cap)
        rows.append(row)
        print(_line(row, methods), flush=True)
        if args.json:  # after each schema: a cut-short run keeps what it measured
            Path(args.json).write_text(json.dumps(rows, indent=1, default=str))
    elapsed = time.perf_counter() - began
    report = render(rows, methods, options, elapsed)
    print(report)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1, default=str))
    if not args.no_write:
        write_section(report)


def _line(row: dict, methods: list[str]) -> str:
    cells = []
    for m in methods:
        r = row[m]
        cells.append(f"{m}: {'solved' if r['solved'] else '-'} mass {r['valid_mass']:.2f} "
                     f"cut {r['cut']} {r['tokens']:.0f} tok {r['wall']:.1f}s "
                     f"{r['per_step'] * 1e3:.0f}ms/step")  # fmt: skip
    ratio = row["mask_ours"] / row["mask_bare"]
    return f"{row['id']} (budget {row['budget']}): " + " | ".join(cells) + f" | mask x{ratio:.2f}"


def render(rows: list[dict], methods: list[str], options: dict, elapsed: float) -> str:
    """The RESULTS.md section: a summary table and one row per schema."""
    n = len(rows)
    head = [
        f"## bench_json_gen ({time.strftime('%Y-%m-%d %H:%M')}, {elapsed:.0f} s)",
        "",
        f'SmolLM2-135M ("default"), CPU, {N_PARTICLES} particles, seed 0, budget 2 x the '
        "shortest valid document's tokens + 40; prompt: the schema (compact, cut at "
        f"{PROMPT_CHARS} chars). Our options: {options or 'the defaults'}. Schemas: SchemaStore "
        "files vendored by check-jsonschema (licence per row). Mask: median per step along the "
        "shortest document, ours / llguidance's mask of the same grammar alone.",
        "",
        "Per schema: solved (a finished document valid under jsonschema; 'budget: cut' when "
        "particles were cut at max_tokens), valid mass, mean tokens, wall.",
        "",
        "| method | solved | valid mass on solved (min) | schemas with a particle cut at max_tokens "
        "| mean tokens | mean wall (s) | wall / particle-step (ms, median) |",
        "|---|---|---|---|---|---|---|",
    ]
    for m in methods:
        solved = [r[m] for r in rows if r[m]["solved"]]
        mass = min((s["valid_mass"] for s in solved), default=float("nan"))
        cut = sum(r[m]["cut"] > 0 for r in rows)
        head.append(f"| {m} | {len(solved)}/{n} | {mass:.3f} | {cut} | "
                    f"{statistics.mean(r[m]['tokens'] for r in rows):.0f} | "
                    f"{statistics.mean(r[m]['wall'] for r in rows):.1f} | "
                    f"{statistics.median(r[m]['per_step'] for r in rows) * 1e3:.0f} |")  # fmt: skip
    theirs = [r["theirs"] for r in rows if "theirs" in r]
    if theirs:
        solved = sum(bool(t.get("posterior")) for t in theirs)
        timeouts = sum(bool(t.get("timeout")) for t in theirs)
        errors = [t["error"] for t in theirs if "error" in t]
        if errors:  # a run that failed to start measured nothing: say so, not "unsolved"
            raise SystemExit(f"genlm-control failed to run: {errors[0]}")
        head.append(f"| genlm-control 0.4.1 (first {len(theirs)}, capped at {theirs[0]['cap']:.0f} "
                    f"s) | {solved}/{len(theirs)} | | {timeouts} timed out | | |")  # fmt: skip
    if "greedy" in methods:
        stats = [r["greedy"].get("budget_stats", {}) for r in rows]
        total = {k: sum(x.get(k, 0) for x in stats) for k in ("checked", "reused", "refused",
                                                              "unknown")}  # fmt: skip
        head += [
            "",
            "`greedy` is `WithinBudget(JsonSchema(schema), llm, budget, greedy=True)`: the same "
            "mask, and a token is refused once the schema's greedy `finish`, in tokens, plus EOS "
            "no longer fits. The run keeps only documents within `max_tokens` either way; what "
            "it may set aside is a prefix that only a completion shorter than the greedy finish "
            f"could have ended in time. Over the panel: {total['checked']} finishes walked, "
            f"{total['reused']} taken over from the parent, {total['refused']} tokens refused, "
            f"{total['unknown']} prefixes with no finish found (nothing refused there).",
        ]
    for m in ("default", "direct"):
        if m in methods:
            stats = [r[m].get("budget_stats", {}) for r in rows]
            total = {k: sum(x.get(k, 0) for x in stats) for k in ("kept", "refused", "unproven")}
            head += [
                "",
                f"`{m}`'s budget (sound: refused only where no completion fits): "
                f"{total['refused']} tokens refused, {total['kept']} proven to fit, "
                f"{total['unproven']} kept unproven (too far from the end, or too many tokens "
                "allowed, for the search to decide).",
            ]
    ratios = [r["mask_ours"] / r["mask_bare"] for r in rows]
    head += [
        "",
        f"Mask per step, ours / llguidance alone: median {statistics.median(ratios):.2f}x, worst "
        f"{max(ratios):.2f}x (target <= 4x).",
        "",
        "| schema | licence | budget | " + " | ".join(methods) + " | mask ours / bare |",
        "|---|---|---|" + "---|" * len(methods) + "---|",
    ]
    for r in rows:
        cells = []
        for m in methods:
            x = r[m]
            why = "" if x["solved"] else (" (budget: cut)" if x["cut"] else " (mask/model)")
            mass = f" {x['valid_mass']:.2f}" if x["solved"] else ""
            cells.append(f"{'yes' if x['solved'] else 'no'}{why}{mass} "
                         f"{x['tokens']:.0f}t {x['wall']:.0f}s")  # fmt: skip
        head.append(f"| {r['id']} | {r['licence']} | {r['budget']} | " + " | ".join(cells)
                    + f" | {r['mask_ours'] * 1e3:.2f} / {r['mask_bare'] * 1e3:.2f} ms |")  # fmt: skip
    return "\n".join(head) + "\n"


def write_section(report: str) -> None:
    """Replace (or add) the bench_json_gen section of RESULTS.md, leaving the others alone."""
    path = HERE / "RESULTS.md"
    text = path.read_text()
    start = text.find("\n## bench_json_gen (")
    if start < 0:
        text = text.rstrip("\n") + "\n\n" + report
    else:
        end = text.find("\n## ", start + 1)
        text = text[: start + 1] + report + ("" if end < 0 else text[end:])
    path.write_text(text)


if __name__ == "__main__":
    asyncio.run(main())
