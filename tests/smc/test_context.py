"""smc/_context.py: what the LM and byte contexts share (copies, the end at EOS)."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from genlm_lab.smc._context import GrowingContext, read_only


class Letters(GrowingContext):
    """A context of letters that ends at "$"."""

    UNIT, GROWING = "letter", "letters"

    def __init__(self) -> None:
        self.letters: list[str] = []
        self.cache = np.zeros(3)

    @property
    def ended(self) -> bool:
        return bool(self.letters) and self.letters[-1] == "$"

    def _ending(self) -> str:
        return f"{len(self.letters) - 1} letters first"

    def text_bytes(self) -> bytes:
        return "".join(x for x in self.letters if x != "$").encode("latin-1")


def test_a_copy_grows_apart_and_shares_the_rest():
    ctx = Letters()
    ctx.letters.append("a")
    clone = copy.deepcopy(ctx)
    clone.letters.append("b")
    assert (ctx.letters, clone.letters) == (["a"], ["a", "b"])
    assert clone.cache is ctx.cache
    both = copy.deepcopy([ctx, ctx])
    assert both[0] is both[1]  # the memo keeps one copy per original


def test_after_eos_nothing_can_follow_naming_the_unit():
    ctx = Letters()
    ctx._check_open()
    ctx.letters += ["a", "$"]
    message = (
        r"^the context already ended with EOS \(1 letters first\): no letter can follow it\. "
        r"Check `ctx\.ended` after drawing a letter and call `self\.finish\(\)`\.$"
    )
    with pytest.raises(RuntimeError, match=message):
        ctx._check_open()


def test_read_only_leaves_the_array_writable_and_the_view_not():
    a = np.zeros(2)
    view = read_only(a)
    with pytest.raises(ValueError, match="read-only"):
        view[0] = 1.0
    a[0] = 2.0
    assert view[0] == 2.0


def test_str_is_the_text_as_utf8_with_a_malformed_byte_replaced():
    ctx = Letters()
    ctx.letters += ["\xc3", "\xa9", "\xff", "b", "$"]  # as latin-1: the bytes C3 A9 FF 62
    assert str(ctx) == "\u00e9\ufffdb"
