"""The worked examples keep their hard constraints on real tokenizers and models."""

import asyncio
import math
import os

import pytest

from genlm_lab.backend import ToyLM
from genlm_lab.bytes import BeamParams
from genlm_lab.smc import ByteLMContext, smc_standard, smc_steer
from genlm_lab.smc.examples import Lipogram, RegexBytes, ShortLine

os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="module")
def tiny():
    from genlm_lab.backend import load_model_by_name

    return load_model_by_name("tiny-random", backend="hf")


def _live(result):
    return [p for p, w in zip(result, result.normalized_weights, strict=True) if w > 0]


async def test_lipogram_particles_never_use_the_letter_e(tiny):
    result = await smc_standard(Lipogram(tiny, max_tokens=6), 6, seed=0)
    assert len(_live(result)) > 0 and math.isfinite(result.log_ml)
    for particle in result:
        assert particle.satisfied(), str(particle)
        assert "e" not in str(particle).lower()


async def test_lipogram_particles_step_in_one_batch(tiny):
    tiny.reset_stats()
    await smc_standard(Lipogram(tiny, max_tokens=4), 8, seed=1)
    assert tiny.stats["max_batch_size"] >= 8  # the 8 particles' requests shared a forward


async def test_short_line_stays_within_its_byte_budget(tiny):
    for run in (
        smc_standard(ShortLine(tiny, max_bytes=12), 6, seed=0),
        smc_steer(ShortLine(tiny, max_bytes=12), 3, 2, seed=0),
    ):
        result = await run
        assert _live(result), "every particle died: nothing to check"
        for particle in _live(result):
            assert particle.satisfied()
            assert len(particle.line) <= 12 and b"\n" not in particle.line


async def test_short_line_on_a_toy_lm_ends_with_a_newline_or_eos():
    lm = ToyLM([b"ab", b"c", b" ", b"dddd", b"\n", b"x\ny", b"<eos>"], eos=b"<eos>")
    result = await smc_standard(ShortLine(lm, prompt="ab", max_bytes=5), 16, seed=2)
    assert _live(result), "every particle died: nothing to check"
    for particle in result:
        assert particle.satisfied() and len(particle.line) <= 5


async def test_regex_model_on_tiny_random_matches_the_pattern(tiny):
    ctx = await ByteLMContext.create(
        tiny, "Code: ", BeamParams(K=2, eos_byte_strings=[b"<|im_end|>"])
    )
    result = await smc_standard(RegexBytes(ctx, r"[0-9]{2}-[a-c]"), 3, seed=0)
    assert len(_live(result)) > 0
    for particle in _live(result):
        assert particle.matches(), str(particle)


@pytest.mark.slow
async def test_lipogram_on_the_default_model():
    from genlm_lab.backend import load_model_by_name

    lm = load_model_by_name("smollm2-135m", backend="hf")
    result = await smc_standard(Lipogram(lm, max_tokens=8), 8, seed=0)
    for particle in result:
        assert particle.satisfied(), str(particle)
    assert math.isfinite(result.log_ml)


class _StopAfter(Lipogram):
    """The lipogram, interrupted (as by Ctrl-C) inside its third step."""

    async def step(self):
        if self.context.token_count == 2:
            await asyncio.sleep(0)
            raise KeyboardInterrupt
        await super().step()


async def test_backend_is_usable_after_an_interrupted_run(tiny):
    before = await smc_standard(Lipogram(tiny, max_tokens=4), 4, seed=3)
    with pytest.raises(KeyboardInterrupt):
        await smc_standard(_StopAfter(tiny, max_tokens=4), 4, seed=3)
    after = await smc_standard(Lipogram(tiny, max_tokens=4), 4, seed=3)
    assert [str(p) for p in after] == [str(p) for p in before]
    assert after.log_ml == pytest.approx(before.log_ml, abs=1e-4)
    frame = after.to_pandas()
    assert list(frame["contents"]) == [str(p) for p in after]
    assert frame["weight"].sum() == pytest.approx(1.0)


async def test_examples_stop_at_eos_on_a_toy_lm_where_eos_is_frequent():
    # Nothing may be drawn after EOS (LMContext raises): each example must finish there.
    vocab = [b"ab", b"c", b"e", b" ", b"\n", b"<eos>"]
    lm = ToyLM(vocab, logprobs_fn=lambda ctx: [0.0] * 5 + [1.5], eos=b"<eos>")
    for model in (Lipogram(lm, prompt="ab", max_tokens=8), ShortLine(lm, prompt="ab")):
        for run in (smc_standard(model, 8, seed=0), smc_steer(model, 4, 2, seed=0)):
            result = await run
            ended = [p for p in result if p.context.ended]
            assert ended and all(p.finished for p in result)
