"""Escapes: a literal body decodes iff CPython accepts the literal; unclosed bodies."""

from __future__ import annotations

import random

from genlm_lab.control.constraint.python_syntax.escapes import completable, decodes
from tests.control.constraint.python_syntax._corpus import parses

PIECES = ["a", "é", "\\", "\\\\", "\\x4", "\\x41", "\\u00e9", "\\U0001F600", "\\U00110000",
          "\\N{BULLET}", "\\N{NOPE}", "\\N", "\\d", "\\0", "\\777", "{", "\\\n", "☃", "\\'"]  # fmt: skip


def _bodies(n: int) -> list[str]:
    """Random bodies of a few pieces, none ending in a quote or a lone backslash."""
    rng = random.Random(0)
    bodies = ("".join(rng.choice(PIECES) for _ in range(rng.randrange(1, 5))) for _ in range(n))
    return [b for b in bodies if not b.endswith(("'", "\\"))]


def _literal(body: str, is_bytes: bool) -> str:
    return ("b" if is_bytes else "") + "'''" + body + "'''"


def test_decodes_agrees_with_ast_parse_on_whole_literals():
    pairs = [(b, k) for b in _bodies(300) for k in (False, True) if b.isascii() or not k]
    wrong = [(b, k) for b, k in pairs if decodes(b, k) != parses(_literal(b, k))]
    assert wrong == []
    assert sum(decodes(b, k) for b, k in pairs) > 50


def test_every_prefix_of_a_valid_body_is_completable():
    valid = [b for b in _bodies(300) if parses(_literal(b, False))]
    cut = [b[:k] for b in valid for k in range(len(b) + 1) if not completable(b[:k], False)]
    assert cut == []
    assert len(valid) > 50


def test_unclosed_escapes():
    assert completable("\\U0010", False) and not completable("\\U0011", False)
    assert completable("\\N{LATIN SMALL LETTER", False) and not completable("\\N{QQQX", False)
    assert completable("\\x4", True) and not completable("\\x4g", True)
