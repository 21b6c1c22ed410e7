"""PythonParser: genlm-control's name and interface over bytes, verdicts from Syntax."""

from __future__ import annotations

import pytest

from genlm_lab.control import PythonParser
from tests.control.constraint.python_syntax._corpus import parses


def _bytes(text: str) -> list[bytes]:
    return [bytes([b]) for b in text.encode()]


async def test_prefix_and_complete_over_byte_tokens():
    parser = PythonParser([bytes([i]) for i in range(256)])  # genlm-control's own form
    assert await parser.prefix(_bytes("def g(df):\n    ret")) == 0.0
    assert await parser.prefix(_bytes("def 1")) == float("-inf")
    texts = ["x = 1", "x = = 1", "def f():\n    return 1\n", "if x\n    pass\n", "  x = 1"]
    got = [await parser.complete(_bytes(t)) == 0.0 for t in texts]
    assert got == [parses(t) for t in texts]


async def test_byte_values_by_default_and_a_split_character_is_live():
    parser = PythonParser()
    snowman = list("x = '☃'".encode())
    assert await parser.prefix(snowman[:-2]) == 0.0
    assert await parser.complete(snowman[:-2]) == float("-inf")
    assert await parser.prefix(list(b"x = b'\xc3")) == float("-inf")


async def test_next_byte_weights_follow_prefix():
    parser = PythonParser()
    context = list(b"x = ")
    await parser.assert_logw_next_consistency(context)
    await parser.assert_autoreg_fact(list(b"x = 1\n"))


def test_bad_tokens_are_named():
    with pytest.raises(ValueError, match="bytes"):
        PythonParser(["x", "y"])
    assert repr(PythonParser()) == "PythonParser(vocab_size=256)"
    assert PythonParser().spawn().vocab == list(range(256))
