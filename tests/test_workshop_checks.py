"""Workshop checks name the common mistakes: on plain values, and in notebook 06 itself.

The notebook tests run 06_workshop.ipynb's own cells in-process (top-level
await as IPython runs it), with one answer block replaced by a typical wrong
answer, and assert that the checking cell fails with the message that names
that mistake, while the worked answers pass.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import re
import warnings
from pathlib import Path

import nbformat
import numpy as np
import pytest
import torch

from genlm_lab.workshop import BEGIN, END
from genlm_lab.workshop_checks import AnswerError, answer_list, answer_number

NOTEBOOK = Path(__file__).parents[1] / "notebooks" / "06_workshop.ipynb"


async def _coro():
    return 1.0


def test_answer_number_names_a_forgotten_await_and_leaves_no_warning():
    coro = _coro()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "coroutine was never awaited" would fail here
        with pytest.raises(AnswerError, match=r"`x` is a coroutine .*forgotten `await`"):
            answer_number("x", coro)
    assert inspect.getcoroutinestate(coro) == inspect.CORO_CLOSED


def test_answer_list_names_a_gathering_future_and_a_list_of_coroutines():
    async def main():
        fut = asyncio.gather(_coro(), _coro())
        with pytest.raises(AnswerError, match=r"is a future \(_GatheringFuture\).*await"):
            answer_list("rows", fut, 2)
        await fut
        with pytest.raises(AnswerError, match=r"holds 2 un-awaited coroutine.*asyncio.gather"):
            answer_list("rows", [_coro(), _coro()], 2)

    asyncio.run(main())


@pytest.mark.parametrize(
    ("value", "match"),
    [
        (..., "still `...`"),
        (np.array([0.1, 0.2]), r"array of shape \(2,\)"),
        (torch.zeros(3, 2), r"array of shape \(3, 2\)"),
        ("0.5", "a str, but one number"),
        (None, "a NoneType, but one number"),
        (type("ByteBeamState", (), {"logZ": -1.0})(), r"ByteBeamState.*`\.logZ`"),
    ],
)
def test_answer_number_names_wrong_forms(value, match):
    with pytest.raises(AnswerError, match=match):
        answer_number("x", value)


@pytest.mark.parametrize("value", [0.25, 1, np.float32(0.25), torch.tensor(0.25), np.array([0.25])])
def test_answer_number_accepts_numbers_and_one_element_arrays(value):
    assert answer_number("x", value) == pytest.approx(0.25 if value != 1 else 1.0)


def test_answer_list_checks_length_and_type():
    assert answer_list("rows", (1, 2), 2) == [1, 2]
    with pytest.raises(AnswerError, match="has 1 entries, expected 2"):
        answer_list("rows", [1], 2)
    with pytest.raises(AnswerError, match="a dict, expected a list of 2"):
        answer_list("rows", {}, 2)


# -- notebook 06, cell by cell ----------------------------------------------------------


def _cells() -> list[str]:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    return [c.source for c in nb.cells if c.cell_type == "code"]


async def _run(source: str, ns: dict) -> None:
    code = compile(source, "<cell>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    result = eval(code, ns)  # noqa: S307 - the repo's own notebook
    if inspect.iscoroutine(result):
        await result


def _replace_answers(source: str, answers: list[str]) -> str:
    blocks = iter(answers)
    pattern = re.compile(rf"^([ \t]*){re.escape(BEGIN)}\n.*?^[ \t]*{re.escape(END)}$", re.M | re.S)

    def sub(m: re.Match) -> str:
        indent = m[1]
        body = "\n".join(indent + line for line in next(blocks).splitlines())
        return f"{indent}{BEGIN}\n{body}\n{indent}{END}"

    return pattern.sub(sub, source)


# (exercise's answer cell marker, wrong answer blocks, what the check must say)
MISTAKES = [
    ("rows = await", ["rows = asyncio.gather(*(llm.next_token_logprobs(c) for c in contexts))"],
     r"`rows` is a future .*forgotten `await`"),
    ("rows = await", ["rows = [llm.next_token_logprobs(c) for c in contexts]"],
     r"un-awaited coroutine.*asyncio.gather"),
    ("rows = await", ["rows = [await llm.next_token_logprobs(c) for c in contexts]"],
     r"ran 4 forwards for 4 prompts.*asyncio.gather"),
    ("p_ab = ", ["p_ab = trie.weight_sum(probs)"], r"`p_ab` is an array of shape"),
    ("p_ab = ", ["p_ab = probs[vocab.index(b'ab')]"], r"counts every token below it"),
    ("p_b_given_a", ["p_b_given_a = ..."], r"still `...`"),
    ("logp_abab", ["beam = await ByteBeamState.initial(toy, BeamParams(K=1))\n"
                   "for byte in b'abab':\n    beam = await (beam.prune() << byte)\n"
                   "logp_abab = beam.logZ"], r"narrow beam .* increase K"),
    ("logp_abab", ["beam = await ByteBeamState.initial(toy, BeamParams(K=64))\n"
                   "for byte in b'abab':\n    beam = await (beam.prune() << byte)\n"
                   "logp_abab = beam"], r"ByteBeamState, not a number.*\.logZ"),
    ("class ContainsBA", ["self.sample(self.context.next_token())",
                          "self.condition(b'ba' in self.context.text_bytes())"],
     r"no particle drew a token.*await self.sample"),
    ("class ContainsBA", ["await self.sample(self.context.next_token())", "pass"],
     r"texts without 'ba' keep weight"),
    ("class ContainsBA", ["await self.sample(self.context.next_token())",
                          "self.condition(b'xyz' in self.context.text_bytes())"],
     r"every particle died"),
    ("allowed_mass", ["allowed_mass = np.exp((await toy_llm.logw_next([])).weights)"],
     r"`allowed_mass` is an array of shape \(7,\)"),
    ("allowed_mass", ["allowed_mass = float(np.exp((await toy_llm.logw_next([])).weights).sum())"],
     r"1 is the mass of every token"),
    ("allowed_mass", ["lw = (await toy_llm.logw_next([])).weights\n"
                      "allowed_mass = float(lw[ab_rx.allowed([])].sum())"],
     r"exponentiate the log-weights"),
]  # fmt: skip


async def _run_cells(sources: list[str], ns: dict) -> BaseException | None:
    """Run cells in `ns`; the first failed assert is returned (None: all passed)."""
    for source in sources:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # never-awaited, all-dead runs
                await _run(source, ns)
        except AssertionError as err:
            return err
    return None


@pytest.fixture(scope="module")
def solved():
    """(cells, namespace) after running the worked notebook once; None if a check failed."""
    if not NOTEBOOK.exists():
        pytest.skip("notebooks/06_workshop.ipynb is not in this checkout")
    cells, ns = _cells(), {}
    err = asyncio.run(_run_cells(cells, ns))
    return cells, ns, err


def test_worked_answers_pass_every_check(solved):
    assert solved[2] is None


@pytest.mark.parametrize(
    ("marker", "answers", "message"), MISTAKES, ids=[m[2][:30] for m in MISTAKES]
)
def test_each_common_mistake_gets_its_message(solved, marker, answers, message):
    # Re-run one exercise (its answer cell, with the mistake, up to its checking cell) in a
    # copy of the solved notebook's namespace.
    cells, ns, _ = solved
    start = next(i for i, c in enumerate(cells) if BEGIN in c and marker in c)
    stop = next(i for i in range(start, len(cells)) if "NBVAL_CHECK_OUTPUT" in cells[i])
    sources = [_replace_answers(cells[start], answers), *cells[start + 1 : stop + 1]]
    err = asyncio.run(_run_cells(sources, dict(ns)))
    assert err is not None, f"the mistake {answers} passed every check"
    assert re.search(message, str(err), re.S), str(err)
