"""JsonSchema on real-world schemas: ours vs PyPI genlm-control 0.4.1, and mask time vs llguidance.

The panel is `tests/schema_panel.py`: SchemaStore schemas vendored by
check-jsonschema, hand-written valid documents and mutants, every label from
jsonschema with its format checker. Per schema:

- compiles: ours without falling back to "any JSON" in the mask / genlm-control's
  `JsonSchema` (run in a subprocess, capped at THEIR_TIMEOUT seconds a schema);
- valid accepted / invalid rejected by `complete` (the document written with
  `json.dumps`), ours / genlm-control;
- mask per step on the SmolLM2 vocabulary: our coerced potential's `logw_next`
  along the first valid document's tokens vs llguidance's bare
  `fill_next_token_bitmask` on the same grammar (target <= 4x).
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from _row import result_row  # noqa: E402

REPS = int(os.environ.get("BENCH_SCHEMAS_REPS", "3"))
THEIR_TIMEOUT = float(os.environ.get("BENCH_SCHEMAS_THEIR_TIMEOUT", "30"))


def _texts(docs: list) -> list[bytes]:
    return [json.dumps(d, ensure_ascii=False).encode() for d in docs]


async def _completes(potential, texts: list[bytes]) -> int:
    """How many texts `complete` accepts."""
    return sum([await potential.complete(list(t)) == 0.0 for t in texts])


def _theirs(name: str) -> dict:
    """genlm-control's verdicts on one schema (run in a child process)."""
    from schema_panel import panel

    entry = panel(name)
    try:
        import genlm.control as gc

        potential = gc.JsonSchema(entry.schema)
    except Exception as error:  # noqa: BLE001 - reported in the table
        return {"compiles": False, "error": f"{type(error).__name__}: {str(error)[:80]}"}

    async def main() -> dict:
        valid = await _completes(potential, _texts(entry.valid))
        invalid = len(entry.invalid) - await _completes(potential, _texts(entry.invalid))
        return {"compiles": True, "valid": valid, "invalid": invalid}

    return asyncio.run(main())


def _their_row(name: str) -> dict:
    start = time.perf_counter()
    try:
        out = subprocess.run(
            [sys.executable, __file__, "--theirs", name],
            capture_output=True,
            text=True,
            timeout=THEIR_TIMEOUT,
        )
        result = json.loads(out.stdout.strip().splitlines()[-1])
    except subprocess.TimeoutExpired:
        result = {"compiles": None, "error": f"over {THEIR_TIMEOUT:.0f} s"}
    except (json.JSONDecodeError, IndexError):
        result = {"compiles": False, "error": out.stderr.strip().splitlines()[-1][:80]}
    result["seconds"] = time.perf_counter() - start
    return result


class _Vocab:
    """SmolLM2's tokenizer for both sides: our PromptedLLM and llguidance's tokenizer."""

    def __init__(self) -> None:
        import llguidance.hf

        from genlm_lab.backend import load_model_by_name
        from genlm_lab.control import PromptedLLM

        self.lm = load_model_by_name("smollm2-135m", backend="hf")
        self.tok = self.lm.tokenizer
        self.ours = PromptedLLM(self.lm, prompt="JSON:\n")
        self.index = {int(t): i for i, t in enumerate(self.ours._vocab_ids)}
        self.ltok = llguidance.hf.from_tokenizer(self.tok)

    def context(self, text: bytes) -> tuple[list[int], list]:
        ids = self.tok.encode(text.decode(), add_special_tokens=False)
        return ids, [self.ours.vocab[self.index[i]] for i in ids]


async def _mask_times(vocab: _Vocab, js, text: bytes) -> tuple[float, float, int]:
    """Median seconds per step, ours and llguidance's bare mask, over the text's tokens."""
    from bench_control import _Floor, _medians, _our_pass

    ours_c = js.coerce(vocab.ours, f=b"".join)
    ids, ctx = vocab.context(text)
    floor = _Floor(vocab, ours_c.grammar.grammar)
    ours, floors = [], []
    for _ in range(REPS):  # interleaved, so both see the same load
        ours.append(await _our_pass(ours_c, ctx))
        floors.append(floor.walk(ids, [[] for _ in range(len(ids) + 1)])["fill"])
    return statistics.median(_medians(ours)), statistics.median(_medians(floors)), len(ids)


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.0f} us"


async def _main() -> list[dict]:
    from schema_panel import panel, panel_names

    from genlm_lab.control import JsonSchema

    vocab = _Vocab()
    rows, ratios = [], []
    for name in panel_names():
        entry = panel(name)
        start = time.perf_counter()
        js = JsonSchema(entry.schema)
        compile_s = time.perf_counter() - start
        fallback = any(r["keyword"] == "(all)" for r in js.coverage)
        ok_valid = await _completes(js, _texts(entry.valid))
        ok_invalid = len(entry.invalid) - await _completes(js, _texts(entry.invalid))
        theirs = _their_row(name)
        ours_s, floor_s, n = await _mask_times(vocab, js, _texts(entry.valid[:1])[0])
        ratios.append(ours_s / floor_s)
        nv, ni = len(entry.valid), len(entry.invalid)
        their_cells = (
            f"{theirs['valid']}/{nv} valid, {theirs['invalid']}/{ni} invalid"
            if theirs.get("compiles")
            else f"not compiled ({theirs.get('error')})"
        )
        print(f"  schemas: {name}: ratio {ours_s / floor_s:.2f}, theirs {their_cells}", flush=True)
        rows.append(
            result_row(
                "schemas",
                f"{name}: mask per step vs llguidance's bare mask (s; ratio = ours / floor)",
                ours_s,
                floor_s,
                ours_s / floor_s,
                "<= 4x floor",
                ours_s <= 4 * floor_s,
                f"compiles: ours {'fell back to any JSON' if fallback else 'yes'} "
                f"({compile_s * 1e3:.0f} ms) / genlm-control "
                f"{'yes' if theirs.get('compiles') else 'no'} ({theirs['seconds']:.1f} s incl. "
                f"start); complete: ours {ok_valid}/{nv} valid accepted, {ok_invalid}/{ni} invalid "
                f"rejected / genlm-control {their_cells}; mask: median over {n + 1} steps of "
                f"{REPS} passes on the first valid document's SmolLM2 tokens, ours {_us(ours_s)}, "
                f"floor {_us(floor_s)}",
            )
        )
    load = os.getloadavg()
    worst = max(ratios)
    rows.append(
        result_row(
            "schemas",
            "panel: worst mask ratio over the schemas (ours / llguidance's bare mask)",
            worst,
            None,
            worst,
            "<= 4x floor",
            worst <= 4,
            f"{len(ratios)} schemas; geometric mean ratio "
            f"{math.exp(statistics.mean(map(math.log, ratios))):.2f}; load average "
            f"{load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} (1 / 5 / 15 min) at the end",
        )
    )
    return rows


def run() -> list[dict]:
    return asyncio.run(_main())


if __name__ == "__main__":
    if sys.argv[1:2] == ["--theirs"]:
        print(json.dumps(_theirs(sys.argv[2])))
    else:
        from run_all import table

        print(table(run()))
