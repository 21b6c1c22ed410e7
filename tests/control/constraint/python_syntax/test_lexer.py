"""Lexer: how a text ends, and resumed scans equal scans from scratch."""

from __future__ import annotations

from genlm_lab.control.constraint.python_syntax.lexer import Lexer
from tests.control.constraint.python_syntax._corpus import WRITTEN

KINDS = {
    "": "line", "x = 1\n": "line", "if x:\n    y\n  ": "line", "x = 1 ": "clean",
    "x = (1,\n": "clean", "x = ab": "word", "x = 1e+": "word", "x = 1if": "word", "x =": "op",
    "x = 'ab": "string", "x = '''a\nb": "string", "# c": "comment", "x = \\": "backslash",
    "x = 'a\nb": "dead", "x = \\ y": "dead", "x = ''": "clean", "x = .": "op",
}  # fmt: skip


def test_tail_kinds():
    lexer = Lexer()
    got = {text: lexer.tail(text).kind for text in KINDS}
    assert got == KINDS


def test_line_tail_carries_the_last_lines_indentation_and_strings_their_run():
    lexer = Lexer()
    assert lexer.tail("if x:\n\ty = 1\n  ").indent == "\t"
    tail = lexer.tail("x = ('a' 'b' # c\n  b'c")
    assert (tail.kind, tail.run, tail.prefix, tail.quote) == ("string", ("'a'", "'b'"), "b", "'")


def test_resumed_scans_equal_fresh_ones():
    kept = Lexer()
    compared = 0
    for s in WRITTEN:
        for k in range(len(s) + 1):
            compared += 1
            assert kept.tail(s[:k]) == Lexer().tail(s[:k]), repr(s[:k])
    assert compared > 1000
