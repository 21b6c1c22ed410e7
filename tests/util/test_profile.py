"""The generic profiler: exact charging on a fake clock, merged rows, and SMC's re-export."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given
from hypothesis import strategies as st

from genlm_lab.smc import profile as smc_profile
from genlm_lab.util.alarms import Alarm, text_runaway
from genlm_lab.util.profile import PROFILE_COLUMNS, Profiler, add_rows, profile_frame


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_smc_profile_re_exports_the_same_objects():
    assert smc_profile.Profiler is Profiler
    assert smc_profile.profile_frame is profile_frame
    assert (
        smc_profile.PROFILE_COLUMNS == PROFILE_COLUMNS == ("step", "component", "calls", "seconds")
    )


def test_start_label_and_step_are_charged_first():
    clock = FakeClock()
    p = Profiler(clock, label="extend", step=7)
    clock.now = 2.0
    with p.timed("record"):
        clock.now = 2.5
    assert p.rows() == [[7, "extend", 0, 2.0], [7, "record", 1, 0.5]]


async def test_wrap_without_count_charges_time_but_no_call():
    clock = FakeClock()
    p = Profiler(clock, label="loop")

    async def work() -> int:
        clock.now += 3.0
        await asyncio.sleep(0)
        clock.now += 1.0
        return 5

    assert await p.wrap(work(), "lm", count=False) == 5
    assert {r[1]: (r[2], r[3]) for r in p.rows()} == {"loop": (0, 0.0), "lm": (0, 4.0)}


rows = st.lists(
    st.tuples(st.integers(0, 3), st.sampled_from("abc"), st.integers(0, 5), st.floats(0, 10)).map(
        list
    ),
    max_size=20,
)


@given(rows, rows)
def test_add_rows_sums_calls_and_seconds_per_step_and_component(first, second):
    merged = add_rows([list(r) for r in first], [list(r) for r in second])
    keys = [(r[0], r[1]) for r in merged]
    want: dict = {}
    for step, component, calls, seconds in first + second:
        c, s = want.get((step, component), (0, 0.0))
        want[step, component] = (c + calls, s + seconds)
    # every key once (rows of `first` with the same key stay as they were given)
    assert set(keys) == set(want)
    got: dict = {}
    for step, component, calls, seconds in merged:
        c, s = got.get((step, component), (0, 0.0))
        got[step, component] = (c + calls, s + seconds)
    for key, (calls, seconds) in want.items():
        assert got[key][0] == calls
        assert got[key][1] == pytest.approx(seconds)


def test_profile_frame_types_and_empty():
    frame = profile_frame([[1, "trie", 2, 0.5]])
    assert list(frame.columns) == list(PROFILE_COLUMNS)
    assert frame.dtypes["seconds"].kind == "f" and frame.dtypes["calls"].kind == "i"
    assert profile_frame(None).empty


def test_alarm_is_a_plain_tuple_with_a_json_form():
    alarm = Alarm(3, "runaway", "text")
    step, kind, sentence = alarm
    assert (step, kind, sentence) == (3, "runaway", "text") == tuple(alarm)
    assert alarm.to_list() == [3, "runaway", "text"]


def test_text_runaway_whitespace_repetition_and_healthy():
    assert text_runaway("x" + " " * 32) == "whitespace"
    assert text_runaway("x" + " " * 31) is None
    assert text_runaway("start " + "ab" * 24) == "repetition"
    assert text_runaway("The old lighthouse keeper walked slowly down to the harbour.") is None
