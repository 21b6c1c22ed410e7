"""`StatefulByteLM`: the interface of a language model over bytes."""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from genlm_lab.util import Chart
from genlm_lab.util.progress import progress_bar, progress_enabled

if TYPE_CHECKING:
    from genlm_lab.bytes.probs import LazyByteProbs


def sample_dict(chart: Chart, rng: random.Random | None = None) -> int:
    """Draw a key of `chart` with probability proportional to its (non-negative) value."""
    keys = list(chart.keys())
    weights = [float(chart[k]) for k in keys]
    if not keys or sum(weights) <= 0:
        raise ValueError("cannot sample from a distribution with no positive mass")
    return (rng or random).choices(keys, weights=weights, k=1)[0]


PROGRESS_MIN_BYTES = 48
"""Reads and generations of more bytes than this show a progress bar (in a notebook)."""


def byte_bar(n: int, desc: str, progress: bool | None):
    """A progress bar over `n` bytes, or a silent one for short runs and outside notebooks."""
    enabled = progress_enabled(progress) and (progress is True or n > PROGRESS_MIN_BYTES)
    return progress_bar(total=n, desc=desc, enabled=enabled, unit="B")


class StatefulByteLM(ABC):
    """A language model over bytes whose state advances one byte at a time.

    Subclasses implement `await (state << byte)` and `await state.logp_next()`;
    `prefill`, `greedy` and `sample` are built on those two.
    """

    @abstractmethod
    async def __lshift__(self, b: int) -> StatefulByteLM:
        """The state after consuming byte `b`."""

    @abstractmethod
    async def logp_next(self) -> LazyByteProbs:
        """Log-probabilities of the next byte (a `LazyByteProbs`)."""

    def prune(self) -> StatefulByteLM:
        """A smaller state approximating this one (no change by default)."""
        return self

    async def prefill(self, bs: Iterable[int], progress: bool | None = None) -> StatefulByteLM:
        """The state after consuming every byte of `bs`, pruning before each byte."""
        data = list(bytes(bs) if isinstance(bs, (bytes, bytearray)) else bs)
        state = self
        with byte_bar(len(data), "prefill", progress) as bar:
            for b in data:
                state = await (state.prune() << b)
                bar.update(1)
        return state

    async def greedy(self, context: bytes | str, steps: int, progress: bool | None = None) -> bytes:
        """`context` (bytes, or text as UTF-8) then up to `steps` most likely bytes.

        Stops early at EOS, which is not appended. `progress`: a bar over the
        bytes (None: in a notebook, for more than a few dozen bytes).
        """
        return await self._generate(context, steps, lambda q: q.argmax(), progress, "greedy")

    async def sample(
        self,
        context: bytes | str,
        steps: int,
        draw: Callable[[Chart], int] = sample_dict,
        seed: int | None = None,
        progress: bool | None = None,
    ) -> bytes:
        """`context` followed by `steps` sampled bytes (stops early at EOS).

        Args:
            context: bytes (or text, UTF-8 encoded) to condition on.
            steps: the most bytes to generate.
            draw: picks a slot from a `Chart` of probabilities.
            seed: seeds a private generator for the default `draw`: the same
                seed gives the same bytes (the global `random` is untouched).
            progress: a bar over the bytes (None: in a notebook, for more
                than a few dozen bytes).

        Raises:
            ValueError: if `seed` is given with a custom `draw` (which brings
                its own randomness), or is not an int.
        """
        import math

        if seed is not None:
            if isinstance(seed, bool) or not isinstance(seed, int):
                raise ValueError(f"seed must be an int or None, got {seed!r}")
            if draw is not sample_dict:
                raise ValueError(
                    "seed= seeds the default draw; a custom draw brings its own generator"
                )
            rng = random.Random(seed)

            def draw(chart: Chart) -> int:
                return sample_dict(chart, rng)

        return await self._generate(
            context, steps, lambda q: draw(q.map_values(math.exp)), progress, "sample"
        )

    async def _generate(
        self,
        context: bytes | str,
        steps: int,
        pick: Callable[[Chart], int],
        progress: bool | None = None,
        desc: str = "",
    ) -> bytes:
        if isinstance(steps, bool) or not hasattr(steps, "__index__") or int(steps) < 0:
            raise ValueError(f"steps must be an int >= 0, got {steps!r}")
        if isinstance(context, str):
            context = context.encode("utf-8")  # as prefill reads text
        try:
            if isinstance(context, int):  # bytes(3) would be three zero bytes
                raise TypeError
            out = list(bytes(context))
        except (TypeError, ValueError):
            raise ValueError(f"context must be bytes or text, got {context!r}") from None
        state = await self.prefill(out, progress=progress)
        with byte_bar(int(steps), desc, progress) as bar:
            for _ in range(int(steps)):
                q = (await state.logp_next()).materialize()
                b = pick(q)
                if b is None or b >= 256:  # EOT (keyed None) or EOS
                    break
                state = await (state.prune() << b)
                out.append(b)
                bar.update(1)
        return bytes(out)

    async def cleanup(self) -> None:
        """Release background resources (trie workers)."""
