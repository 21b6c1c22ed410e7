"""`Potential`: a non-negative weight on token sequences, the unit of controlled generation.

A potential scores a context two ways: `prefix(x)` weighs `x` as the start of a
sequence, `complete(x)` as a whole one. Its next-token weights
`logw_next(x)[y] = prefix(x + y) - prefix(x)` (and `complete(x) - prefix(x)`
for EOS) are what samplers draw from. Language models, regexes, grammars,
JSON schemas and Python checks are all potentials; `*`, `coerce` and `**`
combine them into new ones (`genlm_lab.control.potential.operators`).

Everything is in log space: a weight of zero is `-inf`. A boolean potential
(a constraint) only ever returns 0 or `-inf`.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

from genlm_lab.control.core.constant import EOS, EndOfSequence
from genlm_lab.control.core.eager import gather_eager
from genlm_lab.control.core.token_types import TokenType, infer_vocabulary_type
from genlm_lab.control.core.weights import LazyWeights, WeightsBatch
from genlm_lab.control.potential.checks import PotentialChecks

__all__ = ["Potential", "factor_names", "factor_temperatures"]


def _nonempty(contexts: Sequence[Any], method: str) -> None:
    if len(contexts) == 0:
        raise ValueError(f"{method} got no contexts: Contexts must be non-empty")


class Potential(PotentialChecks, ABC):
    """A function from token sequences to log-weights, as prefixes and as complete sequences.

    Subclasses implement `prefix` and `complete`; the default `logw_next`
    scores every token (slow for large vocabularies: built-ins override it).

    Args:
        vocabulary: the tokens (hashable, distinct; bytes, `Token`s or ints).
        eos: the end-of-sequence marker, by default `EOS`.

    Attributes:
        vocab: the tokens. `vocab_eos` adds `eos` at the end.
        lookup: token (or eos) -> index into `vocab_eos`.
        is_boolean: whether every weight is 0 or -inf (a constraint).
    """

    is_boolean: bool = False

    def __init__(
        self,
        vocabulary: Sequence[Hashable],
        token_type: TokenType | None = None,
        eos: EndOfSequence | None = None,
    ) -> None:
        vocabulary = list(vocabulary)
        if not vocabulary:
            raise ValueError("the vocabulary cannot be empty: a potential needs at least one token")
        eos = EOS if eos is None else eos
        if not isinstance(eos, EndOfSequence):
            raise ValueError(f"EOS must be an instance of EndOfSequence, got {eos!r}")
        if token_type is not None:
            if not isinstance(token_type, TokenType):
                raise ValueError(f"token_type must be a TokenType, got {token_type!r}")
            wrong = next((t for t in vocabulary if not token_type.check(t)), None)
            if wrong is not None:
                raise TypeError(
                    f"Tokens in vocabulary must be of type {token_type!r}; {wrong!r:.40} is not"
                )
        self._token_type = token_type
        lookup: dict[Hashable, int] = dict(zip(vocabulary, range(len(vocabulary)), strict=True))
        if len(lookup) < len(vocabulary):  # equal tokens: the first keeps its id, unless same type
            lookup = {}
            for i, token in enumerate(vocabulary):
                if token in lookup and type(token) is type(vocabulary[lookup[token]]):
                    raise ValueError(
                        f"Duplicate token {token!r} found in vocabulary "
                        f"(ids {lookup[token]} and {i})"
                    )
                lookup.setdefault(token, i)
        lookup[eos] = len(vocabulary)
        self._bytewise = vocabulary == list(range(256))
        if self._bytewise:
            # Byte-level potentials: b"a" and 97 name the same byte (genlm-control writes bytes).
            for i in range(256):
                lookup[bytes([i])] = i
        self.vocab = vocabulary
        self.eos = eos
        self.vocab_eos = [*vocabulary, eos]
        self.lookup = lookup

    @property
    def token_type(self) -> TokenType:
        """What one token is (`Atomic(bytes)`, `Atomic(int)`, ...), inferred unless given.

        Raises:
            ValueError: if it was not given and the tokens differ in type.
        """
        if self._token_type is None:
            self._token_type = infer_vocabulary_type(self.vocab)
        return self._token_type

    @token_type.setter
    def token_type(self, value: TokenType) -> None:
        self._token_type = value

    # ------------------------------------------------------------ to implement
    @abstractmethod
    async def prefix(self, context: Sequence[Any]) -> float:
        """Log-weight of `context` as the start of a sequence."""

    @abstractmethod
    async def complete(self, context: Sequence[Any]) -> float:
        """Log-weight of `context` as a whole sequence."""

    # ------------------------------------------------------------ derived
    @property
    def name(self) -> str:
        """A short label for views and records (the class name unless set)."""
        return getattr(self, "_name", None) or self._default_name()

    @name.setter
    def name(self, value: str) -> None:
        self._name = str(value)

    def _default_name(self) -> str:
        return type(self).__name__

    def _share_vocabulary(self, other: Potential) -> None:
        """Take `other`'s vocabulary tables as they are (wrappers and products: no copy)."""
        self.vocab = other.vocab
        self.eos = other.eos
        self.vocab_eos = other.vocab_eos
        self.lookup = other.lookup
        self._token_type = getattr(other, "_token_type", None)
        self._bytewise = getattr(other, "_bytewise", False)

    def factors(self) -> list[Potential]:
        """The potentials multiplied in this one (itself, for a single potential)."""
        return [self]

    def encode(self, context: Sequence[Any]) -> list[int]:
        """Indices into `vocab_eos` of a context's tokens.

        Raises:
            ValueError: naming the first token that is not in the vocabulary,
                or an EOS that is not last.
        """
        if isinstance(context, (bytes, bytearray)) and getattr(self, "_bytewise", False):
            return list(context)  # a byte-level potential reads bytes as their values
        if isinstance(context, (str, bytes, bytearray)):
            raise ValueError(
                f"a context is a list of tokens, got {type(context).__name__} {context!r:.40}"
            )
        lookup = self.lookup
        eos = len(self.vocab)
        try:  # the common case at C speed: every token known, EOS at most last
            out = [lookup[token] for token in context]
        except (KeyError, TypeError):
            pass
        else:
            if eos not in out or out.index(eos) == len(out) - 1:
                return out
        out = []
        last = len(context) - 1
        for pos, token in enumerate(context):
            try:
                index = lookup[token]
            except (KeyError, TypeError):
                raise ValueError(
                    f"token {token!r:.60} at position {pos} is not in the vocabulary of "
                    f"{self.name} ({len(self.vocab)} tokens)"
                ) from None
            if index == eos and pos != last:
                raise ValueError(f"EOS at position {pos} is not the last token of the context")
            out.append(index)
        return out

    def ends(self, context: Sequence[Any]) -> bool:
        """Whether `context` ends with this potential's EOS."""
        return bool(context) and isinstance(context[-1], EndOfSequence)

    async def score(self, context: Sequence[Any]) -> float:
        """`complete(context[:-1])` if the context ends with EOS, else `prefix(context)`."""
        if self.ends(context):
            return await self.complete(list(context[:-1]))
        return await self.prefix(context)

    async def logw_eos(self, context: Sequence[Any]) -> float:
        """Log-weight of ending after `context`."""
        return (await self.logw_next(context))[self.eos]

    async def logw_next(self, context: Sequence[Any]) -> LazyWeights:
        """Next-token log-weights: `prefix(x + y) - prefix(x)`, EOS from `complete(x)`.

        Raises:
            ValueError: if `context` has weight zero as a prefix (nothing can follow it).
        """
        base = await self.prefix(context)
        if base == -math.inf:
            raise ValueError(
                f"Context {list(context)!r:.80} has weight zero under `prefix` of "
                f"{self.name}: nothing can follow it"
            )
        context = list(context)
        scores = await self.batch_score([[*context, y] for y in self.vocab_eos])
        return self.make_lazy_weights(scores - base)

    def make_lazy_weights(self, weights: np.ndarray, log: bool = True) -> LazyWeights:
        """Wrap one weight per entry of `vocab_eos`."""
        return LazyWeights(weights, self.lookup, self.vocab_eos, log=log)

    def alloc_logws(self, default: Any = -math.inf) -> np.ndarray:
        """A fresh array with one entry per `vocab_eos` token, all `default` (zero weight)."""
        return np.full(len(self.vocab_eos), default)

    def is_terminal_only(self) -> bool:
        """Whether `prefix` is 0 on every context, so the potential weighs only complete ones.

        SMC applies such a critic only when a particle ends. False unless a
        subclass knows better.
        """
        return False

    # ------------------------------------------------------------ batches
    async def batch_prefix(self, contexts: Sequence[Sequence[Any]]) -> np.ndarray:
        """`prefix` of several contexts, computed concurrently.

        Raises:
            ValueError: for an empty list of contexts (as every `batch_*` method).
        """
        _nonempty(contexts, "batch_prefix")
        return np.array(await gather_eager(self.prefix(c) for c in contexts), dtype=float)

    async def batch_complete(self, contexts: Sequence[Sequence[Any]]) -> np.ndarray:
        """`complete` of several contexts, computed concurrently."""
        _nonempty(contexts, "batch_complete")
        return np.array(await gather_eager(self.complete(c) for c in contexts), dtype=float)

    async def batch_score(self, contexts: Sequence[Sequence[Any]]) -> np.ndarray:
        """`score` of several contexts, computed concurrently."""
        _nonempty(contexts, "batch_score")
        if type(self).score is not Potential.score:  # a subclass scores faster itself
            return np.array(await gather_eager(self.score(c) for c in contexts), dtype=float)
        ends = [self.ends(c) for c in contexts]
        done = [list(c[:-1]) for c, e in zip(contexts, ends, strict=True) if e]
        open_ = [c for c, e in zip(contexts, ends, strict=True) if not e]
        out = np.empty(len(contexts))
        mask = np.array(ends, dtype=bool)
        if done:
            out[mask] = await self.batch_complete(done)
        if open_:
            out[~mask] = await self.batch_prefix(open_)
        return out

    async def batch_logw_next(self, contexts: Sequence[Sequence[Any]]) -> WeightsBatch:
        """`logw_next` of several contexts, computed concurrently (a list with a 2-d `.weights`)."""
        _nonempty(contexts, "batch_logw_next")
        return WeightsBatch(await gather_eager(self.logw_next(c) for c in contexts))

    # ------------------------------------------------------------ life cycle
    def spawn(self) -> Potential:
        """An independent copy for another worker (stateless potentials return themselves)."""
        return self

    async def cleanup(self) -> None:
        """Release caches and background work (nothing by default)."""

    # ------------------------------------------------------------ algebra
    def __mul__(self, other: Potential) -> Potential:
        """The product potential: weights add in log space. Vocabularies must match."""
        # operator overloading: the subclass lives in a module that imports this one
        from genlm_lab.control.potential.operators import Product

        if not isinstance(other, Potential):
            return NotImplemented
        return Product(self, other)

    def __pow__(self, exponent: float) -> Potential:
        """The tempered potential (`Tempered`): every finite log-weight times `exponent`.

        Weight zero stays zero; `p ** 0` is the indicator of `p`'s support, `p ** -1`
        its inverse there.
        """
        # operator overloading: the subclass lives in a module that imports this one
        from genlm_lab.control.potential.tempered import Tempered

        return Tempered(self, exponent)

    def normalize(self) -> Potential:
        """This potential with every next-token row renormalised to sum to one.

        `(llm * mask).normalize()` is the locally normalised product: what
        a sampler that draws token by token from `llm * mask` produces.
        """
        # like the operators: a method building a subclass whose module imports this one
        from genlm_lab.control.potential.normalized import Normalized

        return Normalized(self)

    def coerce(
        self,
        other: Potential | Sequence[Hashable],
        f: Callable[[Sequence[Any]], Any] | None = None,
        prune: bool = True,
    ) -> Potential:
        """This potential read over `other`'s vocabulary, through `f` (default `b"".join`).

        A context of `other`'s tokens is mapped by `f` to a context of this
        potential's tokens; e.g. a byte-level regex over an LLM's tokens, where
        a token is allowed iff its bytes keep the regex alive.
        """
        # like the operators: `coerce` builds a subclass whose module imports this one
        from genlm_lab.control.potential.coerce import coerce

        return coerce(self, other, f=f, prune=prune)

    def to_multiprocess(self, num_workers: int = 2, spawn_args: tuple | None = None) -> Potential:
        """A `MultiProcPotential` whose workers each build `self.spawn(*spawn_args)`.

        The potential's `spawn` must be picklable (a bound method of a
        picklable potential is).
        """
        # like the operators: a method building a subclass whose module imports this one
        from genlm_lab.control.potential.multi_proc import MultiProcPotential

        return MultiProcPotential(self.spawn, tuple(spawn_args or ()), num_workers=num_workers)

    def to_autobatched(self) -> Potential:
        """A wrapper that sends concurrent calls to the `batch_*` methods together.

        The wrapper is kept: every call returns the same one, so samplers that
        share this potential share its batches.
        """
        # like the operators: a method building a subclass whose module imports this one
        from genlm_lab.control.potential.operators import AutoBatched

        wrapper = self.__dict__.get("_autobatched")
        if wrapper is None:
            wrapper = AutoBatched(self)
            self.__dict__["_autobatched"] = wrapper
        return wrapper

    def __repr__(self) -> str:
        return f"{self.name}({len(self.vocab)} tokens)"


def factor_names(potential: Potential) -> list[str]:
    """Names of the potential's factors, repeats made distinct with "#2", "#3", ..."""
    seen: dict[str, int] = {}
    out = []
    for factor in potential.factors():
        name = factor.name
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name}#{seen[name]}")
    return out


def factor_temperatures(potential: Potential) -> dict[str, float]:
    """`{factor name: temperature}` of the factors tempered away from 1 (`Tempered`: 1 / beta)."""
    out = {}
    for name, factor in zip(factor_names(potential), potential.factors(), strict=True):
        t = getattr(factor, "temperature", None)  # Tempered's, or a PromptedLLM's own
        if isinstance(t, int | float) and not isinstance(t, bool) and t != 1.0:
            out[name] = float(t)
    return out
