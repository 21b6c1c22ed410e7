"""`coerce`: a potential read over another vocabulary, e.g. a byte-level regex over LLM tokens.

`Coerced(p, vocab, f)` weighs a context `x` of the new vocabulary as `p` weighs
`f(x)`. For the usual case, a potential over bytes (ints 0..255) read through
`b"".join`, the next-token weights are computed by walking the tokens' byte
trie once, asking `p.logw_next` at each byte prefix and skipping every subtree
`p` rules out. A byte-level potential may walk the trie itself instead
(`walk_byte_trie(trie, data)`: `PythonRegex` asks its engine only about bytes
that lead to a token). Potentials backed by a compiled grammar go further:
they hand back a token-level matcher (`_coerce_tokens`) that masks the whole
vocabulary in one native call.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

from genlm_lab.control.core.constant import EndOfSequence
from genlm_lab.control.core.weights import LazyWeights
from genlm_lab.control.potential.base import Potential
from genlm_lab.util.gc_pause import gc_paused
from genlm_lab.util.vocab_key import vocabulary_key

__all__ = ["Coerced", "coerce", "is_join"]


def _join(context: Sequence[Any]) -> bytes:
    return b"".join(context)


def is_join(f: Callable | None) -> bool:
    return f is None or f is _join or (getattr(f, "__self__", None) == b"" and f.__name__ == "join")


def _target(other: Potential | Sequence[Hashable]) -> tuple[list[Hashable], EndOfSequence | None]:
    if isinstance(other, Potential):
        return other.vocab, other.eos
    if isinstance(other, (str, bytes, bytearray)):
        raise ValueError("coerce takes a potential or a list of tokens, not one string")
    return list(other), None


def _symbols(potential: Potential) -> set[Hashable] | dict[Hashable, int]:
    """What an image may hold: `potential`'s tokens, and the byte values of `Token`s' bytes."""
    if not any(isinstance(t, bytes) and hasattr(t, "token_id") for t in potential.vocab[:1]):
        return potential.lookup
    return set(potential.lookup) | {b for t in potential.vocab for b in bytes(t)}


def _byte_level(potential: Potential) -> bool:
    """Whether the potential's tokens are the byte values 0..255 (ints)."""
    return all(isinstance(t, int) and 0 <= t < 256 for t in potential.vocab)


def coerce(
    potential: Potential,
    other: Potential | Sequence[Hashable],
    f: Callable[[Sequence[Any]], Any] | None = None,
    prune: bool = True,
) -> Potential:
    """`potential` over `other`'s vocabulary (a potential's, or a list of tokens), through `f`.

    Raises:
        ValueError: if `prune` leaves no token (every one maps, through `f`,
            to a symbol outside `potential`'s vocabulary).
    """
    vocab, eos = _target(other)
    if is_join(f) and hasattr(potential, "_coerce_tokens"):
        special = other.special_indices() if hasattr(other, "special_indices") else None
        fast = potential._coerce_tokens(vocab, eos, special)
        if fast is not None:
            return fast
    return Coerced(potential, vocab, f=f, prune=prune, eos=eos)


class Coerced(Potential):
    """`potential` weighing contexts of `vocabulary` as `potential` weighs `f(context)`.

    Args:
        potential: the potential to read through `f`.
        target_vocab: the new tokens (genlm-control's name; `vocabulary=`
            is accepted too).
        f: maps a list of new tokens to a list (or bytes) of `potential`'s
            tokens; default `b"".join`.
        prune: leave out of the vocabulary the tokens whose image holds a
            symbol outside `potential`'s vocabulary (genlm-control's default).
            With `prune=False` they stay, with weight zero.

    Raises:
        TypeError: if the new tokens are given under both names, or not at all.
        ValueError: if pruning leaves no token.
    """

    def __init__(
        self,
        potential: Potential,
        target_vocab: Sequence[Hashable] | None = None,
        f: Callable[[Sequence[Any]], Any] | None = None,
        prune: bool = True,
        eos: EndOfSequence | None = None,
        *,
        vocabulary: Sequence[Hashable] | None = None,
    ) -> None:
        if (target_vocab is None) == (vocabulary is None):
            raise TypeError("Coerced takes the new tokens once: target_vocab= (or vocabulary=)")
        vocabulary = list(target_vocab if vocabulary is None else vocabulary)
        self.potential = potential
        self.f = _join if f is None else f
        self.prune = prune
        if is_join(f) and all(isinstance(t, (bytes, bytearray)) for t in vocabulary):
            images = vocabulary  # its byte values are what `_image([t])` gives, faster
        else:
            images = [self._image([t]) for t in vocabulary]
        known = _symbols(potential)
        if all(s in known for s in {s for img in images for s in img}):
            inside = [True] * len(images)
        else:
            inside = [all(s in known for s in img) for img in images]
        if prune and not all(inside):
            kept = [i for i, ok in enumerate(inside) if ok]
            if not kept:
                raise ValueError(
                    f"no token of the new vocabulary ({len(vocabulary)} tokens, e.g. "
                    f"{vocabulary[0]!r:.30}) maps through f onto {potential.name}'s vocabulary"
                )
            vocabulary = [vocabulary[i] for i in kept]
            images = [images[i] for i in kept]
            inside = [True] * len(kept)
        super().__init__(vocabulary, **({} if eos is None else {"eos": eos}))
        self.is_boolean = potential.is_boolean
        self._outside = ~np.array(inside, dtype=bool)
        self._walk = is_join(f) and _byte_level(potential)
        self._trie = _shared_trie(images) if self._walk else None

    def _default_name(self) -> str:
        return self.potential.name

    def _image(self, context: Sequence[Any]) -> list[Any]:
        return list(self.f(list(context)))

    async def prefix(self, context: Sequence[Any]) -> float:
        self.encode(context)
        return await self.potential.prefix(self._image(context))

    async def complete(self, context: Sequence[Any]) -> float:
        self.encode(context)
        return await self.potential.complete(self._image(context))

    async def logw_next(self, context: Sequence[Any]) -> LazyWeights:
        if not self._walk:
            weights = (await super().logw_next(context)).weights
            weights[:-1][self._outside] = -math.inf
            return self.make_lazy_weights(weights)
        self.encode(context)
        walk = getattr(self.potential, "walk_byte_trie", None)
        if walk is not None:  # the potential masks the whole trie itself (e.g. PythonRegex)
            return self.make_lazy_weights(walk(self._trie, bytes(self._image(context))))
        return self.make_lazy_weights(await self._trie.walk(self.potential, self._image(context)))

    def spawn(self) -> Coerced:
        return Coerced(self.potential.spawn(), self.vocab, self.f, self.prune, self.eos)

    async def cleanup(self) -> None:
        await self.potential.cleanup()


#: The byte tries of the last few vocabularies, by content: coercing onto a vocabulary seen
#: before (another constraint, a spawned copy, an evaluation's next instance) skips the build,
#: about a second for 256k tokens. The tries are only read.
_TRIES: OrderedDict[str, _ByteTrie] = OrderedDict()
_TRIES_KEPT = 2


def _shared_trie(images: Sequence[Sequence[int]]) -> _ByteTrie:
    """The byte trie of `images` (byte values per token), built once per distinct vocabulary."""
    key = vocabulary_key(images)
    trie = _TRIES.get(key)
    if trie is None:
        with gc_paused():  # a node per byte prefix: millions of objects, none of them garbage
            trie = _TRIES[key] = _ByteTrie(images)
        if len(_TRIES) > _TRIES_KEPT:
            _TRIES.popitem(last=False)
    _TRIES.move_to_end(key)
    return trie


class _ByteTrie:
    """The byte strings of a vocabulary as a trie, walked against a byte-level potential."""

    def __init__(self, images: Sequence[Sequence[int]]) -> None:
        self.children: list[dict[int, int]] = [{}]
        self.ends: list[list[int]] = [[]]
        for token, image in enumerate(images):
            node = 0
            for byte in image:
                nxt = self.children[node].get(byte)
                if nxt is None:
                    nxt = len(self.children)
                    self.children[node][byte] = nxt
                    self.children.append({})
                    self.ends.append([])
                node = nxt
            self.ends[node].append(token)
        self.n_tokens = len(images)

    async def walk(self, potential: Potential, context: list[int]) -> np.ndarray:
        """Log-weight of each token after `context` (EOS last), skipping ruled-out subtrees."""
        out = np.full(self.n_tokens + 1, -math.inf)
        root = await potential.logw_next(context)
        out[-1] = root[potential.eos]
        for token in self.ends[0]:  # empty tokens leave the context unchanged
            out[token] = 0.0
        stack = [(0, 0.0, context, root)]
        while stack:
            node, logw, path, weights = stack.pop()
            for byte, child in self.children[node].items():
                step = weights[byte]
                if step == -math.inf:
                    continue
                total = logw + step
                for token in self.ends[child]:
                    out[token] = total
                if self.children[child]:
                    longer = [*path, byte]
                    stack.append((child, total, longer, await potential.logw_next(longer)))
        return out
