"""genlm-control 0.4.1's `JsonSchema` with AWRS-SMC, one schema per child process (bench_json_gen).

The parent sends the schema, prompt and budget on stdin; the child loads
SmolLM2 through genlm-control's HF backend (the embedded weights' folder),
runs AWRS-SMC (4 particles, ess 0.5, `max_tokens` the budget, seeded), prints
one JSON line with each particle's text, finished flag and log weight, then
one line per timed mask: `logw_next` of the coerced schema (every token
checked, how genlm-control masks) halfway along the shortest document. A
child past `cap` seconds is killed; what it printed counts. The row's wall
is the SMC run's, as the other columns' (the child's whole life, model load
and mask timing included, is `child_wall`).

`fix=True` ("gc-ws") runs the same code with one module regex of
genlm-control corrected: its `VALID_JSON_START`,
`^[ \\n]{0,2}\\[|\\{|"|(-?[0-9])|[nft]`, lets leading whitespace precede only
`[` (the alternation is not grouped), so a model whose first token is
"\\n\\n" (SmolLM2 after "JSON document:") is at a dead end under any object
schema; grouped, whitespace may precede any value, as the comment beside it
says was meant.
"""

from __future__ import annotations

import asyncio
import json
import math
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

N_PARTICLES = 4
MASK_POINTS = (0.5,)  # where along the shortest document their mask is timed


def run(entry: dict, prompt: str, budget: int, cap: float, seed: int, fix: bool) -> dict:
    """One schema: a row like bench_json_gen's (solved, valid_mass, tokens, wall, per_step)."""
    from genlm_lab.backend.models import local_model_dir
    from genlm_lab.control import JsonSchema

    payload = json.dumps({
        "schema": entry["schema"], "shortest": entry["shortest"], "prompt": prompt,
        "budget": budget, "seed": seed, "fix": fix,
        "model_path": str(local_model_dir("default")),  # the embedded weights, no model loaded
    })  # fmt: skip
    start = time.perf_counter()
    command = [sys.executable, str(Path(__file__).resolve())]
    try:
        done = subprocess.run(command, input=payload, capture_output=True, text=True, timeout=cap)
        out, err, timeout = done.stdout, done.stderr, False
    except subprocess.TimeoutExpired as expired:
        out = expired.stdout.decode() if isinstance(expired.stdout, bytes) else expired.stdout
        err, timeout = "", True
    lines = [json.loads(x) for x in (out or "").splitlines() if x.startswith("{")]
    result = next((x for x in lines if "particles" in x), None)
    masks = [x["mask"] for x in lines if "mask" in x]
    child_wall = time.perf_counter() - start
    row: dict[str, Any] = {"cap": cap, "timeout": timeout, "wall": child_wall}
    if masks:
        row["mask"] = sorted(masks)[len(masks) // 2]
    if result is None:
        tail = (err or "").strip().splitlines()
        row.update(solved=False, valid_mass=math.nan, cut=0, tokens=math.nan, per_step=math.nan)
        row["error"] = "timed out" if timeout else (tail[-1][:160] if tail else "failed")
        return row
    validate = JsonSchema(entry["schema"]).validate
    particles = result["particles"]
    top = max(p["logw"] for p in particles)
    weights = [math.exp(p["logw"] - top) if top > -math.inf else 0.0 for p in particles]
    finished = sum(w for w, p in zip(weights, particles, strict=True) if p["finished"])
    valid = sum(
        w
        for w, p in zip(weights, particles, strict=True)
        if p["finished"] and w > 0 and validate(p["text"].encode())
    )
    steps = sum(p["length"] for p in particles)
    row.update(
        solved=valid > 0,
        valid_mass=valid / finished if finished else math.nan,
        cut=sum(p["length"] >= budget and not p["finished"] for p in particles),
        tokens=steps / len(particles),
        wall=result["wall"],
        child_wall=child_wall,
        per_step=result["wall"] / max(steps, 1),
        died=[p["text"][:40] for p in particles if p["logw"] == -math.inf][:2],
    )
    return row


async def _child(e: dict) -> None:
    import regex

    if e["fix"]:
        import genlm.control.potential.built_in.json as their_json

        their_json.VALID_JSON_START = regex.compile(rb'^[ \n]{0,2}(?:\[|\{|"|(-?[0-9])|[nft])')
    from genlm.control import AWRS, JsonSchema, PromptedLLM

    llm = PromptedLLM.from_name(e["model_path"], backend="hf")
    llm.set_prompt_from_str(e["prompt"])
    js = JsonSchema(e["schema"]).coerce(llm, f=b"".join)
    start = time.perf_counter()
    seqs = await AWRS(llm, js, seed=e["seed"]).smc(
        n_particles=N_PARTICLES, ess_threshold=0.5, max_tokens=e["budget"]
    )
    wall = time.perf_counter() - start
    particles = []
    for context, logw in zip(seqs.contexts, seqs.log_weights, strict=True):
        text = b"".join(t for t in context if isinstance(t, bytes))
        finished = bool(context) and not isinstance(context[-1], bytes)
        particles.append({"text": text.decode("utf-8", "replace"), "finished": finished,
                          "logw": float(logw), "length": len(context)})  # fmt: skip
    print(json.dumps({"particles": particles, "wall": wall}), flush=True)
    ids = llm.model.tokenizer.encode(e["shortest"], add_special_tokens=False)
    tokens = [llm.token_maps.decode[i] for i in ids]
    for point in MASK_POINTS:
        context = tokens[: int(point * len(tokens))]
        start = time.perf_counter()
        await js.logw_next(context)
        print(json.dumps({"mask": time.perf_counter() - start}), flush=True)


if __name__ == "__main__":
    asyncio.run(_child(json.loads(sys.stdin.read())))
