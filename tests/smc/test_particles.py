"""smc/_particles.py: argument checks, weights, liveness, copies and the backend walk."""

from __future__ import annotations

import math

import numpy as np
import pytest

from genlm_lab.smc import Model
from genlm_lab.smc._particles import (
    check_n,
    checked_weights,
    clone_all,
    contents_of,
    counting_backends,
    is_alive,
    reachable,
    resettable_backends,
    seed_param,
    step_extras,
)


class Plain(Model):
    async def step(self) -> None:
        self.finish()


def test_check_n_takes_positive_ints_only():
    assert check_n("n", np.int64(3)) == 3
    for bad in (0, -1, 2.0, True, "3"):
        with pytest.raises(ValueError, match="n must be a positive int"):
            check_n("n", bad)


def test_seed_param_keeps_int_seeds_only():
    assert seed_param(np.int32(7)) == 7
    assert seed_param(True) is None
    assert seed_param(np.random.default_rng(0)) is None


def test_checked_weights_names_the_particle_with_a_nan_weight():
    particles = [Plain(), Plain()]
    particles[1].weight = math.nan
    with pytest.raises(ValueError, match="particle 1 .* after step 2"):
        checked_weights(particles, 2)
    particles[1].weight = -math.inf
    assert checked_weights(particles, 2).tolist() == [0.0, -math.inf]


def test_is_alive_is_false_when_finished_or_weight_zero():
    done, dead, alive = Plain(), Plain(), Plain()
    done.finish()
    dead.weight = -math.inf
    assert [is_alive(p) for p in (done, dead, alive)] == [False, False, True]


def test_clone_all_reuses_the_first_use_and_copies_later_ones():
    a, b = Plain(), Plain()
    out = clone_all([a, b], [1, 1, 0])
    assert out[0] is b and out[2] is a
    assert out[1] is not b and isinstance(out[1], Plain)


def test_contents_of_refuses_non_text():
    class Bytes(Plain):
        def string_for_serialization(self):
            return b"x"

    with pytest.raises(TypeError, match="particle 0: Bytes.string_for_serialization"):
        contents_of([Bytes()])


def test_step_extras_are_consumed_once_recorded():
    a, b = Plain(), Plain()
    assert step_extras([a, b]) is None
    a.step_extras = {"k": 1}
    assert step_extras([a, b]) == [{"k": 1}, None]
    assert step_extras([a, b]) is None


class Counting:
    def __init__(self) -> None:
        self.stats = {"batches": 0, "cache_hits": 0}

    def reset_async_queries(self) -> None:
        pass


def test_the_walk_finds_each_backend_once_within_its_depth():
    lm = Counting()
    p = Plain()
    p.lm = lm
    p.nested = {"a": [lm, ("text", 3)]}
    assert counting_backends([p]) == [lm]
    assert resettable_backends([p]) == [lm]
    deep = Plain()
    deep.box = [[[[[[lm]]]]]]
    assert counting_backends([deep]) == []  # six levels down: beyond the walk
    assert reachable([deep], lambda v: v is lm, depth=8) == [lm]
    assert reachable([], lambda v: True) == []
