"""Syntax: every prefix of real code is live, and dead prefixes are dead for CPython too.

Judges independent of the verdicts under test: `ast.parse` on whole texts,
codeop's answer, a battery of continuations, and a search for a continuation
that parses (`_corpus`). codeop answers another question ("can more *lines*
finish this?"): it calls `x = 1 +` an error though ` 2` finishes it. Where it
says "incomplete", CPython saw more to come, so a dead verdict there is wrong,
but in two blind spots of codeop: a text inside brackets ending with an
invalid string literal (`(f'}'`: CPython checks a run of strings once the
token after it arrives), and a text inside an unclosed string whose body can
no longer be valid (a short `\\u` escape): codeop never looks inside one.
"""

from __future__ import annotations

import ast
import sysconfig
from pathlib import Path

import pytest

from genlm_lab.control.constraint.python_syntax import Syntax
from tests.control.constraint.python_syntax._corpus import (
    BATTERY,
    WRITTEN,
    codeop_verdict,
    last_strings_invalid,
    library_snippets,
    module_statements,
    mutants,
    parses,
    unclosed_string_unclosable,
    witness,
)

# (prefix, a continuation that parses): live, and the continuation shows it.
LIVE = [
    ("x = 1 +", " 2"), ("x = 1 i", "f y else 2"), ("x = 1a", "nd y"), ("x = 1e", "5"),
    ("x = 1e", "lse 2 if 1 else 3"[4:] if False else "0"), ("x = 0x", "1f"), ("x = 1_", "0"),
    ("x = 09", ".5"), ("f() =", "= 1"), ("del f()", ".x"), ("if x:\n", "    pass"),
    ("class A:\n    @d\n", "    def f(self): pass"), ("x = '\\x4", "1'"), ("x <", "= y"),
    ("x !", "= y"), ("f'{x", "}'"), ("f'{x!", "r}'"), ("f'{x=", "}'"), ("f'}", "}'"),
    ("f'{x:{y", "}}'"), ("b'' b'x", "'"), ("match x:\n    case 1 + 2", "j:\n        pass"),
    ("def f(a, a", "): pass"), ("x = \\", "\n1"), ("x = (1 # c", "\n)"), ("for x i", "n y: pass"),
    ("x = '\\N{LATIN SMALL LET", "TER A}'"), ("x = '''a\nb", "'''"), ("x = 1\n  ", "\n"),
    ("if x:\n    # c", "\n    pass"), ("x = ''", "'\n'''"), ("lambda", ": 0"), ("@", "d\ndef f(): pass"),
    ("x = 'é\\", "n'"), ("r", "aise"), ("matc", "h x:\n    case _: pass"), ("async def f():\n    await", " x"),
]  # fmt: skip
# Dead prefixes, each with the reason no continuation parses.
DEAD = [
    ("1 2", "two numbers side by side"), ("f() = ", "a call is no assignment target"),
    ("try x", "'try' takes ':' at once"), ("b'' 'x", "bytes and text cannot be concatenated"),
    ("b'' 'x'", "the same, both closed"), ("match x:\n    case 1j + 2j", "the real part is imaginary"),
    ("x = 1\n  y", "unexpected indent"), ("x = '\\N{foo}'", "no character is named FOO"),
    ("x = 1x", "a letter glued to a number"), ("x = '\\x4g", "\\x takes two hex digits"),
    ("x = '\\U0011", "above U+10FFFF whatever follows"), ("x <>", "'<>' is no operator"),
    ("f'{}", "empty expression"), ("f'{lambda x", "its ':' ends the field"),
    ("f'{x!z", "conversions are s, r, a"), ("f'}a", "a single '}'"), ("f'{x:{y:{", "nested too deep"),
    ("f'{a\\", "backslash in an expression"), ("f'{a#", "'#' in an expression"),
    ("f(**k, *a", "'*' after '**'"), ("x = 'a\nb", "a newline inside a one-line string"),
    ("x = \\ y", "a continuation takes a newline"), ("print 'x'", "Python 2's print"),
    ("@d\nx = 1", "a decorator takes a def or class"), ("x = b'é", "bytes are ASCII"),
    ("0b2", "not a binary digit"), ("x = 09 ", "leading zeros"), ("x = 1\0", "a null character"),
    ("def 1", "a name is needed"), ("return return ", "keyword twice"), (") = 1", "unmatched ')'"),
]  # fmt: skip


@pytest.fixture(scope="module")
def syntax() -> Syntax:
    return Syntax()


def _first_dead(syntax: Syntax, text: str) -> int | None:
    """Length of the shortest dead prefix (None: all live), by bisection: a prefix of a
    live text is live (what `test_every_prefix_of_real_code_is_live` backs)."""
    if syntax.live(text):
        return None
    lo, hi = 0, len(text)  # prefix lo is live, prefix hi dead
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if syntax.live(text[:mid]) else (lo, mid)
    return hi


def test_snippets_are_the_statements_ast_reads():
    root = Path(sysconfig.get_paths()["stdlib"])
    checked = 0
    for name in ("textwrap.py", "json/decoder.py", "tomllib/_parser.py"):
        source = (root / name).read_text(encoding="utf-8")
        nodes = ast.parse(source).body
        assert module_statements(name) == [ast.get_source_segment(source, n) for n in nodes]
        checked += len(nodes)
    assert checked > 60


def test_live_cases_are_live_and_their_continuations_parse(syntax):
    bad = [(p, w) for p, w in LIVE if not (parses(p + w) and syntax.live(p))]
    assert bad == []
    assert len(LIVE) > 30


def test_dead_cases_are_dead_and_no_continuation_tried_parses(syntax):
    bad = [p for p, _ in DEAD if syntax.live(p) or any(parses(p + b) for b in BATTERY)]
    assert bad == []
    assert len(DEAD) > 25


def _cut_prefixes(syntax: Syntax, snippets: list[str]) -> tuple[list[str], int]:
    """The first dead prefix of each snippet that has one, and how many prefixes were asked."""
    checked = 0
    cut = []
    for s in snippets:
        for k in range(len(s) + 1):
            checked += 1
            if not syntax.live(s[:k]):
                cut.append(s[:k])
                break
    return cut, checked


def test_every_prefix_of_real_code_is_live(syntax):
    cut, checked = _cut_prefixes(syntax, library_snippets(12) + list(WRITTEN))
    assert cut == []
    assert checked > 5_000


@pytest.mark.slow
def test_every_prefix_of_more_real_code_is_live(syntax):
    cut, checked = _cut_prefixes(syntax, library_snippets(400, longest=1500))
    assert cut == []
    assert checked > 150_000


def test_complete_is_ast_parse_and_implies_live(syntax):
    texts = [s[:k] for s in WRITTEN for k in range(0, len(s) + 1, 7)] + list(WRITTEN)
    wrong = [t for t in texts if syntax.complete(t) != parses(t)]
    unlive = [t for t in texts if syntax.complete(t) and not syntax.live(t)]
    assert wrong == [] and unlive == []
    assert sum(map(syntax.complete, texts)) >= len(WRITTEN)


def test_first_dead_prefix_of_mutants_is_dead_for_codeop_and_every_continuation(syntax):
    checked = 0
    disagree = []
    for m in mutants(library_snippets(40, longest=600) + list(WRITTEN), each=3, seed=1):
        k = _first_dead(syntax, m)
        if k is None:
            continue
        checked += 1
        dead = m[:k]
        verdict = codeop_verdict(dead)
        masked = verdict == "incomplete" and (
            last_strings_invalid(dead) or unclosed_string_unclosable(dead)
        )
        if (verdict != "error" and not masked) or any(parses(dead + b) for b in BATTERY):
            disagree.append(dead)
    assert disagree == []
    assert checked > 60


def test_last_live_prefix_of_mutants_has_a_continuation_that_parses(syntax):
    found = tried = 0
    for m in mutants(library_snippets(8, longest=250), each=2, seed=2):
        k = _first_dead(syntax, m)
        last = m if k is None else m[: k - 1]
        tried += 1
        found += witness(last, syntax.live, budget=600) is not None
    # The search is bounded: a miss is a continuation not found, not a wrong verdict.
    assert found >= 0.9 * tried
    assert tried == 16


def test_partial_utf8_is_live_when_some_character_keeps_it_live(syntax):
    snowman = "x = '☃'".encode()
    assert syntax.live_bytes(snowman[:-2])  # inside the string: any character
    assert syntax.live_bytes("π".encode()[:1])  # may start an identifier
    assert not syntax.live_bytes(b"x = b'" + "é".encode()[:1])  # bytes are ASCII
    assert not syntax.live_bytes(b"\xff")  # never UTF-8
    assert syntax.complete_bytes(snowman) and not syntax.complete_bytes(snowman[:-1])
