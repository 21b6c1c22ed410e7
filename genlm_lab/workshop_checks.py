"""Checks for workshop answers that name the common mistake and what to do about it.

A forgotten `await` leaves a coroutine or future where a value was expected,
and the check that follows then fails deep inside (`object of type
'_GatheringFuture' has no len()`). `answer_number` and `answer_list` look at
the answer first: the placeholder `...`, something awaitable, an array where
one number was asked for, a beam state instead of its `logZ`. Each failure is
an `AnswerError` (an `AssertionError`, so it reads like the notebook's other
checks) whose message says what was found and how to fix it.
"""

from __future__ import annotations

import inspect
from typing import Any

from genlm_lab.util.errors import GenlmLabError

__all__ = ["AnswerError", "answer_list", "answer_number"]


class AnswerError(GenlmLabError, AssertionError):
    """An exercise answer has the wrong form; the message says what to write instead."""


def _awaitable_kind(value: Any) -> str | None:
    """'a coroutine', 'a future' (asyncio.gather's too) or 'a task'; None for a plain value."""
    if inspect.iscoroutine(value):
        return "a coroutine"
    if not inspect.isawaitable(value):
        return None
    return "a task" if type(value).__name__ == "Task" else "a future"


def _close(value: Any) -> None:
    """Silence 'coroutine was never awaited' for a coroutine we report ourselves."""
    if inspect.iscoroutine(value):
        value.close()


def _common(name: str, value: Any) -> None:
    if value is Ellipsis:
        raise AnswerError(f"`{name}` is still `...`: write your answer in the cell above")
    kind = _awaitable_kind(value)
    if kind is not None:
        _close(value)
        raise AnswerError(
            f"`{name}` is {kind} ({type(value).__name__}), not its result: a forgotten `await`. "
            f"Write `{name} = await ...`"
        )


def answer_number(name: str, value: Any) -> float:
    """`value` as a float, or an `AnswerError` naming the mistake.

    Accepts ints, floats, and numpy / torch scalars or one-element arrays.

    Raises:
        AnswerError: for the placeholder `...`, a coroutine or future (a
            forgotten `await`), an object with a `logZ` (a beam: read its
            `.logZ`), an array of several values, or anything else not a number.
    """
    _common(name, value)
    if hasattr(value, "logZ"):
        raise AnswerError(
            f"`{name}` is a {type(value).__name__}, not a number: its log-probability is "
            f"`.logZ` (write `{name} = beam.logZ`)"
        )
    shape = getattr(value, "shape", None)
    if shape is not None and tuple(shape) not in ((), (1,)):
        raise AnswerError(
            f"`{name}` is an array of shape {tuple(shape)}, but one number was asked for: "
            "pick the entry you need, or .sum() the ones that count"
        )
    if isinstance(value, (str, bytes, list, tuple, dict, set)) or value is None:
        raise AnswerError(f"`{name}` is a {type(value).__name__}, but one number was asked for")
    try:
        return float(value.item() if shape is not None else value)
    except (TypeError, ValueError):
        raise AnswerError(
            f"`{name}` is a {type(value).__name__}, but one number was asked for"
        ) from None


def answer_list(name: str, value: Any, length: int) -> list:
    """`value` as a list of `length` plain values, or an `AnswerError` naming the mistake.

    Raises:
        AnswerError: for the placeholder `...`, a coroutine or future (a
            forgotten `await`), a list that holds coroutines (awaited one at a
            time or not at all: gather them), something not a list or tuple,
            or one of another length.
    """
    _common(name, value)
    if not isinstance(value, (list, tuple)):
        raise AnswerError(f"`{name}` is a {type(value).__name__}, expected a list of {length}")
    pending = [v for v in value if _awaitable_kind(v) is not None]
    if pending:
        for v in pending:
            _close(v)
        raise AnswerError(
            f"`{name}` holds {len(pending)} un-awaited coroutine(s): await them together, "
            f"`{name} = await asyncio.gather(*(...))`, so they run as one batch"
        )
    if len(value) != length:
        raise AnswerError(f"`{name}` has {len(value)} entries, expected {length}")
    return list(value)
