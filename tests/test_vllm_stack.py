"""The stack on top of the real vLLM engine gives the runs it gives on transformers.

Same weights (SmolLM2-135M, float32), same seeds. The engines' next-token
log-probs differ by at most 1e-4 per entry (tests/backend/test_vllm_engine.py),
so a sum over n tokens differs by at most n * 1e-4: the runs below use fewer
than 10 tokens a particle, hence 1e-3 on every log weight and logZ. Sampling
decisions are the same unless a uniform draw falls within 1e-4 of a boundary
between tokens (chance about 1e-4 per draw): the texts must be equal.
"""

import math

import pytest
import regex

from genlm_lab.backend.hf import AsyncTransformer
from genlm_lab.bytes import BeamParams, ByteBeamState
from genlm_lab.control import SMC, BoolFSA, PromptedLLM, direct_token_sampler
from genlm_lab.smc import LMContext, Model, smc_standard, token_masks

pytestmark = pytest.mark.vllm

SUMMED = 1e-3


@pytest.fixture(scope="module")
def engines(vllm_default, default_hf):
    vllm_default.clear_cache()
    return {"vllm": vllm_default, "hf": AsyncTransformer(*default_hf)}


async def test_byte_beam_logZ_is_the_same_on_both_engines(engines):
    text = b"The capital of France is Paris"
    logZ = {}
    for name, lm in engines.items():
        beam = await ByteBeamState.initial(lm, BeamParams(K=5))
        beam = await beam.prefill(text)
        logZ[name] = beam.logZ
    assert math.isfinite(logZ["hf"]) and logZ["hf"] < 0
    assert logZ["vllm"] == pytest.approx(logZ["hf"], abs=SUMMED)


class NoLetterE(Model):
    """Five tokens after a prompt, none holding an e: a mask observed, then a token sampled."""

    def __init__(self, lm):
        super().__init__()
        self.context = LMContext(lm, "<|im_start|>Write a short sentence:")
        self.mask = token_masks(lm).without_bytes("eE", keep_special=False)

    async def step(self):
        await self.observe(self.context.mask_dist(self.mask), True)
        await self.sample(self.context.next_token())
        if self.context.token_count == 5:
            self.finish()

    def __str__(self):
        return str(self.context)


async def test_an_smc_run_is_the_same_on_both_engines(engines):
    results = {name: await smc_standard(NoLetterE(lm), 6, seed=3) for name, lm in engines.items()}
    texts = {name: [str(p) for p in result] for name, result in results.items()}
    assert texts["vllm"] == texts["hf"]
    assert all("e" not in text.lower() for text in texts["hf"])  # the generated text only
    assert results["vllm"].log_weights == pytest.approx(results["hf"].log_weights, abs=SUMMED)
    assert results["vllm"].log_ml == pytest.approx(results["hf"].log_ml, abs=SUMMED)


async def test_a_constrained_control_smc_run_is_the_same_on_both_engines(engines):
    pattern = r" ?[0-9]{1,3}"
    runs = {}
    for name, lm in engines.items():
        prompt = lm.tokenizer.encode("<|im_start|>The year has this many days:")
        llm = PromptedLLM(lm, prompt_ids=prompt)
        constraint = BoolFSA.from_regex(pattern).coerce(llm, f=b"".join)
        runs[name] = await SMC(direct_token_sampler(llm * constraint))(
            n_particles=5, ess_threshold=0.5, max_tokens=5, seed=1
        )
    texts = {name: seqs.texts() for name, seqs in runs.items()}
    assert texts["vllm"] == texts["hf"]
    alive = [text for text, (_, w) in zip(texts["hf"], runs["hf"], strict=True) if w > -math.inf]
    assert alive and all(regex.fullmatch(pattern, t) for t in alive), alive
    weights = {name: [w for _, w in seqs] for name, seqs in runs.items()}
    for got, want in zip(weights["vllm"], weights["hf"], strict=True):
        assert got == want or got == pytest.approx(want, abs=SUMMED)
