"""`GrammarPotential`: a boolean potential over bytes backed by a compiled grammar.

Regexes (`BoolFSA`), Lark grammars (`BoolCFG`) and JSON schemas (`JsonSchema`)
are all this one class with a different compiler in front. Over bytes (the
ints 0..255) the mask has 257 entries. Coerced onto a token vocabulary
(`grammar.coerce(llm, f=b"".join)`) it becomes a `TokenConstraint` that masks
all tokens in one native call instead of walking them one by one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

from genlm_lab.control.constraint.llg.engine import Engine
from genlm_lab.control.constraint.llg.mask_weights import MaskWeights
from genlm_lab.control.constraint.llg.matcher_cache import Key
from genlm_lab.control.core.constant import EndOfSequence
from genlm_lab.control.core.weights import LazyWeights, WeightsBatch
from genlm_lab.control.potential.base import Potential

__all__ = ["GrammarPotential", "MaskedPotential", "TokenConstraint"]

_BYTES = [bytes([i]) for i in range(256)]


class MaskedPotential(Potential):
    """Shared body of grammar potentials: weights 0 / -inf read from an `Engine`."""

    is_boolean = True
    engine: Engine
    _bytes_in = False  # contexts are lists of byte values (ints 0..255)

    def _key(self, context: Sequence[Any]) -> bytes | Key:
        if self._bytes_in and isinstance(context, list):
            try:  # a byte-level context of ints: C speed, and bytes cache their hash
                return bytes(context)
            except (TypeError, ValueError):
                pass
        return Key(self.encode(context))

    async def prefix(self, context: Sequence[Any]) -> float:
        return 0.0 if self.engine.alive(self._key(context)) else -math.inf

    async def complete(self, context: Sequence[Any]) -> float:
        return 0.0 if self.engine.accepting(self._key(context)) else -math.inf

    async def score(self, context: Sequence[Any]) -> float:
        # One cached-state check for the last token instead of a state per prefix.
        if context and not self.ends(context):
            key = self._key(context)
            return 0.0 if self.engine.allows(key[:-1], key[-1]) else -math.inf
        return await super().score(context)

    def _weights(self, bits: np.ndarray) -> LazyWeights:
        # packed: the 0 / -inf float vector is only built if someone reads it
        return MaskWeights(bits, self.lookup, self.vocab_eos)

    async def logw_next(self, context: Sequence[Any]) -> LazyWeights:
        return self._weights(self.engine.bits([self._key(context)])[0])

    async def batch_logw_next(self, contexts: Sequence[Sequence[Any]]) -> WeightsBatch:
        bits = self.engine.bits([self._key(c) for c in contexts])
        return WeightsBatch(self._weights(b) for b in bits)

    def allowed(self, context: Sequence[Any]) -> np.ndarray:
        """Bool array over `vocab_eos`: which tokens may follow `context`."""
        return self.engine.mask(self._key(context))

    async def cleanup(self) -> None:
        self.engine.clear()


class GrammarPotential(MaskedPotential):
    """A constraint over bytes (ints 0..255): 0 where the grammar can still match, else -inf.

    Args:
        grammar: llguidance grammar text, validated by the subclass.
        source: what the user wrote (for messages and views).
        kind: "regex", "Lark grammar" or "JSON schema".
        final: an exact check of finished texts where the grammar over-approximates
            (EOS and `complete` need both).
    """

    def __init__(
        self,
        grammar: str,
        source: str,
        kind: str,
        final: Callable[[bytes], bool] | None = None,
    ) -> None:
        super().__init__(list(range(256)))
        self._bytes_in = True
        self.grammar = grammar
        self.source = source
        self.kind = kind
        self.final = final
        self.engine = Engine(_BYTES, grammar, final=final)

    def _coerce_tokens(
        self,
        vocab: Sequence[Hashable],
        eos: EndOfSequence | None,
        special: Sequence[int] | None = None,
    ) -> TokenConstraint | None:
        """The same grammar over a vocabulary of byte strings, masked natively (None if not bytes)."""
        if not all(isinstance(t, (bytes, bytearray)) for t in vocab):
            return None
        return TokenConstraint(self, vocab, eos, special)

    def spawn(self) -> GrammarPotential:
        return self

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.source!r:.60})"


def _special_indices(vocab: Sequence[Any]) -> list[int]:
    """Indices of tokens whose tokenizer calls them special (BOS, chat markers), if it says."""
    return [i for i, t in enumerate(vocab) if getattr(t, "is_special", False)]


class TokenConstraint(MaskedPotential):
    """A byte-level grammar read over a vocabulary of byte-string tokens.

    A token may follow a context iff the context's bytes followed by the
    token's bytes can still be completed to a string of the grammar; EOS iff
    the context's bytes are one. Equal, token for token, to
    `Coerced(grammar, vocab, b"".join)`, at the cost of one native mask.

    Args:
        grammar: the byte-level `GrammarPotential`.
        vocabulary: the byte string of each token (e.g. `PromptedLLM.vocab`).
        eos: the EOS marker of the vocabulary's potential.
        special: token indices never allowed (default: tokens flagged `is_special`).
    """

    def __init__(
        self,
        grammar: GrammarPotential,
        vocabulary: Sequence[Hashable],
        eos: EndOfSequence | None = None,
        special: Sequence[int] | None = None,
    ) -> None:
        super().__init__(vocabulary, **({} if eos is None else {"eos": eos}))
        self.grammar = grammar
        self.source = grammar.source
        self.kind = grammar.kind
        special = _special_indices(self.vocab) if special is None else list(special)
        self.special = special
        self.engine = Engine(
            [bytes(t) for t in self.vocab], grammar.grammar, special, final=grammar.final
        )

    def _default_name(self) -> str:
        return self.grammar.name

    def __repr__(self) -> str:
        return f"TokenConstraint({self.grammar!r}, {len(self.vocab)} tokens)"
