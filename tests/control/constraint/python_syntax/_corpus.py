"""Python snippets for the syntax tests: real code from the standard library, and
hand-written ones for what it rarely shows; and the independent judges of a prefix."""

from __future__ import annotations

import ast
import codeop
import keyword
import random
import re
import sysconfig
import warnings
from collections import deque
from collections.abc import Callable
from functools import cache
from pathlib import Path

# Standard-library modules read for snippets: varied styles, every statement kind among them.
MODULES = (
    "textwrap.py", "fractions.py", "dataclasses.py", "functools.py", "json/decoder.py",
    "json/encoder.py", "string.py", "shlex.py", "enum.py", "argparse.py", "tomllib/_parser.py",
    "asyncio/tasks.py", "re/_parser.py", "statistics.py", "difflib.py", "pprint.py",
    "contextlib.py", "heapq.py", "zipfile.py", "typing.py", "pathlib.py", "inspect.py",
)  # fmt: skip

# What the library seldom has: match, walrus, async, f-strings of every kind, escapes,
# continuations, tabs, form feeds, decorators, star targets, positional-only parameters.
WRITTEN = (
    "match command.split():\n    case [action]:\n        pass\n    case ['go', d] if d:\n"
    "        go(d)\n    case {'x': 1, **rest}:\n        pass\n    case Point(x=0, y=_) | None:\n"
    "        pass\n    case -1 + 2j | 3.5 | 'a' 'b' | b'c':\n        pass\n    case [*_, (a, b)] as c:\n"
    "        pass\n    case _:\n        pass\n",
    "if (n := len(a)) > 10:\n    print(f'{n=} {n!r:>{width}} {a[0]:.2f} {{literal}}')\n",
    "async def main(urls):\n    async with session() as s, other() as t:\n"
    "        async for x in s:\n            await x\n    return [y async for y in t if await y]\n",
    "@decorator(arg)\n@other.attr\nclass A(B, metaclass=M):\n    '''Doc \\N{BULLET} \\x41\\u00e9'''\n"
    "    x: int = 1\n\n    def f(self, a, /, b=2, *args: int, c, d=4, **kw) -> 'A':\n"
    "        return lambda x, *y, z=1, **w: (x, y)\n",
    "total = 1 + \\\n    2 + \\\n    3\nitems = [\n    1,  # one\n    2,\n]\nx = y = z = 0\n",
    "try:\n    pass\nexcept* ValueError as e:\n    raise\nexcept* (TypeError, KeyError):\n"
    "    pass\nelse:\n    pass\nfinally:\n    del a[0], b.c\n",
    "with (open('a') as f,\n      open('b') as g):\n    data = rb'\\d+' + b'\\x00\\n' + Rb\"\\\\\"\n",
    "s = f'''multi\n{x\n + y}\nline''' + F\"{'nested'}\" + rf'\\d{x}' + fr\"{x!a}\"\n",
    "def g():\n\tif a:\n\t\treturn (yield from b)\n\telse:\n\t\tnonlocal_ = [*a, *b]\n",
    "\x0cimport os.path as p, sys\nfrom . import (a,\n    b as c,)\nfrom ..x.y import *\n",
    "global g\nfor i, (j, *k) in enumerate(z):\n    if i: continue\n    elif j: break\nelse: pass\n",
    "x = 0x_1f + 0o17 + 0b1_0 + 1_000.5e-3j + .5 + 5. + 1e10 + 0\nassert x, 'msg'\n",
    "é = 'ünïcode ☃'\nπ = 3.14\nprint(é, π, sep='\\t', end='\\r\\n')\n",
    "d = {**a, 'k': v} if 0 else {k: v for k, v in x.items() if v}\n",
    "while not done and (x or y) is not None:\n    x[1:2, ::3, ...] @= m ** -2 // 3 % 4\n",
    "print(*args, **kwargs, sep='')\nf(x for x in y)\nz = not -~+x << 2 >> 1 & 3 ^ 4 | 5\n",
    "class C:\n    def __init__(self): self.x = 1; self.y = 2\n\n\n    # trailing comment\n",
    "r = 'a' 'b' \"c\" '''d''' f'e{1}'\nt = b'a' B'b' rb'c'\nu = u'x'\n",
    "if a:\r\n    b = 1\r\nelse:\r\n    b = 2\r\n",
)


def library_snippets(count: int, longest: int = 700) -> list[str]:
    """`count` top-level statements of the modules above, each 80 to `longest` characters."""
    found = [s for s in _statements() if 80 <= len(s) <= longest]
    random.Random(0).shuffle(found)
    return found[:count]


@cache
def _statements() -> tuple[str, ...]:
    """The top-level statements of all the modules, read once."""
    return tuple(s for name in MODULES for s in module_statements(name))


def module_statements(name: str) -> list[str]:
    """The source text of each top-level statement of a standard-library module: what
    `ast.get_source_segment` gives, without it splitting the module again for each node."""
    source = (Path(sysconfig.get_paths()["stdlib"]) / name).read_text(encoding="utf-8")
    lines = _LINE.findall(source)
    return [_segment(lines, node) for node in ast.parse(source).body]


# A line and its end, as the parser splits them: a form feed ends no line.
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def _segment(lines: list[str], node: ast.stmt) -> str:
    """The node's text: its lines, cut at its columns (counted in UTF-8 bytes)."""
    first, last = node.lineno - 1, node.end_lineno - 1
    if first == last:
        return lines[first].encode()[node.col_offset : node.end_col_offset].decode()
    head = lines[first].encode()[node.col_offset :].decode()
    tail = lines[last].encode()[: node.end_col_offset].decode()
    return head + "".join(lines[first + 1 : last]) + tail


def parses(text: str) -> bool:
    """`ast.parse` accepts the text (warnings ignored): the definition of a complete program."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            ast.parse(text)
        except (SyntaxError, ValueError):
            return False
    return True


def codeop_verdict(text: str) -> str:
    """codeop's answer: "complete", "incomplete" (more lines may finish it) or "error"."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            code = codeop.compile_command(text, "<snippet>", "exec")
        except (SyntaxError, ValueError, OverflowError):
            return "error"
    return "incomplete" if code is None else "complete"


# Continuations tried on a dead prefix: closers, operands, block bodies, keyword ends.
BATTERY = (
    "", "\n", " x", "x", "0", ")", "]", "}", ":", "'", '"', "'''", '"""', ":\n    pass\n",
    " in x:\n    pass\n", "\n    pass\n", " else x", "=", "==", "j", "0)", "x)", "x]", "x}",
    "))", "]]", "}}", "'\n", "')", "':", "x:\n    pass\n", "}'", "'}'", "0'", "(x)",
)  # fmt: skip
_PIECES = (
    "():\n    pass\n", "()", "(x)", ": pass\n", "\n", " x", "x", "0", ")", "]", "}", ":", "'",
    '"', "'''", '"""', "\n    pass\n", " pass\n", " in x", " else x", "=", "0j", " import x",
    " as x", "}'", "'}'", " x:", ",", "(", "\n    ", "= x", "\\\n", "_", "=x)", " = x",
    "x:\n    pass\n", " for x in x", "    ", "  ", "except:\n    pass\n", "'''\n",
)  # fmt: skip


def witness(text: str, live: Callable[[str], bool], budget: int = 1500) -> str | None:
    """A continuation that makes `text` parse, found breadth first over short pieces
    (and the keywords the last word may become) kept only while `live` allows them;
    None if the budget runs out first (not a proof of anything)."""
    word = text[len(text.rstrip("abcdefghijklmnopqrstuvwxyz_")) :]
    pieces = list(_PIECES)
    pieces += [k[len(word) :] + " x" for k in keyword.kwlist if word and k.startswith(word)]
    queue: deque[tuple[str, int]] = deque([("", 0)])
    seen = {""}
    while queue and budget > 0:
        tail, depth = queue.popleft()
        budget -= 1
        if parses(text + tail):
            return tail
        if depth < 4:
            for piece in pieces:
                grown = tail + piece
                if grown not in seen and live(text + grown):
                    seen.add(grown)
                    queue.append((grown, depth + 1))
    return None


def mutants(snippets: list[str], each: int, seed: int) -> list[str]:
    """Snippets with one character inserted, deleted or replaced (seeded)."""
    rng = random.Random(seed)
    chars = list("()[]{}:,.=+-*/%'\"#\\\n \tabcfirx01_@!<>;") + ["if ", "else", " in ", "f'"]
    out = []
    for s in snippets:
        for _ in range(each):
            i = rng.randrange(len(s) + 1)
            kind = rng.choice("idr")
            c = rng.choice(chars)
            out.append(
                s[:i] + c + s[i:]
                if kind == "i"
                else s[:i] + ("" if kind == "d" else c) + s[i + 1 :]
            )
    return out


def last_strings_invalid(text: str) -> bool:
    """Whether the string literals that end `text` (per the `tokenize` module) are invalid
    alone or mix bytes and text: where codeop says "incomplete" only because CPython's
    parser checks a run of strings once the token after it arrives, which never does."""
    import io
    import tokenize

    run: list[str] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.STRING:
                run.append(token.string)
            elif token.type not in (tokenize.NL, tokenize.COMMENT, tokenize.ENDMARKER):
                run = []
    except (tokenize.TokenError, SyntaxError):
        pass
    kinds = {"b" in s[: s.index(s[-1])].lower() for s in run}
    return len(kinds) > 1 or any(not parses("(" + s + "\n)") for s in run)


_STRING_CLOSERS = ("", "0", "00", "0000", "}", "A}", "{x}", "x}")


def unclosed_string_unclosable(text: str) -> bool:
    """Whether `text` ends inside a string literal that none of a few continuations
    (hex digits, a brace, a name's end, then each closing quote) turns into valid code:
    codeop calls any unclosed string "incomplete", whatever its body holds."""
    closers = [c + q for c in _STRING_CLOSERS for q in ("'", '"', "'''", '"""')]
    return not any(parses(text + c + tail) for c in closers for tail in ("", ")", "]", "}"))
