"""smc/lineage.py: each particle's parent in the previous step, for both algorithms."""

from __future__ import annotations

import math

import pytest

from genlm_lab.smc.lineage import step_links


def _entry(n, ancestors=None, finished=None, weights=None):
    return {
        "contents": ["x"] * n,
        "ancestors": ancestors,
        "finished": finished or [False] * n,
        "log_weights": weights or [0.0] * n,
    }


def test_without_resampling_each_particle_continues_itself():
    assert step_links(_entry(3), _entry(3), steer=False, beam=None) == [0, 1, 2]


def test_after_resampling_the_ancestors_are_the_parents():
    assert step_links(_entry(3, [2, 2, 0]), _entry(3), steer=False, beam=None) == [2, 2, 0]


def test_steer_repeats_live_kept_particles_n_beam_times_and_finished_ones_once():
    prev = _entry(3, [0, 2], finished=[False, False, True])
    assert step_links(prev, _entry(3), steer=True, beam=2) == [0, 0, 2]
    dead = _entry(2, [0, 1], weights=[0.0, -math.inf])
    assert step_links(dead, _entry(3), steer=True, beam=2) == [0, 0, 1]


def test_counts_that_do_not_fit_are_refused():
    with pytest.raises(ValueError, match="has 2 particles, but previous step had 3"):
        step_links(_entry(3), _entry(2), steer=False, beam=None)
    with pytest.raises(ValueError, match=r"ancestors \[5\] name particles outside 0..2"):
        step_links(_entry(3, [5, 0, 0]), _entry(3), steer=False, beam=None)
