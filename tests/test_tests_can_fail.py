"""Tests that can fail: two patterns that pass on nothing are refused in tests/.

1. A test whose only asserts sit in a loop over a collection that may be empty:
   when every particle died, or no step resampled, the loop runs zero times and
   the test passes having checked nothing. A loop over a literal (a non-empty
   list, tuple, dict, string or `range(3)`, or a module-level constant bound to
   one) always runs; any other loop needs an assert outside it (on the
   collection's size, say) or a `pytest.raises`/`warns` block.
2. `assert SomeClass(...) is not None`: a constructor never returns None.

Hypothesis tests (`@given`) are exempt from 1: their examples run by the hundred.
The checker reads the code (ast); it runs nothing. Its own tests below feed it
each pattern and its fix, so it can fail too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_CHECKING_BLOCKS = {"raises", "warns", "deprecated_call"}
_CHECKING_CALLS = ("assert", "_assert", "check", "_check", "compare", "verify", "_verify")


def _name(node: ast.AST) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _always_nonempty(expr: ast.AST, constants: set[str]) -> bool:
    """True where `expr` is a collection literal (or constant) that cannot be empty."""
    if isinstance(expr, (ast.List, ast.Tuple, ast.Set)):
        return bool(expr.elts) and not any(isinstance(e, ast.Starred) for e in expr.elts)
    if isinstance(expr, ast.Dict):
        return bool(expr.keys)
    if isinstance(expr, ast.Constant) and isinstance(expr.value, (str, bytes)):
        return bool(expr.value)
    if isinstance(expr, ast.Name):
        return expr.id in constants
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
        return _always_nonempty(expr.left, constants) or _always_nonempty(expr.right, constants)
    if isinstance(expr, ast.Call):
        name, args = _name(expr.func), expr.args
        if name == "range" and args and all(isinstance(a, ast.Constant) for a in args):
            return len(range(*(a.value for a in args))) > 0
        if name in ("enumerate", "sorted", "reversed", "list", "tuple") and args:
            return _always_nonempty(args[0], constants)
        if name == "zip" and args:
            strict = any(
                k.arg == "strict" and getattr(k.value, "value", False) for k in expr.keywords
            )
            agree = any if strict else all  # zip(strict=True) fails unless all have one length
            return agree(_always_nonempty(a, constants) for a in args)
        if name == "product":  # itertools.product(..., repeat=0) still yields ()
            return all(_always_nonempty(a, constants) for a in args)
        if name in ("items", "keys", "values") and isinstance(expr.func, ast.Attribute):
            return _always_nonempty(expr.func.value, constants)
    return False


def _module_constants(tree: ast.Module) -> set[str]:
    """Module-level names bound once to a non-empty literal (PROMPTS = [...])."""
    bound: dict[str, int] = {}
    literal: set[str] = set()
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign) and node.value is not None:
            targets = [node.target]
        for target in targets:
            if isinstance(target, ast.Name):
                bound[target.id] = bound.get(target.id, 0) + 1
                if _always_nonempty(node.value, literal):
                    literal.add(target.id)
    return {name for name in literal if bound[name] == 1}


def _local_constants(fn: ast.AST, constants: set[str]) -> set[str]:
    """`constants` plus names that `fn` binds once only, at its top level, to a literal."""
    stores: dict[str, int] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            stores[node.id] = stores.get(node.id, 0) + 1
    found = set(constants)
    for node in fn.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name) and stores.get(target.id) == 1:
                if _always_nonempty(node.value, found):
                    found.add(target.id)
    return found


def _checks_outside_loops(fn: ast.AST, constants: set[str]) -> tuple[int, int]:
    """(checks outside any possibly-empty loop, asserts inside one) in `fn`'s own body."""
    outside = inside = 0
    constants = _local_constants(fn, constants)

    def visit(node: ast.AST, in_loop: bool) -> None:
        nonlocal outside, inside
        for child in ast.iter_child_nodes(node):
            if isinstance(child, _SCOPES):
                continue
            if isinstance(child, ast.Assert):
                inside += in_loop
                outside += not in_loop
            elif isinstance(child, (ast.With, ast.AsyncWith)) and not in_loop:
                outside += any(
                    isinstance(i.context_expr, ast.Call)
                    and _name(i.context_expr.func) in _CHECKING_BLOCKS
                    for i in child.items
                )
            elif isinstance(child, ast.Call) and not in_loop:
                outside += _name(child.func).startswith(_CHECKING_CALLS)
            may_skip = isinstance(child, _LOOPS) and not (
                isinstance(child, (ast.For, ast.AsyncFor))
                and _always_nonempty(child.iter, constants)
            )
            visit(child, in_loop or may_skip)

    visit(fn, False)
    return outside, inside


def _hypothesis(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(isinstance(d, ast.Call) and _name(d.func) == "given" for d in fn.decorator_list)


def loop_only_tests(source: str) -> list[str]:
    """Names of the tests in `source` whose every assert sits in a possibly-empty loop."""
    tree = ast.parse(source)
    constants = _module_constants(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith(
            "test"
        ):
            outside, inside = _checks_outside_loops(node, constants)
            if inside and not outside and not _hypothesis(node):
                found.append(node.name)
    return found


def constructor_none_checks(source: str) -> list[int]:
    """Lines of `assert Name(...) is not None` where Name is a class (capitalised)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        test = getattr(node, "test", None) if isinstance(node, ast.Assert) else None
        if (
            isinstance(test, ast.Compare)
            and len(test.ops) == 1
            and isinstance(test.ops[0], ast.IsNot)
            and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value is None
            and isinstance(test.left, ast.Call)
            and _name(test.left.func)[:1].isupper()
        ):
            lines.append(node.lineno)
    return lines


def _test_files() -> list[Path]:
    return sorted(TESTS.rglob("test_*.py"))


def test_no_test_checks_only_inside_a_loop_that_may_not_run():
    files = _test_files()
    assert len(files) > 100  # the whole suite is read, not an empty folder
    found = [
        f"{path.relative_to(TESTS)}::{name}"
        for path in files
        for name in loop_only_tests(path.read_text(encoding="utf-8"))
    ]
    assert not found, "asserts only inside a loop that may run zero times:\n" + "\n".join(found)


def test_no_test_asserts_that_a_constructor_returned_something():
    found = [
        f"{path.relative_to(TESTS)}:{line}"
        for path in _test_files()
        for line in constructor_none_checks(path.read_text(encoding="utf-8"))
    ]
    assert not found, "`assert Class(...) is not None` can never fail:\n" + "\n".join(found)


LOOP_ONLY = """
def test_each_particle(result):
    for particle in live(result):
        assert particle.ok
"""


@pytest.mark.parametrize(
    "fixed",
    [
        # the size checked outside the loop
        LOOP_ONLY.replace("    for particle", "    assert live(result)\n    for particle"),
        # a loop over a literal always runs
        LOOP_ONLY.replace("live(result)", "[1, 2]"),
        # ...as does one over a module-level constant bound to a literal
        "CASES = ('a', 'b')\n" + LOOP_ONLY.replace("live(result)", "CASES"),
        # a pytest.raises block checks something by itself
        LOOP_ONLY + "    with pytest.raises(ValueError):\n        f()\n",
    ],
)
def test_the_loop_check_flags_the_pattern_and_passes_its_fixes(fixed):
    assert loop_only_tests(LOOP_ONLY) == ["test_each_particle"]
    assert loop_only_tests(fixed) == []


def test_the_loop_check_sees_loops_nested_in_ifs_and_withs_and_a_constant_rebound():
    nested = "def test_x(xs):\n    with ctx():\n        if xs:\n            for x in xs:\n                assert x\n"
    assert loop_only_tests(nested) == ["test_x"]
    rebound = "CASES = [1]\nCASES = []\n" + LOOP_ONLY.replace("live(result)", "CASES")
    assert loop_only_tests(rebound) == ["test_each_particle"]
    given = "@given(st.lists(st.integers()))\n" + LOOP_ONLY
    assert loop_only_tests(given) == []
    local = (
        "def test_x():\n    cases = {'a': 1}\n    for k, v in cases.items():\n        assert v\n"
    )
    assert loop_only_tests(local) == []
    grown = local.replace("    for k", "    cases = load()\n    for k")
    assert loop_only_tests(grown) == ["test_x"]
    strict = LOOP_ONLY.replace("live(result)", "zip(live(result), [1, 2], strict=True)")
    assert loop_only_tests(strict) == []
    assert loop_only_tests(strict.replace("strict=True", "strict=False")) == ["test_each_particle"]


def test_the_constructor_check_flags_classes_only():
    assert constructor_none_checks("assert Store(path) is not None\n") == [1]
    assert constructor_none_checks("assert mod.Store(path) is not None\n") == [1]
    assert constructor_none_checks("assert re.fullmatch(p, s) is not None\n") == []
    assert constructor_none_checks("assert cache.get(k) is not None\n") == []
