"""Cost of the live views: a ParticleView observing SMC and control.SMC, a 49k-token TrieView.

Run: python benchmarks/bench_widgets.py. `run()` returns the rows
{benchmark, metric, ours, baseline, ratio, target, note} that the harness
collects into benchmarks/RESULTS.md.
"""

from __future__ import annotations

import asyncio
import statistics
import time

import numpy as np

from genlm_lab.backend import ToyLM
from genlm_lab.smc import smc_standard
from genlm_lab.smc.examples.lipogram import Lipogram
from genlm_lab.trie import TokenCharacterTrie
from genlm_lab.widgets import ParticleView, TrieView

N_PARTICLES = 64
MAX_TOKENS = 30
REPEATS = 3


def _toy_lm() -> ToyLM:
    rng = np.random.default_rng(0)
    letters = list(b"abcdefghijklmnopqrstuvwxyz ")
    vocab = sorted(
        {bytes(rng.choice(letters, size=rng.integers(1, 6)).astype(np.uint8)) for _ in range(1000)}
    )
    singles = [bytes([c]) for c in letters]
    return ToyLM([*singles, *(v for v in vocab if len(v) > 1), b"<eos>"], eos=b"<eos>", seed=1)


async def _smc_seconds(llm: ToyLM, observers: list) -> float:
    model = Lipogram(llm, prompt="a", forbidden="e", max_tokens=MAX_TOKENS)
    t0 = time.perf_counter()
    await smc_standard(model, N_PARTICLES, observers=observers, seed=0)
    return time.perf_counter() - t0


class _Timed:
    """Forwards to a view and adds up the seconds spent inside it."""

    def __init__(self, view: ParticleView) -> None:
        self.view, self.seconds = view, 0.0

    def on_step(self, entry: dict) -> None:
        t0 = time.perf_counter()
        self.view.on_step(entry)
        self.seconds += time.perf_counter() - t0

    def on_finish(self, record) -> None:
        t0 = time.perf_counter()
        self.view.on_finish(record)
        self.seconds += time.perf_counter() - t0


def bench_particle_view() -> list[dict]:
    """SMC with and without a live ParticleView, interleaved, median of REPEATS each.

    Wall-clock ratios swing on a shared machine, so the seconds spent inside the
    view's callbacks are also reported as a share of the plain run.
    """
    llm = _toy_lm()

    async def both() -> tuple[list[float], list[float], list[float], int]:
        await _smc_seconds(llm, [])  # warm-up (numba, caches)
        plain, viewed, inside, pushes = [], [], [], 0
        for _ in range(REPEATS):
            plain.append(await _smc_seconds(llm, []))
            timed = _Timed(ParticleView())
            viewed.append(await _smc_seconds(llm, [timed]))
            inside.append(timed.seconds)
            pushes = timed.view._throttle.sent
        return plain, viewed, inside, pushes

    plain, viewed, inside, pushes = asyncio.run(both())
    base, ours, cost = (statistics.median(x) for x in (plain, viewed, inside))
    name = f"SMC {N_PARTICLES} particles x {MAX_TOKENS} steps (ToyLM, 1k tokens)"
    return [
        {
            "benchmark": name,
            "metric": f"wall seconds per run, median of {REPEATS}",
            "ours": round(ours, 4),
            "baseline": round(base, 4),
            "ratio": round(ours / base, 3),
            "target": "<= 1.10 (live ParticleView vs no observer)",
            "note": f"{pushes} throttled pushes per viewed run (no browser attached)",
        },
        {
            "benchmark": name,
            "metric": "seconds inside the view's callbacks vs plain run",
            "ours": round(base + cost, 4),
            "baseline": round(base, 4),
            "ratio": round((base + cost) / base, 3),
            "target": "<= 1.10",
            "note": f"{cost * 1000:.1f} ms in on_step/on_finish per run",
        },
    ]


def _row(name: str, metric: str, ours: float, base: float, target: str, note: str) -> dict:
    """One result row: ours, the baseline, their ratio, the target and what was measured."""
    return {
        "benchmark": name,
        "metric": metric,
        "ours": round(ours, 4),
        "baseline": round(base, 4),
        "ratio": round(ours / base, 3),
        "target": target,
        "note": note,
    }


JSON_PARTICLES = 32
JSON_MAX_TOKENS = 40
JSON_REPEATS = 7
JSON_SCHEMA = {  # bounded strings and numbers, no free whitespace: every run can finish
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 24},
        "age": {"type": "integer", "minimum": 0, "maximum": 999},
    },
    "required": ["name", "age"],
    "additionalProperties": False,
}


def _json_potential():
    from genlm_lab.control import JsonSchema, PromptedLLM

    pieces = [b"{", b"}", b'"', b":", b",", b'"name"', b'"age"', b'{"name":"', b'","age":']
    pieces += [bytes([c]) for c in b"abcdefghijklmnopqrstuvwxyz0123456789"]
    pieces += [b"Ann", b"Bob", b"12", b"42", b"<eos>"]
    llm = PromptedLLM(ToyLM(pieces, eos=b"<eos>", seed=2))
    return llm * JsonSchema(JSON_SCHEMA).coerce(llm)


def bench_control_particle_view() -> list[dict]:
    """control.SMC under a JSON schema, with and without a live ParticleView (interleaved).

    Both runs record each step's per-factor extras (SMC's default); the view adds
    its per-factor tally (O(particles x factors) per step) and the throttled pushes.
    """
    from genlm_lab.control import SMC, direct_token_sampler

    potential = _json_potential()

    async def once(observers: list) -> float:
        sampler = direct_token_sampler(potential)
        t0 = time.perf_counter()
        await SMC(sampler)(JSON_PARTICLES, 0.5, JSON_MAX_TOKENS, observers=observers, seed=0)
        return time.perf_counter() - t0

    async def both() -> tuple[list[float], list[float], list[float], int]:
        await once([])  # warm-up: masks and LM rows cached, as in every later run
        plain, viewed, inside, pushes = [], [], [], 0
        for i in range(JSON_REPEATS):
            timed = _Timed(ParticleView())
            if i % 2:  # alternate which goes first
                viewed.append(await once([timed]))
                plain.append(await once([]))
            else:
                plain.append(await once([]))
                viewed.append(await once([timed]))
            inside.append(timed.seconds)
            pushes = timed.view._throttle.sent
        return plain, viewed, inside, pushes

    plain, viewed, inside, pushes = asyncio.run(both())
    base, ours, cost = (statistics.median(x) for x in (plain, viewed, inside))
    name = (
        f"control.SMC {JSON_PARTICLES} particles, JSON schema, <= {JSON_MAX_TOKENS} tokens "
        f"(ToyLM, {len(potential.vocab)} tokens)"
    )
    return [
        _row(
            name,
            f"wall seconds per run, median of {JSON_REPEATS}",
            ours,
            base,
            "<= 1.10 (live ParticleView with per-factor weights vs no observer)",
            f"{pushes} throttled pushes per viewed run (no browser attached)",
        ),
        _row(
            name,
            "seconds inside the view's callbacks vs plain run",
            base + cost,
            base,
            "<= 1.10",
            f"{cost * 1000:.1f} ms in on_step/on_finish per run",
        ),
    ]


def _vocab_49k() -> tuple[list[bytes], str]:
    try:
        from genlm_lab.backend.models import load_tokenizer
        from genlm_lab.tokenization import decode_vocab

        tokens, _ = decode_vocab(load_tokenizer("default"))
        return [bytes(t) for t in tokens], "SmolLM2 vocabulary"
    except Exception as err:  # no embedded model here: a synthetic vocabulary of the same size
        rng = np.random.default_rng(0)
        words: set[bytes] = set()
        while len(words) < 49_152:
            n = int(rng.integers(1, 9))
            words.add(bytes(rng.integers(32, 127, size=n).astype(np.uint8)))
        return sorted(words), f"synthetic 49,152 tokens ({type(err).__name__})"


def bench_trie_view() -> dict:
    """Build TrieView (subtrie data, graphviz SVG or HTML tree, static HTML) under a prefix."""
    vocab, source = _vocab_49k()
    trie = TokenCharacterTrie(vocab)
    rng = np.random.default_rng(0)
    ws = rng.dirichlet(np.ones(len(vocab)))
    prefix = b" th" if trie.find(b" th") is not None else bytes(vocab[100][:1])
    times = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        view = TrieView(trie, ws, prefix, depth=3, top_k=8)
        view._repr_html_()
        times.append(time.perf_counter() - t0)
    ours = statistics.median(times)
    drawn = "graphviz SVG" if view.view_data()["svg"] else "HTML tree (no dot)"
    return {
        "benchmark": f"TrieView of {len(vocab)} tokens under prefix {prefix!r}, depth 3, top 8",
        "metric": f"seconds to render, median of {REPEATS}",
        "ours": round(ours, 4),
        "baseline": 1.0,
        "ratio": round(ours / 1.0, 3),
        "target": "< 1 s",
        "note": f"{source}; {drawn}; {len(view.view_data()['nodes'])} nodes drawn",
    }


def run() -> list[dict]:
    rows = [*bench_particle_view(), *bench_control_particle_view(), bench_trie_view()]
    for row in rows:
        print(
            f"{row['benchmark']}\n  {row['metric']}: ours {row['ours']}  baseline "
            f"{row['baseline']}  ratio {row['ratio']}  target {row['target']}  ({row['note']})"
        )
    return rows


if __name__ == "__main__":
    run()
