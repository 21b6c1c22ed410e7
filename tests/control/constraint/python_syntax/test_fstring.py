"""f-strings (3.11): every prefix of a valid body is live; broken bodies are dead."""

from __future__ import annotations

from genlm_lab.control.constraint.python_syntax import Syntax
from tests.control.constraint.python_syntax._corpus import parses

VALID = [
    "{x}", "{x!r}", "{x=}", "{x = !s:>10}", "{x:{w}.{p}}", "{{}}{x}}}", "{a['k']}", "{a[1:2]}",
    "{'a' if x else 'b'}", "{x:%H:%M}", "{(lambda: 1)()}", "{x!a:^{n}}", "{ {'a': 1}['a'] }",
    "\\N{BULLET} {x}", "{x,}", "{*a, b}", "{(yield)}", "{a != b}", "{a == b}",
]  # fmt: skip
BROKEN = ["{}", "{ }", "{!r}", "{x!z}", "{x!r }", "}", "{x:{y:{z}}}", "{a\\n}", "{a#}",
          "{lambda x: x}", "{x)}", "{(x]}", "{x", "{x:", "\\N{NOPE}"]  # fmt: skip


def test_valid_bodies_parse_and_every_prefix_is_live():
    syntax = Syntax()
    assert all(parses('f"' + b + '"') for b in VALID)
    cut = [b[:k] for b in VALID for k in range(len(b) + 1) if not syntax.live('f"' + b[:k])]
    assert cut == []


def test_broken_bodies_are_dead_once_closed():
    syntax = Syntax()
    assert not any(parses('f"' + b + '"') for b in BROKEN)
    alive = [b for b in BROKEN if syntax.live('f"' + b + '"')]
    assert alive == []
    dead_open = [b for b in BROKEN[:13] if not syntax.live('f"' + b)]
    assert len(dead_open) == 11  # "{x" and "{x:" may still close
