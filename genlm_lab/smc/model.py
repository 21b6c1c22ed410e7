"""`Model`: a probabilistic program whose particles SMC runs, plus `SubModel`.

A model is a Python object with an async `step` method. Inference makes one
copy per particle; each `step` extends the particle by sampling from
distributions and changes its log-weight with `observe`, `condition`,
`score` and `twist`. When `done_stepping()` is true the particle is final.
"""

from __future__ import annotations

import contextvars
import copy
import functools
import math
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["Model", "SubModel", "submodel"]

# The parent of each running submodel (by id), per asyncio task: particles step
# in tasks of their own, so one SubModel instance can run in several at once.
_PARENTS: contextvars.ContextVar[dict[int, Model] | None] = contextvars.ContextVar(
    "genlm_lab_submodel_parents", default=None
)


class Model:
    """Base class of probabilistic programs over which SMC runs.

    Subclasses call `super().__init__()` and define `async def step(self)`.
    The log-weight lives in `self.weight`; `self.finished` ends the particle.

    Attributes:
        weight: the particle's log importance weight (0 at the start).
        finished: whether `step` should be called again.
        twist_amount: the part of `weight` added by `twist` since the last step.
        progress_label: the progress bar's label (None: the algorithm's name).
        max_steps: a bound on the number of steps, the progress bar's total (None: unknown).
    """

    progress_label: str | None = None
    max_steps: int | None = None

    def __init__(self) -> None:
        Model.reset(self)  # not self.reset(): a subclass override may need its own fields

    def reset(self) -> None:
        """Forget weight, twist and the finished flag (the state of a new particle)."""
        self.weight = 0.0
        self.finished = False
        self.mode = "sample"
        self.beam_idx = 0
        self.force_eos = False
        self.twist_amount = 0.0

    # ----------------------------------------------------------- copying
    def immutable_properties(self) -> set[str]:
        """Names of attributes that `step` never changes: shared, not copied, between particles.

        Override to share large read-only things (masks, tables, the LM) and make
        cloning cheap; a shared value stays shared wherever else the particle
        refers to it. The default shares nothing.
        """
        return set()

    def __deepcopy__(self, memo: dict) -> Model:
        clone = type(self).__new__(type(self))
        memo[id(self)] = clone
        shared = self.immutable_properties()
        for key, value in self.__dict__.items():
            if key in shared:  # shared wherever the particle refers to it, not only here
                memo[id(value)] = value
        for key, value in self.__dict__.items():
            if key in shared:
                setattr(clone, key, value)
                continue
            try:
                setattr(clone, key, copy.deepcopy(value, memo))
            except TypeError as error:  # e.g. "cannot pickle '_thread.RLock' object"
                raise TypeError(
                    f"cannot copy attribute {key!r} of {type(self).__name__} into a new "
                    f"particle ({error}); if `step` never changes it, list it in "
                    "immutable_properties() so that particles share it"
                ) from error
        return clone

    # ----------------------------------------------------------- weights
    def score(self, score: float) -> None:
        """Multiply the particle's weight by `exp(score)`.

        The primitive under `observe`, `condition`, `twist` and proposals:
        it changes the target distribution.
        """
        score = float(score)
        if math.isnan(score) or score == math.inf:
            shown = "+inf" if score == math.inf else score
            raise ValueError(f"score must be a finite number or -inf, got {shown}")
        self.weight += score

    def condition(self, b: Any) -> None:
        """Require `b` to be true: otherwise the weight becomes 0 (log -inf) and the particle ends."""
        if not b:
            self.score(-math.inf)
            self.finish()

    def twist(self, amt: float) -> None:
        """Multiply the weight by `exp(amt)` until the next step, when it is divided back out.

        A heuristic that steers resampling towards promising particles without
        changing the target distribution. Use `condition` to kill a particle.
        """
        amt = float(amt)
        if not math.isfinite(amt):
            raise ValueError(
                f"twist amount must be finite, got {amt}; use condition(False) to kill a particle"
            )
        self.twist_amount += amt
        self.score(amt)

    def untwist(self) -> None:
        """Remove the twist added since the last step from the weight."""
        if self.twist_amount:
            self.weight -= self.twist_amount
        self.twist_amount = 0.0

    def finish(self) -> None:
        """End the particle: untwist it and mark it finished."""
        self.untwist()
        self.finished = True

    def done_stepping(self) -> bool:
        """Whether the particle is final (by default: `finished`)."""
        return self.finished

    # ----------------------------------------------------------- program
    async def start(self) -> None:
        """Run once per particle before the first step (by default nothing)."""

    async def step(self) -> None:
        """Extend the particle by one step. Every subclass defines it."""
        if not self.done_stepping():
            raise NotImplementedError(f"{type(self).__name__}.step() is not defined")

    async def sample(self, dist: Any, proposal: Any = None) -> Any:
        """Draw a value from `dist`, or from `proposal` with an importance correction.

        With a proposal q the value x is drawn from q and the weight is
        multiplied by p(x) / q(x), so the target stays the model's.

        Args:
            dist: the distribution of the model (anything with async `sample`
                and `log_prob`).
            proposal: an optional distribution to draw from instead.

        Returns:
            The value drawn.
        """
        if proposal is None:
            value, _ = await dist.sample()
            return value
        value, log_q = await proposal.sample()
        if log_q == -math.inf:  # before dist.log_prob, whose side effects would stay
            raise ValueError(f"the proposal drew {value!r}, which has probability 0 under itself")
        log_p = await dist.log_prob(value)
        self.score(log_p - log_q)
        return value

    async def observe(self, dist: Any, x: Any) -> Any:
        """Condition on `dist` producing `x`: multiply the weight by p(x)."""
        self.score(await dist.log_prob(x))
        return x

    async def intervene(self, dist: Any, x: Any) -> Any:
        """Force `dist` to produce `x` (its side effects happen) without weighting by p(x)."""
        await dist.log_prob(x)
        return x

    async def call(self, submodel: SubModel) -> Any:
        """Run a `SubModel` inside this particle and return its result."""
        return await _checked_submodel(submodel).run_with_parent(self)

    # ----------------------------------------------------------- display
    def __str__(self) -> str:
        return "Particle"

    def string_for_serialization(self) -> str:
        """The particle's contents as text, for records, posteriors and views."""
        return str(self)


class SubModel:
    """A reusable piece of a program, run inside a parent particle with `await parent.call(sub)`.

    Its `sample`, `observe`, `score`, ... act on the parent's weight.
    Subclasses define `async def forward(self)`. One instance may be called
    by several particles at once: `parent` is the caller in each of them.
    """

    def __init__(self) -> None:
        self.parent = None

    @property
    def parent(self) -> Model | None:
        """The particle that this call of the submodel weights (None outside a call)."""
        running = (_PARENTS.get() or {}).get(id(self))
        return running if running is not None else self.__dict__.get("_parent")

    @parent.setter
    def parent(self, value: Model | None) -> None:
        self.__dict__["_parent"] = value

    async def run_with_parent(self, parent: Model) -> Any:
        """Run `forward` with `parent` as the particle that is weighted."""
        token = _PARENTS.set({**(_PARENTS.get() or {}), id(self): parent})
        try:
            return await self.forward()
        finally:
            _PARENTS.reset(token)

    async def forward(self) -> Any:
        """The body of the submodel; subclasses define it."""
        raise NotImplementedError(f"{type(self).__name__}.forward() is not defined")

    def _require_parent(self) -> Model:
        if self.parent is None:
            raise RuntimeError(
                f"{type(self).__name__} is not running: call it with `await model.call(submodel)`"
            )
        return self.parent

    async def sample(self, dist: Any, proposal: Any = None) -> Any:
        """`Model.sample` on the parent particle."""
        return await self._require_parent().sample(dist, proposal)

    async def observe(self, dist: Any, x: Any) -> Any:
        """`Model.observe` on the parent particle."""
        return await self._require_parent().observe(dist, x)

    async def intervene(self, dist: Any, x: Any) -> Any:
        """`Model.intervene` on the parent particle."""
        return await self._require_parent().intervene(dist, x)

    def condition(self, b: Any) -> None:
        """`Model.condition` on the parent particle."""
        self._require_parent().condition(b)

    def score(self, score: float) -> None:
        """`Model.score` on the parent particle."""
        self._require_parent().score(score)

    def twist(self, amt: float) -> None:
        """`Model.twist` on the parent particle."""
        self._require_parent().twist(amt)

    async def call(self, submodel: SubModel) -> Any:
        """Run another `SubModel` inside the same parent particle."""
        return await _checked_submodel(submodel).run_with_parent(self._require_parent())


def _checked_submodel(submodel: Any) -> SubModel:
    """`submodel`, or TypeError saying what `call` takes instead."""
    if isinstance(submodel, type):
        raise TypeError(
            f"call() takes a submodel instance, got the class {submodel.__name__}: "
            f"write `await self.call({submodel.__name__}(...))` with its arguments"
        )
    if not callable(getattr(submodel, "run_with_parent", None)):
        raise TypeError(
            f"call() takes a SubModel instance, got {type(submodel).__name__} {submodel!r:.60}, "
            "not a SubModel; decorate an async function with @submodel, then "
            "`await self.call(f(...))`"
        )
    return submodel


def submodel(f: Callable[..., Awaitable[Any]]) -> type[SubModel]:
    """Turn `async def f(self, *args)` into a `SubModel` class built with `f`'s arguments.

    Example:
        ```python
        @submodel
        async def two_tokens(self, context):
            a = await self.sample(context.next_token())
            b = await self.sample(context.next_token())
            return a, b

        pair = await model.call(two_tokens(model.context))
        ```
    """

    class _FunctionSubModel(SubModel):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__()
            self.args = args
            self.kwargs = kwargs

        async def forward(self) -> Any:
            return await f(self, *self.args, **self.kwargs)

    functools.update_wrapper(_FunctionSubModel, f, updated=())
    return _FunctionSubModel
