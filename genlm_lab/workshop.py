"""Reset the exercises of a workshop notebook, so a teaching session starts blank.

An exercise cell marks its worked answer between two comment lines::

    # BEGIN ANSWER
    answer = 42
    # END ANSWER

`reset_exercises` replaces each such block with a placeholder (``answer = ...``
lines keep their left-hand side, `def` lines keep their signature) and clears the outputs of the notebook, leaving the
checking cells (plain asserts with explanations) untouched. Cells tagged
``leader`` (notes for whoever runs the workshop) are left out of the copy.

The copy is written elsewhere (`out`); overwriting the notebook itself loses its
answers, so it needs `in_place=True` (`--in-place` on the command line).
"""

from __future__ import annotations

import keyword
import re
from pathlib import Path

import nbformat

BEGIN = "# BEGIN ANSWER"
END = "# END ANSWER"
PLACEHOLDER = "# YOUR ANSWER HERE (replace the ... below)"
#: Cells with this tag are notes for the workshop leader: the blank copy leaves them out.
LEADER_TAG = "leader"

_BLOCK = re.compile(
    rf"^(?P<indent>[ \t]*){re.escape(BEGIN)}[^\n]*\n(?P<body>.*?)^[ \t]*{re.escape(END)}[^\n]*$",
    re.MULTILINE | re.DOTALL,
)
_KEYWORD = "|".join(keyword.kwlist)  # `else: x = 1` is no annotation
_ASSIGN = re.compile(
    r"^(?P<lhs>[A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*"
    rf"|(?!(?:{_KEYWORD})\b)[A-Za-z_][\w.]*\s*:\s*[^=]+?)\s*=(?!=)"  # or `x: int = 1`
)


def blank_answer(source: str) -> str:
    """Replace every answer block in a cell's source by a placeholder.

    Assignments keep their left-hand side (``x = ...``) so the checking cell
    still names what to compute; other lines disappear.
    """

    def _blank(match: re.Match) -> str:
        indent = match["indent"]
        names = []
        lines = match["body"].splitlines()
        i = 0
        while i < len(lines):
            line = lines[i]
            top_level = line.startswith(indent) and not line[len(indent) :][:1].isspace()
            assign = _ASSIGN.match(line[len(indent) :]) if top_level else None
            if assign:
                names.append(f"{indent}{assign['lhs'].rstrip()} = ...")
            elif top_level and line[len(indent) :].startswith(("def ", "async def ")):
                header, i = _def_header(lines, i)
                names.append(f"{header}\n{indent}    ...")
            i += 1
        body = "\n".join(names) if names else f"{indent}..."
        return f"{indent}{BEGIN}\n{indent}{PLACEHOLDER}\n{body}\n{indent}{END}"

    return _BLOCK.sub(_blank, source)


def _def_header(lines: list[str], start: int) -> tuple[str, int]:
    """The signature of the `def` at `lines[start]`, up to the colon that ends it.

    A one-line body (`def f(x): return x`) is cut off and a signature over
    several lines is kept whole. Returns the header and the index of its last line.
    """
    depth = 0
    for j in range(start, len(lines)):
        quote = None
        for pos, ch in enumerate(lines[j]):
            if quote:
                quote = None if ch == quote else quote
            elif ch in "'\"":
                quote = ch
            elif ch == "#":
                break
            elif ch in "([{":
                depth += 1
            elif ch in ")]}":
                depth -= 1
            elif ch == ":" and depth == 0:
                return "\n".join([*lines[start:j], lines[j][: pos + 1]]), j
    return "\n".join(line.rstrip() for line in lines[start:]), len(lines) - 1


def _check_markers(source: str, n_blocks: int, where: str) -> None:
    """Refuse a cell whose BEGIN / END lines do not pair up into `n_blocks` blocks.

    An unterminated or nested block is not matched by `_BLOCK`, so its answer
    would stay in the blank copy.
    """
    lines = [line.strip() for line in source.splitlines()]
    begins = sum(line.startswith(BEGIN) for line in lines)
    ends = sum(line.startswith(END) for line in lines)
    if begins != n_blocks or ends != n_blocks:
        raise ValueError(
            f"{where}: {begins} '{BEGIN}' and {ends} '{END}' lines do not pair up into "
            "blocks; close every answer block (no nesting) before resetting"
        )


def reset_exercises(
    path: str | Path, out: str | Path | None = None, *, in_place: bool = False
) -> int:
    """Write a blank copy of a workshop notebook: answers blanked, leader cells and outputs gone.

    Args:
        path: the notebook with worked answers.
        out: where to write the blank copy.
        in_place: overwrite `path` itself (its answers are lost); needed when
            `out` is None or names `path`.

    Returns:
        The number of answer blocks blanked.

    Raises:
        ValueError: if the copy would overwrite `path` without `in_place`, the
            file is not a notebook, holds no answer block (wrong file?), or a
            cell's markers do not pair up (an answer would stay in the copy);
            nothing is written then.
    """
    try:
        nb = nbformat.read(str(path), as_version=4)
    except (OSError, ValueError):
        raise
    except Exception as err:  # valid JSON that is no notebook: jsonschema / AttributeError
        raise ValueError(f"{path} is not a Jupyter notebook: {err}") from None
    target = Path(path) if out is None else Path(out)
    if not in_place and (out is None or _same_file(target, Path(path))):
        raise ValueError(
            f"refusing to overwrite {path} with its blank copy (its answers would be lost): "
            "write the copy elsewhere with -o BLANK.ipynb, or pass --in-place"
        )
    count = 0
    nb.cells = [c for c in nb.cells if LEADER_TAG not in c.get("metadata", {}).get("tags", [])]
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        n = len(_BLOCK.findall(cell.source))
        _check_markers(cell.source, n, f"{path}, cell {index}")
        if n:
            cell.source = blank_answer(cell.source)
            count += n
        cell.outputs = []
        cell.execution_count = None
    if count == 0:
        raise ValueError(f"{path} has no '{BEGIN}' ... '{END}' block to reset")
    nbformat.write(nb, str(target))
    return count


def _same_file(a: Path, b: Path) -> bool:
    """Whether two paths name one file (by resolved path; a missing `a` is another file)."""
    return a.resolve() == b.resolve()
