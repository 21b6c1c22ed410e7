"""Beam alarms: each kind provoked (once, where the beam's own numbers say), none when healthy."""

from __future__ import annotations

import asyncio
import json
import math
import time

import pytest

from genlm_lab.backend import AsyncTransformer
from genlm_lab.backend.toy import ToyLM
from genlm_lab.bytes import (
    BEAM_ALARM_KINDS,
    BeamAlarmThresholds,
    BeamParams,
    ByteBeamState,
    EmptyBeamError,
    IntervalWarning,
)
from genlm_lab.bytes.alarms import slow_component
from genlm_lab.bytes.trie import AsyncTokenByteTrie
from genlm_lab.util.alarms import text_runaway

TEXT = b"The old lighthouse keeper walked slowly."
# "ab" is likely, so a width-1 beam reads "ab" as one token; "c" needs a|bc (test_heal.py)
HEAL_VOCAB = [b"a", b"b", b"ab", b"bc"]


def heal_lm() -> ToyLM:
    return ToyLM(HEAL_VOCAB, logprobs_fn=lambda ctx: [0.0, 0.0, 5.0, 0.0])


async def read(lm, params: BeamParams, text: bytes, next_probs: list | None = None):
    beam = await ByteBeamState.initial(lm, params)
    for b in text:
        beam = beam.prune()
        if not beam.states:
            break
        if next_probs is not None:
            next_probs.append((await beam.logp_next())[b])
        beam = await (beam << b)
        if not beam.states:
            break
    return beam


def kinds(beam: ByteBeamState) -> list[str]:
    return [a.kind for a in beam.alarms]


@pytest.mark.parametrize("profile", [False, True])
def test_a_healthy_beam_raises_none_on_tiny_random(tiny_random_hf, profile):
    model, tokenizer = tiny_random_hf
    lm = AsyncTransformer(model, tokenizer)
    probs: list[float] = []
    beam = asyncio.run(read(lm, BeamParams(K=5, profile=profile), TEXT, probs))
    assert beam.alarms == []
    assert all(s.alarms == [] for s in beam.history)
    # what "healthy" means here, measured independently of the checks
    assert min(probs) > math.log(1e-6)
    assert text_runaway(TEXT.decode()) is None


def test_empty_names_the_byte_position_and_the_errors_reason():
    beam = asyncio.run(read(heal_lm(), BeamParams(K=1, heal=False), b"abc"))
    assert len(beam) == 0
    with pytest.raises(EmptyBeamError) as err:
        asyncio.run(beam.logp_next())
    (alarm,) = beam.alarms
    assert alarm.kind == "empty" and alarm.step == err.value.position == 2
    assert err.value.reason in alarm.sentence
    assert "byte 99 ('c')" in alarm.sentence and "position 2" in alarm.sentence
    # kept in the record of the step whose byte it could not read
    assert beam.history[2].alarms == [alarm]


def test_heal_failed_and_empty_when_no_tokenization_reads_the_byte():
    beam = asyncio.run(read(heal_lm(), BeamParams(K=1), b"abd"))
    assert len(beam) == 0
    assert kinds(beam) == ["heal_failed", "empty"]
    tried = len(beam.history[-1].alarms)
    assert tried == 2 and all(a.step == 2 for a in beam.alarms)
    assert "token healing found no other tokenization" in beam.alarms[1].sentence


def test_healed_says_how_it_healed():
    beam = asyncio.run(read(heal_lm(), BeamParams(K=1), b"abc"))
    (step,) = [s for s in beam.history if s.healing]
    (alarm,) = [a for a in beam.alarms if a.kind == "healed"]
    event = step.healing[-1]
    assert alarm.step == step.position == 3
    assert f"backed off {event.backoff} byte(s)" in alarm.sentence
    assert "'ab'" in alarm.sentence  # the token in progress it backed off in


def test_low_mass_goes_off_at_the_least_likely_byte():
    lm = ToyLM([b"a", b"b", b"ab", b"ba", b"aba"], seed=4)
    text = b"abbaab"
    probs: list[float] = []
    asyncio.run(read(lm, BeamParams(K=100), text, probs))  # no pruning: logZ steps = logp_next
    order = sorted(range(len(text)), key=lambda i: probs[i])
    lowest, second = probs[order[0]], probs[order[1]]
    assert lowest < second
    limit = math.exp((lowest + second) / 2)
    beam = asyncio.run(
        read(lm, BeamParams(K=100, alarms=BeamAlarmThresholds(min_mass=limit)), text)
    )
    (alarm,) = beam.alarms
    assert alarm.kind == "low_mass" and alarm.step == order[0] + 1
    assert f"at position {order[0]} had probability {math.exp(lowest):.2g}" in alarm.sentence


def widths(beam: ByteBeamState) -> list[tuple[int, float]]:
    """(position, width) after each `<<` and each prune, from the step records."""
    out = []
    for s in beam.history:
        out.append((s.position, s.logZ_upper - s.logZ))
        if s.pruned_logZ is not None:
            out.append((s.position, s.logZ_upper - s.pruned_logZ))
    return out


def test_wide_interval_goes_off_where_the_recorded_interval_first_passes_the_limit():
    lm = ToyLM([b"a", b"b", b"ab", b"ba", b"aba"], seed=4)
    text = b"abbaababba"
    plain = asyncio.run(read(lm, BeamParams(K=1), text))
    assert plain.alarms == []  # off by default: the bound loosens with every byte
    recorded = widths(plain)
    limit = sorted({w for _, w in recorded if w > 0})[1] - 1e-9
    first = next(p for p, w in recorded if w > limit)
    beam = asyncio.run(read(lm, BeamParams(K=1, alarms=BeamAlarmThresholds(max_width=limit)), text))
    (alarm,) = beam.alarms
    assert alarm.kind == "wide_interval" and alarm.step == first
    width = max(w for p, w in recorded if p == first)
    assert f"{width:.3g} nats wide" in alarm.sentence
    assert f"{math.expm1(width):.3g} times the mass" in alarm.sentence
    # BeamParams.max_width sets it too (and warns, as before)
    with pytest.warns(IntervalWarning):
        again = asyncio.run(read(lm, BeamParams(K=1, max_width=limit), text))
    assert again.alarms == beam.alarms


@pytest.mark.parametrize(
    ("text", "what"),
    [(b"x" + b" " * 40, "whitespace"), (b"yx" + b"ab" * 30, "repetition")],
)
def test_runaway_goes_off_once_where_the_text_first_runs_away(text, what):
    lm = ToyLM([b"a", b"b", b"ab", b" ", b"  ", b"x", b"y"], seed=2)
    beam = asyncio.run(read(lm, BeamParams(K=2), text))
    first = next(n for n in range(1, len(text) + 1) if text_runaway(text[:n].decode()))
    assert text_runaway(text[:first].decode()) == what
    (alarm,) = beam.alarms  # once, though the text runs on
    assert alarm.kind == "runaway" and alarm.step == first
    assert f"a {what} runaway" in alarm.sentence


def test_slow_component_names_the_component_that_took_the_time(monkeypatch):
    run = AsyncTokenByteTrie._run_batch_now

    def sleepy(self, key, payloads):
        time.sleep(0.01)
        return run(self, key, payloads)

    lm = ToyLM([b"a", b"b", b"ab"], seed=1)
    asyncio.run(read(lm, BeamParams(K=2), b"a"))  # build the trie before timing
    monkeypatch.setattr(AsyncTokenByteTrie, "_run_batch_now", sleepy)
    limits = BeamAlarmThresholds(slow_seconds=0.02)
    beam = asyncio.run(read(lm, BeamParams(K=2, profile=True, alarms=limits), b"abab"))
    (alarm,) = beam.alarms
    assert alarm.kind == "slow_component" and alarm.sentence.startswith("trie took")
    # raised at the first step where the profile's own totals pass the thresholds
    totals: dict[str, float] = {}
    for step in beam.history:
        for _, component, _, seconds in step.profile:
            totals[component] = totals.get(component, 0.0) + seconds
        if sum(totals.values()) >= 0.02 and totals["trie"] > 0.8 * sum(totals.values()):
            break
    assert alarm.step == step.position
    # without profiling there is nothing to measure, and no alarm
    plain = asyncio.run(read(lm, BeamParams(K=2, alarms=limits), b"abab"))
    assert plain.alarms == []


def test_slow_component_leaves_out_the_models_forwards_and_small_totals():
    limits = BeamAlarmThresholds()
    assert slow_component(5, {"lm.forward": 10.0, "trie": 0.1}, limits) is None
    assert slow_component(5, {"trie.build": 10.0, "trie": 0.1}, limits) is None
    assert slow_component(5, {"trie": 0.01}, limits) is None  # under slow_seconds
    alarm = slow_component(5, {"lm.forward": 1.0, "heal": 9.0}, limits)
    assert alarm is not None and alarm.sentence.startswith("heal took 90%")


def test_each_kind_once_per_chain_and_a_fork_keeps_its_own():
    lm = ToyLM([b"a", b"b", b"ab", b" ", b"x"], seed=2)

    async def read_on(beam, text):
        for b in text:
            beam = await (beam.prune() << b)
        return beam

    async def go():
        parent = await read(lm, BeamParams(K=2), b"x" + b" " * 31)
        assert parent.alarms == []
        ran = await read_on(parent, b" " * 6)  # runs away at the 32nd space, once
        fork = await read_on(parent, b"x" + b" " * 32)  # forks: its own chain, its own alarm
        return ran, fork

    ran, fork = asyncio.run(go())
    assert [(a.step, a.kind) for a in ran.alarms] == [(33, "runaway")]
    assert [(a.step, a.kind) for a in fork.alarms] == [(65, "runaway")]
    assert ran.history[:32] == fork.history[:32]


def test_alarms_persist_in_the_step_records_and_can_be_turned_off():
    beam = asyncio.run(read(heal_lm(), BeamParams(K=1), b"abc"))
    data = json.loads(json.dumps([s.to_dict() for s in beam.history]))
    assert [a for d in data for a in d["alarms"]] == [list(a) for a in beam.alarms]
    off = asyncio.run(read(heal_lm(), BeamParams(K=1, alarms=None), b"abc"))
    assert off.alarms == [] and off.logZ == pytest.approx(beam.logZ)


def test_kinds_and_thresholds_are_checked():
    assert set(BEAM_ALARM_KINDS) == {
        "empty",
        "heal_failed",
        "healed",
        "low_mass",
        "wide_interval",
        "runaway",
        "slow_component",
    }
    for bad in ({"min_mass": -1}, {"whitespace_run": 0}, {"slow_fraction": 2}, {"max_width": "x"}):
        with pytest.raises(ValueError):
            BeamAlarmThresholds(**bad)
    with pytest.raises(ValueError, match="alarms must be"):
        BeamParams(K=1, alarms={"min_mass": 1e-3})
    with pytest.raises(ValueError, match="profile must be"):
        BeamParams(K=1, profile=1)
    assert json.dumps(BeamParams(K=1).to_dict())
