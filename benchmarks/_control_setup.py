"""bench_control's shared set-up: the constraints, the model with both sides' PromptedLLMs, rows.

Not a benchmark itself (run_all.py runs `bench_*.py` only); see bench_control.py.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
from _row import result_row

REPS = int(os.environ.get("BENCH_CONTROL_REPS", "5"))
SMC_RUNS = int(os.environ.get("BENCH_CONTROL_SMC_RUNS", "2"))
THEIR_SMC_RUNS = int(os.environ.get("BENCH_CONTROL_THEIR_SMC_RUNS", "1"))
AWRS_DRAWS = int(os.environ.get("BENCH_CONTROL_AWRS_DRAWS", "300"))
AWRS_CONTEXT = "john@example."
N_CHECKS = 12  # tokens checked per step: the text's next token and random ones

EMAIL = r"[a-z]+(\.[a-z]+)*@[a-z]+\.(com|org|net)"
SQL = r"""
start: "SELECT " cols " FROM " NAME (" WHERE " cond)?
cols: "*" | NAME (", " NAME)*
cond: NAME " = " NUMBER
NAME: /[a-z_]+/
NUMBER: /[0-9]+/
"""
SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
    "additionalProperties": False,
}
# Few-shot, so that the model opens the object itself: genlm-control's JsonSchema admits a
# leading "\n" or " " and then rejects every token (its start check only lets "[" follow
# whitespace), which kills the particle.
JSON_PROMPT = (
    'Person:\n{"name": "Alan Turing", "age": 41}\n'
    'Person:\n{"name": "Grace Hopper", "age": 85}\nPerson:\n'
)


class Case(NamedTuple):
    """One constraint: how each side builds it, the text whose steps are timed."""

    name: str
    text: str
    ours: Callable[[], Any]
    theirs: Callable[[], Any]
    their_steps: Callable[[int], list[int]]  # which steps genlm-control is timed on
    check_target_us: float


def _cases() -> list[Case]:
    import genlm.control as gc

    from genlm_lab.control import BoolCFG, BoolFSA, JsonSchema

    return [
        Case(
            "regex (e-mail)",
            "john.smith@example.com",
            lambda: BoolFSA.from_regex(EMAIL),
            lambda: gc.BoolFSA.from_regex(EMAIL),
            lambda n: [0, n // 2, n - 1],
            10.0,
        ),
        Case(
            "Lark grammar (SQL subset)",
            "SELECT name, age FROM users WHERE id = 42",
            lambda: BoolCFG.from_lark(SQL),
            lambda: gc.BoolCFG.from_lark(SQL),
            lambda n: [n // 2],
            50.0,
        ),
        Case(
            "JSON schema",
            '{"name": "Ada Lovelace", "age": 36}',
            lambda: JsonSchema(SCHEMA, max_whitespace=None),
            lambda: gc.JsonSchema(SCHEMA),
            lambda n: [n // 2],
            50.0,
        ),
    ]


def _row(
    metric: str,
    ours: Any,
    baseline: Any,
    target: str,
    met: bool | None,
    note: str,
    ratio: float | None = None,
) -> dict:
    """One result row; the ratio defaults to baseline / ours (how many times faster ours is)."""
    if ratio is None and isinstance(ours, (int, float)) and isinstance(baseline, (int, float)):
        ratio = baseline / ours if ours else None
    return result_row("control", metric, ours, baseline, ratio, target, met, note)


def weight_mean_se(log_weights: list[float], exact: float) -> tuple[float, float, bool]:
    """Mean of exp(weight), its standard error, and whether every draw gave the same weight.

    With an allowed mass near 1 all draws of a run may be accepted at once (0.995^300 is
    about 1/4): their spread is then zero, and the se of a Bernoulli estimate of `exact`
    stands in, so "within 3 se" still means something.
    """
    x = np.exp(np.asarray(log_weights, dtype=float))
    se = float(x.std(ddof=1) / np.sqrt(len(x)))
    flat = se == 0
    if flat:
        se = float(np.sqrt(exact * (1 - exact) / len(x)))
    return float(x.mean()), se, flat


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.0f} us" if seconds < 1e-2 else f"{seconds * 1e3:.1f} ms"


def _progress(message: str) -> None:
    print(f"  control: {message}", flush=True)


class _Setup:
    """The model, both PromptedLLMs and the token maps between them."""

    def __init__(self) -> None:
        import genlm.control as gc
        import llguidance.hf
        from genlm.backend.llm import AsyncTransformer as TheirTransformer

        from genlm_lab.backend import load_model_by_name
        from genlm_lab.control import PromptedLLM

        self.lm = load_model_by_name("smollm2-135m", backend="hf")
        self.tok = self.lm.tokenizer
        self.ours = PromptedLLM(self.lm, prompt=JSON_PROMPT)
        self.their_lm = TheirTransformer(self.lm.model, self.tok)
        eos = [bytes(self.lm.byte_vocab[i]) for i in self.lm.eos_token_ids]
        self.theirs = gc.PromptedLLM(
            self.their_lm, prompt_ids=list(self.ours.prompt_ids), eos_byte_strings=eos
        )
        self.our_index = {int(t): i for i, t in enumerate(self.ours._vocab_ids)}
        self.their_token = {t.token_id: t for t in self.theirs.vocab}
        self.ltok = llguidance.hf.from_tokenizer(self.tok)
        self.special = set(self.tok.all_special_ids)

    def ids(self, text: str) -> list[int]:
        return self.tok.encode(text, add_special_tokens=False)

    def our_context(self, ids: list[int]) -> list[Any]:
        return [self.ours.vocab[self.our_index[i]] for i in ids]

    def their_context(self, ids: list[int]) -> list[Any]:
        return [self.their_token[i] for i in ids]

    def our_allowed(self, mask: np.ndarray) -> set[int]:
        """HF token ids allowed by one of our masks (EOS entry dropped)."""
        return set(self.ours._vocab_ids[np.flatnonzero(mask[:-1])].tolist())

    def describe(self, ids: set[int]) -> str:
        """A difference set in words: how many, how many special / whitespace-bearing, examples."""
        if not ids:
            return "none"
        texts = {i: self.tok.decode([i]) for i in sorted(ids)}
        special = [i for i in ids if i in self.special]
        control = [
            i
            for i, t in texts.items()
            if i not in self.special and any(ord(c) < 0x20 or ord(c) == 0x7F for c in t)
        ]
        other = [texts[i] for i in texts if i not in self.special and i not in control]
        examples = ", ".join(repr(texts[i]) for i in [*special, *control][:4])
        return (
            f"{len(ids)} ({len(special)} special, {len(control)} holding a control character "
            f"such as a raw newline or DEL, e.g. {examples}; {len(other)} other"
            + (f", e.g. {', '.join(repr(t) for t in other[:6])})" if other else ")")
        )
