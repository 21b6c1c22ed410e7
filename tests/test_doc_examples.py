"""Every Python example in README.md and docs/ runs, with warnings as errors, as its page says.

The docs have one async style. A ```python block is a notebook cell: the
blocks of a Markdown file run in order in one namespace, inside a running
event loop as a Jupyter kernel's cells do (top-level `await` works;
`asyncio.run` raises "cannot be called from a running event loop", as it
does in Jupyter), from a fresh temporary folder. A block that is a script
carries ``<!-- script -->`` on the line above its fence and says so in its
first line (``# a script: python my_run.py``); it runs as
``python my_run.py`` would: alone, in its own namespace, with no event loop
running (there `asyncio.run` is the way in, and a top-level `await` is a
syntax error). A block that is not meant to run (a path that exists only on
the reader's machine, a GPU) carries an explicit marker on the line above its
fence::

    <!-- no-run: needs CUDA and the Llama weights -->

and a block that loads the real default model carries ``<!-- slow -->``, which
marks its file's test `slow` (run by `make test`, left out of `make test-quick`).
Markers are HTML comments, so GitHub and the docs site do not show them.

An example must produce what it claims: a claimed output is an `assert`, never
a comment. A comment that reads as an output after an expression
(``x  # ' Paris'``, ``x  # -> 3``) fails the checks here.
"""

from __future__ import annotations

import ast
import asyncio
import gc
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
_MARKER = re.compile(
    r"^\s*<!--\s*(?P<kind>no-run|slow|script)\b\s*(?::\s*(?P<reason>.*?))?\s*-->\s*$"
)
# The first line of a script block: a comment that says it is one.
_SCRIPT_SAYS = re.compile(r"^#.*\bscript\b", re.I)
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
    script: bool = False  # `<!-- script -->`: run alone as `python file.py`, not as a cell

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
                script=any(k == "script" for _, k, _ in markers),
            )
        )
        markers = []
        i = end + 1
    if markers:
        raise ValueError(f"{path.name}:{markers[0][0]}: a marker after the last code fence")
    return blocks


def _fresh_compile(*args: object, **kwargs: object) -> object:
    """`compile` with the garbage collector held off. CPython 3.11.7's AST converter keeps
    its recursion depth in module state, not per call: a finalizer run by a collection in
    the middle (an unawaited coroutine left by another test, whose warning pytest formats
    with `ast.parse`) converts a tree of its own and leaves the outer count off,
    "SystemError: AST constructor recursion depth mismatch", about nothing in the block."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return compile(*args, **kwargs)
    finally:
        if was_enabled:
            gc.enable()


def _compile(block: Block) -> ast.Module:
    """The block as a module whose line numbers are those of the Markdown file.

    A notebook cell may `await` at top level; a script may not (Python refuses it).
    """
    flags = ast.PyCF_ONLY_AST | (0 if block.script else ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    tree = _fresh_compile(block.code, str(block.path), "exec", flags=flags, dont_inherit=True)
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


async def _cell(code: object, namespace: dict) -> object:
    """Evaluate compiled code in the namespace with the loop running, as a kernel does."""
    result = eval(code, namespace)  # noqa: S307 - the repo's own documentation
    if asyncio.iscoroutine(result):
        result = await result
    return result


def _run(code: object, namespace: dict, loop: asyncio.AbstractEventLoop) -> object:
    """Run a notebook cell's code inside the running loop (`asyncio.run` in it fails as in
    Jupyter) and return its value."""
    return loop.run_until_complete(_cell(code, namespace))


def _run_script(block: Block) -> None:
    """Run a script block as `python file.py` would: alone, as __main__, no loop running."""
    code = compile(_compile(block), str(block.path), "exec", dont_inherit=True)
    exec(code, {"__name__": "__main__"})  # noqa: S102 - the repo's own documentation


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
                if block.script:
                    _run_script(block)
                    continue
                tree = _compile(block)
                last = (
                    tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
                )
                _run(_fresh_compile(tree, str(block.path), "exec", flags=flags), namespace, loop)
                if last is not None:
                    expr = ast.Expression(last.value)
                    value = _run(
                        _fresh_compile(expr, str(block.path), "eval", flags=flags), namespace, loop
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
        if block.script and not block.is_python:
            found.append(f"{where}: <!-- script --> on a {block.lang or 'plain'} block")
        if block.is_python and block.script:
            first = block.code.lstrip().splitlines()[0] if block.code.strip() else ""
            if not _SCRIPT_SAYS.match(first):
                found.append(
                    f"{where}: a script block says so in its first line "
                    "(# a script: python my_run.py)"
                )
        if block.is_python and not block.script and re.search(r"\basyncio\.run\(", block.code):
            found.append(
                f"{where}: asyncio.run in a notebook cell fails in Jupyter (a loop is running): "
                "use top-level await, or make the block a script (<!-- script -->) and say so"
            )
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


def test_a_notebook_cell_runs_in_a_running_loop_so_asyncio_run_fails_as_in_jupyter() -> None:
    cell = "```python\nimport asyncio\n\n\nasync def f():\n    return 1\n\n\nx = asyncio.run(f())\n```\n"
    with pytest.raises(RuntimeError, match="running event loop"):
        run_blocks(_blocks(cell))
    ns = run_blocks(_blocks(cell.replace("asyncio.run(f())", "await f()")))
    assert ns["x"] == 1


def test_a_script_block_runs_alone_with_asyncio_run_and_no_loop() -> None:
    script = (
        "```python\ny = 5\n```\n"
        "<!-- script -->\n```python\n# a script: python my_run.py\nimport asyncio\n\n\n"
        "async def main():\n    return 2\n\n\n"
        "assert 'y' not in globals() and __name__ == '__main__'\n"
        "assert asyncio.run(main()) == 2\n```\n"
        "```python\nz = y + 1\n```\n"
    )
    ns = run_blocks(_blocks(script))
    assert ns["z"] == 6 and "main" not in ns  # the script kept to its own namespace
    with pytest.raises(SyntaxError):  # python refuses a top-level await in a script
        run_blocks(
            _blocks(
                "<!-- script -->\n```python\n# a script\nimport asyncio\nawait asyncio.sleep(0)\n```\n"
            )
        )


def test_the_async_style_is_checked() -> None:
    page = ROOT / "page.md"
    found = problems(
        page,
        "```python\nimport asyncio\nasyncio.run(asyncio.sleep(0))\n```\n"
        "<!-- script -->\n```python\nimport asyncio\nasyncio.run(asyncio.sleep(0))\n```\n"
        "<!-- script -->\n```bash\nls\n```\n",
    )
    assert found == [
        "page.md:2: asyncio.run in a notebook cell fails in Jupyter (a loop is running): use "
        "top-level await, or make the block a script (<!-- script -->) and say so",
        "page.md:7: a script block says so in its first line (# a script: python my_run.py)",
        "page.md:12: <!-- script --> on a bash block",
    ]
    said = "<!-- script -->\n```python\n# a script: python run.py\nimport asyncio\n```\n"
    assert problems(page, said) == []


class _ParsesWhenCollected:
    """A cycle whose finalizer parses Python, as pytest's hook for an unawaited coroutine's
    warning does when it formats the traceback."""

    def __init__(self) -> None:
        self.itself = self

    def __del__(self) -> None:
        ast.parse("a = (1 + (2 + (3 + 4)))")


def test_a_collection_during_compile_cannot_upset_the_ast_depth_count() -> None:
    source = "\n".join(f"x{i} = [{i}, ({i}, {{'k': {i}}})]" for i in range(300))
    threshold = gc.get_threshold()
    gc.set_threshold(5, 1_000_000, 1_000_000)  # young collections only: cheap
    try:
        trees = []
        for _ in range(20):
            for _ in range(50):
                _ParsesWhenCollected()
            trees.append(_fresh_compile(source, "s", "exec", flags=ast.PyCF_ONLY_AST))
    finally:
        gc.set_threshold(*threshold)
    assert len(trees) == 20 and all(len(tree.body) == 300 for tree in trees)
