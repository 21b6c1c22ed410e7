"""A ToyLM domain for the eval tests, and the exact posterior expectation by enumeration."""

from __future__ import annotations

import itertools
import math
from typing import Any

import regex

from genlm_lab.backend.toy import ToyLM
from genlm_lab.control import PromptedLLM, PythonRegex
from genlm_lab.eval import Dataset, Domain, EvaluationResult, Evaluator, Instance

VOCAB = [b"a", b"b", b"ab", b"c", b"<eos>"]


def toy_lm(seed: int = 3) -> ToyLM:
    return ToyLM(list(VOCAB), seed=seed, eos=b"<eos>")


class ToyInstance(Instance):
    pattern: str


class ToyDataset(Dataset[ToyInstance]):
    def __init__(self, patterns: list[str]) -> None:
        self.patterns = patterns

    def __iter__(self):
        for i, p in enumerate(self.patterns):
            yield ToyInstance(instance_id=i, pattern=p)

    @property
    def schema(self) -> type[ToyInstance]:
        return ToyInstance


class EndsWithB(Evaluator[ToyInstance]):
    """Score 1 iff the answer ends with "b": not implied by the constraints used here."""

    def evaluate_sample(self, instance: ToyInstance, response: Any) -> EvaluationResult:
        ok = str(response).endswith("b")
        return EvaluationResult(score=int(ok), desc="b" if ok else "no b")


class ToyDomain(Domain):
    name = "toy"
    eos = (b"<eos>",)

    def prompt(self, instance: ToyInstance) -> str:
        return ""

    def constraint(self, instance: ToyInstance) -> PythonRegex:
        return PythonRegex(instance.pattern)


def toy_domain(patterns: list[str], evaluator: Evaluator | None = None) -> ToyDomain:
    return ToyDomain(ToyDataset(patterns), evaluator or EndsWithB())


async def exact_expectation(lm: ToyLM, pattern: str, score, max_tokens: int) -> float:
    """E[score(text)] under LM x constraint over sequences of < max_tokens tokens (then EOS).

    SMC with `max_tokens` targets complete(y) = p(y) p(EOS | y) c(y) over
    sequences y of at most max_tokens - 1 tokens (EOS forced at the boundary,
    with its weight), so every such y is enumerated.
    """
    llm = PromptedLLM(lm, eos_tokens=[b"<eos>"])
    compiled = regex.compile(pattern)

    async def weights():
        out = []
        for n in range(max_tokens):
            for y in itertools.product(llm.vocab, repeat=n):
                text = b"".join(y).decode()
                if compiled.fullmatch(text) is None:
                    continue
                out.append((text, math.exp(await llm.complete(list(y)))))
        return out

    pairs = await weights()
    total = sum(w for _, w in pairs)
    return sum(w * score(t) for t, w in pairs) / total


def run_rows() -> Any:
    """A runs table (2 models x 3 methods x 2 domains x 6 instances) as the store gives it."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    rows = []
    for model in ("default", "tiny-random"):
        for method in ("lcd", "smc", "awrs_smc"):
            for domain in ("pattern_matching", "json_schema"):
                for i in range(6):
                    rows.append(
                        {
                            "model": model,
                            "method": method,
                            "domain": domain,
                            "instance_id": str(i),
                            "status": "finished" if i else "all_dead",
                            "weighted_accuracy": float(rng.random()),
                            "runtime_seconds": float(rng.random() * 3),
                            "finished_at": 1000.0 + 10 * i,
                            "lm_requests": int(rng.integers(1, 50)),
                        }
                    )
    return pd.DataFrame(rows)
