"""Checks every potential offers on itself: are its four methods one consistent function?

A potential is one weight function seen four ways (`prefix`, `complete`,
`logw_next`, and the `batch_*` versions). A custom potential that gets one of
them wrong makes samplers silently draw from the wrong distribution, so these
checks compare the ways against each other on given contexts and raise an
`AssertionError` that names the first token where they disagree:

- `assert_logw_next_consistency`: `logw_next(x)[y] == prefix(x + [y]) - prefix(x)`
  (EOS: `complete(x) - prefix(x)`);
- `assert_autoreg_fact`: `complete(x) - prefix([])` is the sum of the
  next-token weights along `x`, plus EOS at the end;
- `assert_batch_consistency`: every `batch_*` method equals its one-context method;
- `assert_contract`: all three. The names follow genlm-control.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["PotentialChecks"]


def _close(want: float, have: float, rtol: float, atol: float) -> bool:
    if want == have:  # also both -inf or both +inf
        return True
    return bool(np.isclose(have, want, rtol=rtol, atol=atol))


def _fail(what: str, where: str, want: float, have: float, rtol: float, atol: float) -> None:
    raise AssertionError(
        f"{what} disagree at {where}: expected {want!r}, got {have!r} "
        f"(|diff| {abs(want - have) if np.isfinite(want - have) else 'inf'}, "
        f"rtol={rtol}, atol={atol})"
    )


def _rows(weights: Any) -> list[np.ndarray]:
    """One 1-d array per context from a batch result (a list of LazyWeights or a 2-d array)."""
    data = getattr(weights, "weights", None)
    if isinstance(data, np.ndarray) and data.ndim == 2:
        return list(data)
    return [np.asarray(w.weights) for w in weights]


class PotentialChecks:
    """Mixin of `Potential`: self-consistency assertions for testing a potential."""

    async def assert_logw_next_consistency(
        self,
        context: Sequence[Any],
        rtol: float = 1e-3,
        atol: float = 1e-5,
        top: int | None = None,
        verbosity: int = 0,
        method_args: tuple = (),
    ) -> None:
        """Assert `logw_next(context)[y] == score(context + [y]) - prefix(context)` for each y.

        Args:
            context: the context to check.
            rtol: relative tolerance, as in `numpy.isclose`.
            atol: absolute tolerance, as in `numpy.isclose`.
            top: check only the `top` tokens of greatest weight (all by default).
            verbosity: > 0 prints each compared token.
            method_args: extra positional arguments for `logw_next`, `prefix`, `batch_score`.

        Raises:
            AssertionError: naming the first token where they disagree.
        """
        context = list(context)
        weights = await self.logw_next(context, *method_args)
        base = await self.prefix(context, *method_args)
        ws = np.asarray(weights.weights, dtype=float)
        order = np.argsort(-ws, kind="stable")
        if top is not None:
            order = order[:top]
        tokens = [self.vocab_eos[i] for i in order]
        scores = await self.batch_score([[*context, y] for y in tokens], *method_args)
        for i, y, score in zip(order, tokens, scores, strict=True):
            want = float(score) - base if base != -np.inf else -np.inf
            have = float(ws[i])
            if verbosity > 0:
                print(f"{y!r}: logw_next {have:.6g}, score difference {want:.6g}")
            if not _close(want, have, rtol, atol):
                _fail(
                    "logw_next consistency: logw_next and score - prefix",
                    f"token {y!r}",
                    want,
                    have,
                    rtol,
                    atol,
                )

    async def assert_autoreg_fact(
        self,
        context: Sequence[Any],
        rtol: float = 1e-3,
        atol: float = 1e-5,
        verbosity: int = 0,
        method_args: tuple = (),
    ) -> None:
        """Assert `complete(context) - prefix([])` equals the sum of next-token weights along it.

        Raises:
            AssertionError: if the two sides differ beyond the tolerances.
        """
        context = list(context)
        rows = await asyncio.gather(
            *(self.logw_next(context[:t], *method_args) for t in range(len(context) + 1))
        )
        have = sum(rows[t][context[t]] for t in range(len(context))) + rows[-1][self.eos]
        want = await self.complete(context, *method_args) - await self.prefix([], *method_args)
        if verbosity > 0:
            print(f"{context!r}: complete - prefix([]) {want:.6g}, sum of logw_next {have:.6g}")
        if not _close(float(want), float(have), rtol, atol):
            _fail(
                "Factorization not satisfied: complete and the sum of logw_next",
                f"context {context!r:.60}",
                float(want),
                float(have),
                rtol,
                atol,
            )

    async def assert_batch_consistency(
        self,
        contexts: Sequence[Sequence[Any]],
        rtol: float = 1e-3,
        atol: float = 1e-5,
        verbosity: int = 0,
        batch_method_args: tuple = (),
        method_args: tuple = (),
    ) -> None:
        """Assert each `batch_*` method equals its one-context method on every context.

        Raises:
            AssertionError: naming the method, the context and (for rows) the token.
        """
        contexts = [list(c) for c in contexts]
        for name in ("prefix", "complete", "score"):
            batch = await getattr(self, f"batch_{name}")(contexts, *batch_method_args)
            singles = await asyncio.gather(
                *(getattr(self, name)(c, *method_args) for c in contexts)
            )
            for context, have, want in zip(contexts, batch, singles, strict=True):
                if verbosity > 0:
                    print(f"{name}({context!r}): batch {have!r}, single {want!r}")
                if not _close(float(want), float(have), rtol, atol):
                    _fail(
                        f"Batch {name} mismatch: batch_{name} and {name}",
                        f"context {context!r:.60}",
                        want,
                        have,
                        rtol,
                        atol,
                    )
        batch = _rows(await self.batch_logw_next(contexts, *batch_method_args))
        singles = await asyncio.gather(*(self.logw_next(c, *method_args) for c in contexts))
        for context, have, want in zip(contexts, batch, singles, strict=True):
            want = np.asarray(want.weights, dtype=float)
            for i in range(len(want)):
                if not _close(float(want[i]), float(have[i]), rtol, atol):
                    _fail(
                        "Batch logw_next mismatch: batch_logw_next and logw_next",
                        f"context {context!r:.60}, token {self.vocab_eos[i]!r}",
                        float(want[i]),
                        float(have[i]),
                        rtol,
                        atol,
                    )

    async def assert_contract(
        self,
        contexts: Sequence[Sequence[Any]],
        batch_contexts: Sequence[Sequence[Any]] | None = None,
        rtol: float = 1e-3,
        atol: float = 1e-5,
        top: int | None = None,
        verbosity: int = 0,
    ) -> None:
        """All three checks: each context alone, then `batch_contexts` (default `contexts`) as one batch.

        Pass `batch_contexts=[]` to skip the batch check.
        """
        for context in contexts:
            await self.assert_logw_next_consistency(
                context, rtol=rtol, atol=atol, top=top, verbosity=verbosity
            )
            await self.assert_autoreg_fact(context, rtol=rtol, atol=atol, verbosity=verbosity)
        group = contexts if batch_contexts is None else batch_contexts
        if group:
            await self.assert_batch_consistency(group, rtol=rtol, atol=atol, verbosity=verbosity)
