"""outside_stacklevel: a warning names the first frame outside genlm_lab and the stdlib."""

import asyncio
import warnings

import pytest

from genlm_lab.util.stack import outside_stacklevel


def test_called_from_outside_the_package_it_names_the_caller_itself():
    assert outside_stacklevel() == 1


def test_through_the_package_and_asyncio_it_names_the_users_line():
    from genlm_lab.control.constraint.budget import FinishGuide
    from genlm_lab.control.constraint.budget.tokens import byte_trie
    from genlm_lab.control.constraint.errors import FinishWarning
    from genlm_lab.control.constraint.json.schema import JsonSchema

    js = JsonSchema({"type": "object", "properties": {"p": {"type": "string",
                     "pattern": "^(?=a)ab$"}}, "required": ["p"]})  # fmt: skip
    tokens = [bytes([b]) for b in range(128)]
    trie = byte_trie(tokens, range(len(tokens)))
    guide = FinishGuide(js.finish, tokens, trie, reuses=js.finish_reuses)

    async def from_a_coroutine():  # the warning is raised two modules deep in genlm_lab
        await asyncio.sleep(0)
        return guide.needed(tuple(b'{"p": "a'))

    with pytest.warns(FinishWarning) as caught:
        assert asyncio.run(from_a_coroutine()) is None
    assert caught[0].filename == __file__


def test_a_warning_from_inside_the_package_does_not_name_the_package(monkeypatch):
    import genlm_lab.util.stack as stack

    # Pretend this test file is the package's: the frame named must then be pytest's.
    monkeypatch.setattr(stack, "_PACKAGE", __file__)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.warn("x", UserWarning, stacklevel=outside_stacklevel())
    assert caught[0].filename != __file__
