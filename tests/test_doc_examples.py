"""Every Python example in README.md and docs/ runs, with warnings as errors.

Each ```python block of a Markdown file runs in order in one namespace, as the
cells of a notebook do (top-level `await` included, on one event loop per
file), from a fresh temporary folder. A block that is not meant to run (a path
that exists only on the reader's machine, a GPU) carries an explicit marker on
the line above its fence::

    <!-- no-run: needs CUDA and the Llama weights -->

and a block that loads the real default model carries ``<!-- slow -->``, which
marks its file's test `slow` (run by `make test`, left out of `make test-fast`).
Markers are HTML comments, so GitHub and the docs site do not show them.

An example must produce what it claims: a claimed output is an `assert`, never
a comment. A comment that reads as an output after an expression
(``x  # ' Paris'``, ``x  # -> 3``) fails the checks here.
"""

from __future__ import annotations

import ast
import asyncio
import io
import re
import tokenize
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

PYTHON = {"python", "py", "python3"}
# Python that this runner would not run: write such an example as a python block with asserts.
UNRUN_PYTHON = {"pycon", "ipython", "ipython3", "python-repl", "doctest"}
_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_MARKER = re.compile(r"^\s*<!--\s*(?P<kind>no-run|slow)\b\s*(?::\s*(?P<reason>.*?))?\s*-->\s*$")
# A comment that reads as a claimed output: `# ' Paris'`, `# -> 3`, `# == {...}`.
_CLAIM = re.compile(r"^#\s*(->|=>|==|['\"])")


@dataclass(frozen=True)
class Block:
    """One fenced code block of a Markdown file."""

    path: Path
    line: int  # 1-based line of the block's first code line
    lang: str
    code: str
    no_run: str | None  # the reason given by `<!-- no-run: reason -->`
    slow: bool

    @property
    def is_python(self) -> bool:
        return self.lang in PYTHON


def parse_blocks(path: Path, text: str | None = None) -> list[Block]:
    """The fenced blocks of a Markdown file, with the markers on the line above each.

    Raises:
        ValueError: for a marker that stands above no fence, a `no-run` marker
            without a reason, or a fence that is never closed.
    """
    lines = (path.read_text(encoding="utf-8") if text is None else text).splitlines()
    blocks: list[Block] = []
    markers: list[tuple[int, str, str | None]] = []  # (line, kind, reason) awaiting a fence
    i = 0
    while i < len(lines):
        line = lines[i]
        marker = _MARKER.match(line)
        if marker:
            markers.append((i + 1, marker["kind"], marker["reason"]))
            i += 1
            continue
        fence = _FENCE.match(line)
        if fence is None:
            if line.strip() and markers:
                raise ValueError(
                    f"{path.name}:{markers[0][0]}: a <!-- {markers[0][1]} --> marker must stand "
                    "on the line just above a code fence"
                )
            i += 1
            continue
        indent, mark = fence["indent"], fence["fence"]
        lang = fence["info"].strip().split()[0].lower() if fence["info"].strip() else ""
        close = re.compile(rf"^[ \t]*{re.escape(mark[0])}{{{len(mark)},}}\s*$")
        end = i + 1
        while end < len(lines) and not close.match(lines[end]):
            end += 1
        if end == len(lines):
            raise ValueError(f"{path.name}:{i + 1}: a code fence that is never closed")
        body = [ln[len(indent) :] if ln.startswith(indent) else ln for ln in lines[i + 1 : end]]
        no_run = next((r for _, k, r in markers if k == "no-run"), None)
        if any(k == "no-run" for _, k, _ in markers) and not no_run:
            raise ValueError(f"{path.name}:{i}: <!-- no-run --> needs a reason after a colon")
        blocks.append(
            Block(
                path=path,
                line=i + 2,
                lang=lang,
                code="\n".join(body) + "\n",
                no_run=no_run,
                slow=any(k == "slow" for _, k, _ in markers),
            )
        )
        markers = []
        i = end + 1
    if markers:
        raise ValueError(f"{path.name}:{markers[0][0]}: a marker after the last code fence")
    return blocks


def _compile(block: Block) -> ast.Module:
    """The block as a module whose line numbers are those of the Markdown file."""
    flags = ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    tree = compile(block.code, str(block.path), "exec", flags=flags, dont_inherit=True)
    ast.increment_lineno(tree, block.line - 1)
    return tree


def unchecked_claims(block: Block) -> list[str]:
    """Lines where an expression is followed by a comment claiming its value."""
    tree = _compile(block)
    ends = {node.end_lineno for node in tree.body if isinstance(node, ast.Expr)}
    claims = []
    for tok in tokenize.generate_tokens(io.StringIO(block.code).readline):
        line = tok.start[0] + block.line - 1
        if tok.type == tokenize.COMMENT and line in ends and _CLAIM.match(tok.string):
            claims.append(f"{block.path.name}:{line}: {tok.line.strip()}")
    return claims


def _run(code: object, namespace: dict, loop: asyncio.AbstractEventLoop) -> object:
    """Evaluate compiled code in the namespace, awaiting it on the loop if it awaits."""
    result = eval(code, namespace)  # noqa: S307 - the repo's own documentation
    if asyncio.iscoroutine(result):
        result = loop.run_until_complete(result)
    return result


def run_blocks(blocks: list[Block]) -> dict:
    """Run the Python blocks in order in one namespace, warnings as errors.

    The last expression of a block is evaluated and its `repr` taken, as a
    notebook would display it. Returns the namespace.
    """
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    namespace: dict = {"__name__": "__doc_example__"}
    loop = asyncio.new_event_loop()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for block in blocks:
                if not block.is_python or block.no_run:
                    continue
                tree = _compile(block)
                last = (
                    tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
                )
                _run(compile(tree, str(block.path), "exec", flags=flags), namespace, loop)
                if last is not None:
                    expr = ast.Expression(last.value)
                    value = _run(
                        compile(expr, str(block.path), "eval", flags=flags), namespace, loop
                    )
                    repr(value)
    finally:
        pending = asyncio.all_tasks(loop)
        for task in pending:
            task.cancel()
        if pending:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.close()
    return namespace


def _doc_params() -> list:
    params = []
    for path in DOCS:
        blocks = [b for b in parse_blocks(path) if b.is_python and not b.no_run]
        if not blocks:
            continue
        marks = [pytest.mark.slow] if any(b.slow for b in blocks) else []
        params.append(pytest.param(path, id=str(path.relative_to(ROOT)), marks=marks))
    return params


@pytest.mark.parametrize("path", _doc_params())
def test_examples_run(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The file's Python blocks run in order, in one namespace, warnings as errors."""
    monkeypatch.chdir(tmp_path)  # examples may write files (a results store)
    run_blocks(parse_blocks(path))


def problems(path: Path, text: str | None = None) -> list[str]:
    """What is wrong with a file's code blocks, as far as can be told without running them.

    A python fence the parser missed, a syntax error (raised), a comment that
    claims an output, a marker on a block it does not apply to, Python in a
    fence this runner does not run, an unmarked block that loads the real model.
    """
    text = path.read_text(encoding="utf-8") if text is None else text
    blocks = parse_blocks(path, text)
    found = []
    opened = len(re.findall(r"^[ \t]*```+[ \t]*(?:python|py|python3)\b", text, re.M))
    parsed = sum(b.is_python for b in blocks)
    if parsed != opened:
        found.append(f"{path.name}: {opened} python fences, but {parsed} parsed as blocks")
    for block in blocks:
        where = f"{path.name}:{block.line}"
        if block.is_python:
            found += [
                f"claimed output not checked (use assert): {c}" for c in unchecked_claims(block)
            ]
        if block.slow and not block.is_python:
            found.append(f"{where}: <!-- slow --> on a {block.lang or 'plain'} block")
        if block.no_run and not block.is_python:
            found.append(f"{where}: <!-- no-run --> on a non-Python block is not needed")
        if block.lang in UNRUN_PYTHON:
            found.append(f"{where}: a {block.lang} block would not run; use python with asserts")
        loads_model = re.search(r"load_model_by_name\(\s*['\"](default|smollm2)", block.code)
        if block.is_python and not block.no_run and not block.slow and loads_model:
            found.append(f"{where} loads the real model: mark it <!-- slow -->")
    return found


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_examples_are_well_formed(path: Path) -> None:
    """Every Python block compiles, claims no unchecked output, and is run or skipped on purpose."""
    found = problems(path)
    assert not found, "\n".join(found)


def _blocks(text: str) -> list[Block]:
    return parse_blocks(ROOT / "example.md", text)


def test_runner_runs_every_python_block_in_one_namespace() -> None:
    ns = run_blocks(
        _blocks(
            "```python\nimport asyncio\nx = 1\n```\n\ntext\n\n"
            "```python\nawait asyncio.sleep(0)\ny = x + 1\n```\n"
            "```bash\nexit 1\n```\n"
        )
    )
    assert ns["y"] == 2


def test_runner_fails_on_a_failing_block_warning_or_last_expression() -> None:
    with pytest.raises(AssertionError):
        run_blocks(_blocks("```python\nassert [] and all(x for x in [])\n```\n"))
    with pytest.raises(DeprecationWarning):
        run_blocks(
            _blocks("```python\nimport warnings\nwarnings.warn('old', DeprecationWarning)\n```\n")
        )
    with pytest.raises(ZeroDivisionError) as err:
        run_blocks(_blocks("\n\n```python\nx = 1\n1 / 0\n```\n"))
    assert err.traceback[-1].lineno + 1 == 5  # the line in the Markdown file


def test_runner_skips_only_marked_blocks() -> None:
    ns = run_blocks(
        _blocks(
            "<!-- no-run: needs a GPU -->\n```python\nraise SystemExit\n```\n"
            "<!-- slow -->\n```python\nz = 3\n```\n"
        )
    )
    assert ns["z"] == 3
    with pytest.raises(ValueError, match="reason"):
        _blocks("<!-- no-run -->\n```python\npass\n```\n")
    with pytest.raises(ValueError, match="just above"):
        _blocks("<!-- no-run: x -->\nsome text\n```python\npass\n```\n")
    with pytest.raises(ValueError, match="never closed"):
        _blocks("```python\npass\n")


def test_problems_are_found() -> None:
    page = ROOT / "page.md"
    assert problems(page, "<!-- slow -->\n```python\nx = 1\n```\n") == []
    found = problems(
        page,
        "```pycon\n>>> 1 + 1\n3\n```\n"
        "<!-- slow -->\n```bash\nls\n```\n"
        "```python\nfrom genlm_lab.backend import load_model_by_name\n"
        "llm = load_model_by_name('default')\nllm  # <AsyncTransformer>\n```\n"
        "- a list\n\n  ```python\n  1  # -> 1\n  ```\n",
    )
    assert found == [
        "page.md:2: a pycon block would not run; use python with asserts",
        "page.md:7: <!-- slow --> on a bash block",
        "page.md:10 loads the real model: mark it <!-- slow -->",
        "claimed output not checked (use assert): page.md:17: 1  # -> 1",
    ]
    with pytest.raises(SyntaxError):
        problems(page, "```python\nx = = 1\n```\n")


def test_unchecked_claims_are_found() -> None:
    (block,) = _blocks("```python\nx = 1  # ' Paris'\nx  # ' Paris'\nassert x == 1  # ok\n```\n")
    assert unchecked_claims(block) == ["example.md:3: x  # ' Paris'"]
