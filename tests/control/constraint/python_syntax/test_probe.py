"""probe: CPython's parser asks past the end exactly when the tokens may go on."""

from __future__ import annotations

from genlm_lab.control.constraint.python_syntax.probe import asks_past_end, string_ok
from tests.control.constraint.python_syntax._corpus import codeop_verdict


def test_asks_past_end_where_codeop_cannot_tell():
    assert asks_past_end("x = 1 +") and codeop_verdict("x = 1 +") == "error"
    assert not asks_past_end("1 2") and not asks_past_end("x = = ")
    assert asks_past_end("") and asks_past_end("if x:\n") and asks_past_end("f(a, ")
    assert not asks_past_end("x\0")


def test_string_ok_checks_one_literal():
    assert string_ok("'a'") and string_ok("b'\\x00'") and string_ok("f'{x!r}'")
    assert not string_ok("'\\N{NOPE}'") and not string_ok("f'{}'") and not string_ok("b'é'")
