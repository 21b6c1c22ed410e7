"""`gc_paused` turns the cyclic collector off inside its block and leaves it as it found it."""

import gc

import pytest

from genlm_lab.util.gc_pause import gc_paused


def test_the_collector_is_off_inside_and_back_on_after():
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner block does not switch it back on early
    assert gc.isenabled()


def test_it_is_back_on_after_an_exception():
    with pytest.raises(KeyError), gc_paused():
        raise KeyError("x")
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off():
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
