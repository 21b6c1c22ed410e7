"""genlm_lab.eval.wording: plurals, rounding for reading, the minimum detectable effect's text."""

import math

import pytest

from genlm_lab.eval.wording import mde_text, plural, readable


@pytest.mark.parametrize(
    "n, text", [(0, "0 pairs"), (1, "1 pair"), (2, "2 pairs"), (21, "21 pairs")]
)
def test_plural(n, text):
    assert plural(n, "pair") == text


def test_irregular_plural():
    assert (
        plural(1, "child", "children") == "1 child"
        and plural(3, "child", "children") == "3 children"
    )


@pytest.mark.parametrize(
    "value, shown",
    [
        (0.030000000000000006, 0.03),
        (8.30734834294999, 8.31),
        (1234.5678, 1235.0),
        (0.00012345, 0.000123),
        (-0.41234, -0.412),
        (0.0, 0.0),
    ],
)
def test_readable_rounds_to_significant_digits(value, shown):
    assert readable(value) == shown
    assert str(readable(value)) == str(shown)  # what a table prints


def test_readable_leaves_other_values_alone():
    assert readable(7) == 7 and readable("a") == "a" and readable(True) is True
    assert math.isnan(readable(math.nan)) and readable(math.inf) == math.inf


def test_mde_text_never_prints_nan():
    assert mde_text(0.12345, 10) == "0.123"
    assert mde_text(math.nan, 0) == "unsizeable (no pairs)"
    assert mde_text(math.nan, 1) == "unsizeable (1 pair cannot detect even a difference of 1)"
    assert mde_text(math.nan, 5) == "unsizeable (5 pairs cannot detect even a difference of 1)"
