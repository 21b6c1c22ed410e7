"""A profiled beam: every step's parts sum to its wall time, counters match its records."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from genlm_lab.backend import AsyncTransformer
from genlm_lab.backend.toy import ToyLM
from genlm_lab.bytes import BeamParams, ByteBeamState
from genlm_lab.bytes import beam as beam_module
from genlm_lab.bytes.trie import AsyncTokenByteTrie
from genlm_lab.util.profile import PROFILE_COLUMNS

TEXT = b"The old lighthouse keeper walked slowly."
COMPONENTS = {
    "lm.forward",
    "lm.calls",
    "trie",
    "trie.build",
    "extend",
    "mixture",
    "heal",
    "prune",
    "record",
    "alarms",
}


async def read_timed(lm, params: BeamParams, text: bytes) -> tuple[ByteBeamState, dict[int, float]]:
    """Read `text` (prune, logp_next, <<) timing each call from outside, by the step it charges."""
    walls: dict[int, float] = {}
    start = time.perf_counter()
    beam = await ByteBeamState.initial(lm, params)
    walls[0] = time.perf_counter() - start
    for b in text:
        p = beam.position
        start = time.perf_counter()
        beam = beam.prune()
        await beam.logp_next()
        walls[p] += time.perf_counter() - start
        start = time.perf_counter()
        beam = await (beam << b)
        walls[p + 1] = time.perf_counter() - start
    return beam, walls


def per_step(beam: ByteBeamState, component: str | None = None) -> dict[int, float]:
    frame = beam.profile
    if component is not None:
        frame = frame[frame.component == component]
    return frame.groupby("step").seconds.sum().to_dict()


def test_parts_sum_to_each_steps_wall_time_on_tiny_random(tiny_random_hf):
    model, tokenizer = tiny_random_hf

    async def go():
        await read_timed(AsyncTransformer(model, tokenizer), BeamParams(K=5, profile=True), b"ab")
        return await read_timed(
            AsyncTransformer(model, tokenizer), BeamParams(K=5, profile=True), TEXT
        )

    beam, walls = asyncio.run(go())
    parts = per_step(beam)
    assert sorted(parts) == sorted(walls) == list(range(len(TEXT) + 1))
    total = sum(walls.values())
    # The profiler starts inside each call: only the call's entry and exit are outside
    # it, plus whatever the OS takes there (a preemption on a loaded machine costs a few
    # ms: CI saw 18.2 against 22.4 ms on one step with 5 processes on 2 cores).
    # Per step only the bound holds under any load (CI saw 14.5 against 22.9 ms with a
    # second test run beside it); the whole read is within 5% plus 1 ms a step.
    assert sum(parts.values()) == pytest.approx(total, rel=0.05, abs=1e-3 * len(walls))
    for step, wall in walls.items():
        assert parts[step] <= wall + 1e-6, step
    frame = beam.profile
    assert set(frame.component) <= COMPONENTS
    assert {"lm.forward", "trie", "extend", "mixture", "prune", "record", "alarms"} <= set(
        frame.component
    )
    assert frame[frame.component == "lm.calls"].seconds.sum() == 0.0  # a counter
    assert frame[frame.component == "lm.forward"].seconds.sum() > 0


async def read(lm, params: BeamParams, text: bytes) -> ByteBeamState:
    beam = await ByteBeamState.initial(lm, params)
    for b in text:
        beam = beam.prune()
        await beam.logp_next()
        beam = await (beam << b)
    return beam


def calls(beam: ByteBeamState, component: str) -> dict[int, int]:
    frame = beam.profile
    frame = frame[frame.component == component]
    return {int(k): int(v) for k, v in frame.groupby("step").calls.sum().items() if v}


@pytest.mark.parametrize("K", [1, 3])
def test_lm_calls_counters_match_the_records_and_the_model(K):
    lm = ToyLM([b"a", b"b", b"ab", b"ba", b"aba", b"$"], seed=4, eos=b"$")
    beam = asyncio.run(read(lm, BeamParams(K=K, eos_byte_strings=[b"$"], profile=True), b"ababa"))
    recorded = {
        s.position: s.lm_calls + s.lm_calls_next
        for s in beam.history
        if s.lm_calls + s.lm_calls_next
    }
    assert calls(beam, "lm.calls") == recorded
    assert sum(recorded.values()) == lm.stats["queries"]
    # each LM call computes one candidate's masses: one trie request
    assert calls(beam, "trie") == recorded
    assert calls(beam, "prune") == {p: 1 for p in range(len(b"ababa"))}


def test_healing_is_charged_to_heal_with_its_lm_calls():
    # "ab" is likely, so a width-1 beam reads "ab" as one token; "c" needs a|bc (test_heal.py)
    lm = ToyLM([b"a", b"b", b"ab", b"bc"], logprobs_fn=lambda ctx: [0.0, 0.0, 5.0, 0.0])
    beam = asyncio.run(read(lm, BeamParams(K=1, profile=True), b"abc"))
    (step,) = [s for s in beam.history if s.healing]
    components = {r[1]: r for r in step.profile}
    assert components["heal"][2] == 1 and components["heal"][3] > 0
    assert components["lm.calls"][2] == step.lm_calls + step.lm_calls_next
    assert sum(h.lm_calls for h in step.healing) > 0


def test_a_slow_trie_pass_is_charged_to_trie(monkeypatch):
    """The trie's batched pass runs in its own task: it is charged to "trie" all the same."""
    slow, batches = 0.05, []  # well above what the other parts take under load
    run = AsyncTokenByteTrie._run_batch_now

    def sleepy(self, key, payloads):
        batches.append(len(payloads))
        time.sleep(slow)
        return run(self, key, payloads)

    monkeypatch.setattr(AsyncTokenByteTrie, "_run_batch_now", sleepy)
    lm = ToyLM([b"a", b"b", b"ab"], seed=1)
    beam = asyncio.run(read(lm, BeamParams(K=2, profile=True), b"abab"))
    frame = beam.profile
    trie = frame[frame.component == "trie"]
    assert len(batches) >= 2
    assert trie.seconds.sum() >= slow * len(batches)
    assert trie.calls.sum() == sum(batches)  # one request per evaluated candidate
    others = frame[~frame.component.isin(["trie", "trie.build", "lm.calls"])].seconds.sum()
    assert others < slow * len(batches) / 2  # the sleep went nowhere else


def test_profile_off_builds_no_profiler_and_records_no_rows(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a Profiler was built with profiling off")

    monkeypatch.setattr(beam_module, "Profiler", refuse)
    beam = asyncio.run(read(ToyLM([b"a", b"b", b"ab"], seed=1), BeamParams(K=2), b"abab"))
    assert all(s.profile == [] for s in beam.history)
    assert beam.profile.empty and list(beam.profile.columns) == list(PROFILE_COLUMNS)


def test_profile_rows_persist_in_the_step_records():
    beam = asyncio.run(
        read(ToyLM([b"a", b"b", b"ab"], seed=1), BeamParams(K=2, profile=True), b"abab")
    )
    data = json.loads(json.dumps([s.to_dict() for s in beam.history]))
    rows = [r for d in data for r in d["profile"]]
    assert rows == beam.profile_rows
    assert all(r[0] == d["position"] for d in data for r in d["profile"])
    frame = beam.profile
    assert list(frame.columns) == list(PROFILE_COLUMNS)
    assert frame.dtypes["seconds"].kind == "f" and frame.dtypes["calls"].kind == "i"


def test_profile_of_a_branch_holds_only_its_own_chain():
    async def go():
        lm = ToyLM([b"a", b"b", b"ab"], seed=1)
        beam = await read(lm, BeamParams(K=2, profile=True), b"ab")
        left = await (beam << ord("a"))
        right = await (beam << ord("b"))  # forks the history
        return beam, left, right

    beam, left, right = asyncio.run(go())
    assert set(left.profile.step) == set(right.profile.step) == {0, 1, 2, 3}
    assert left.history[-1] is not right.history[-1]
    assert left.history[-1].profile is not right.history[-1].profile


def test_a_failing_step_leaves_no_profiler_open():
    from genlm_lab.bytes import _beam_profile

    class Broken(ToyLM):
        fail = False

        async def next_token_logprobs(self, token_ids):
            if self.fail:
                raise RuntimeError("backend down")
            return await super().next_token_logprobs(token_ids)

    async def go():
        lm = Broken([b"a", b"b", b"ab"], seed=1)
        beam = await ByteBeamState.initial(lm, BeamParams(K=2, profile=True))
        beam = await (beam << ord("a"))  # inside a token: no model call
        lm.fail = True
        with pytest.raises(RuntimeError, match="backend down"):
            await (beam << ord("b"))  # extends the token "a": a model call
        return _beam_profile.running(), _beam_profile.PROFILER.get()

    assert asyncio.run(go()) == ([], None)


def test_concurrent_profiled_beams_each_get_their_own_rows():
    from genlm_lab.bytes import _beam_profile

    async def go():
        lm = ToyLM([b"a", b"b", b"ab", b"ba"], seed=5)
        beams = await asyncio.gather(
            read(lm, BeamParams(K=2, profile=True), b"abab"),
            read(lm, BeamParams(K=3, profile=True), b"baba"),
        )
        return beams, _beam_profile.running()

    (one, two), still_open = asyncio.run(go())
    assert still_open == []
    for beam in (one, two):
        recorded = {
            s.position: s.lm_calls + s.lm_calls_next
            for s in beam.history
            if s.lm_calls + s.lm_calls_next
        }
        assert calls(beam, "lm.calls") == recorded
