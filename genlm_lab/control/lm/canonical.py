"""`CanonicalTokenization`: only token sequences that BPE itself would produce.

A language model trained on a tokenizer's output only ever saw canonical
token sequences: the ones the tokenizer's encoder yields. Text has many
other tokenizations (`To ken ization` for `Tokenization`); a sampler that
wanders into one leaves the distribution the model learned. This potential
gives weight 1 to a token sequence when each adjacent pair is canonical and
0 otherwise (genlm-control 0.4.1's names and semantics).

Two tokens `a b` are canonical together when BPE, run on their joined text,
ends with exactly `a b`. That happens unless a merge across their boundary
fires first: while BPE builds `a` the right edge of its text is, in turn,
each token down the right spine of `a`'s derivation, and likewise the left
edge of `b` runs down `b`'s left spine. A merge joining an edge token of
each side fires while both are still edges, i.e. before the merges that
absorb them (`FastCanonicalityFilterBPE`). The test is on merges alone: a
pre-tokenizer's splits (GPT-2's regex) are not consulted.
"""

from __future__ import annotations

import math
from collections import OrderedDict, defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from genlm_lab.control.core.weights import LazyWeights
from genlm_lab.control.lm._bpe import Derivations, extract_bpe_merges, read_bpe_merges
from genlm_lab.control.lm._pretokens import RegexBoundaries, uses_gpt2_regex
from genlm_lab.control.lm.llm import PromptedLLM
from genlm_lab.control.potential.base import Potential
from genlm_lab.tokenization import Token, decode_vocab

__all__ = ["CanonicalTokenization", "FastCanonicalityFilterBPE", "_extract_bpe_merges"]

#: genlm-control's name for `extract_bpe_merges`.
_extract_bpe_merges = extract_bpe_merges

#: Token pairs allowed although BPE's merges would join them, per model name part:
#: GPT-2's pre-tokenizer splits them apart in context (genlm-control's list).
KNOWN_OVERRIDES: dict[str, tuple[tuple[int, int], ...]] = {"gpt2": ((198, 198), (2637, 82))}

_MASK_CACHE = 256  # masks kept per filter, by left token


class FastCanonicalityFilterBPE:
    """Which tokens may follow a given token in a canonical BPE tokenization.

    `filter(())` allows every token; `filter((None, last_token))` returns a
    boolean mask over token ids: the tokens `b` such that `last_token b` is
    canonical, plus the EOS tokens and any override of `last_token`.

    Args:
        _merges: `(left_id, right_id, merged_id)`, highest priority first.
        _encode: token bytes -> id.
        _decode: the tokens (`Token`s) by id.
        _encode_byte: byte value -> id of its one-byte token (None if none).
        eos_token_ids: ids always allowed next.
        vocab: token piece -> id, the merges' alphabet (by default each
            token's bytes read as Latin-1, right for merges over raw bytes).
        gpt2_regex: whether the tokenizer splits text with GPT-2's regex
            before BPE; then the pairs it splits apart count too (`_pretokens`).
    """

    def __init__(
        self,
        _merges: Sequence[tuple[int, int, int]],
        _encode: dict[bytes, int],
        _decode: Sequence[Token],
        _encode_byte: Sequence[int | None],
        eos_token_ids: Iterable[int],
        vocab: dict[str, int] | None = None,
        gpt2_regex: bool = False,
    ) -> None:
        self._merges = list(_merges)
        self._encode = _encode
        self._decode = list(_decode)
        self._encode_byte = list(_encode_byte)
        self.V = len(self._decode)
        if vocab is None:
            vocab = {bytes(t).decode("latin1"): i for i, t in enumerate(self._decode)}
        self.derivations = Derivations(vocab, self._merges, self.V)
        self.eos_token_ids = {int(i) for i in eos_token_ids}
        self.overrides: defaultdict[int, set[int]] = defaultdict(set)
        self._index_merges()
        self._index_left_spines()
        self.boundaries: RegexBoundaries | None = None
        if gpt2_regex:
            d = self.derivations
            pieces = {i: p for p, i in vocab.items()}
            atoms = np.array(
                [d.left[i] < 0 and len(pieces.get(i, "")) > 1 for i in range(self.V)], dtype=bool
            )
            self.boundaries = RegexBoundaries([bytes(t) for t in self._decode], atoms)
        self._masks: OrderedDict[int, np.ndarray] = OrderedDict()

    @classmethod
    def from_tokenizer(
        cls, tokenizer: Any, eos_token_ids: Iterable[int] | None = None
    ) -> FastCanonicalityFilterBPE:
        """The filter of a BPE tokenizer (HF fast or slow), from its vocabulary and merges.

        Args:
            tokenizer: the tokenizer.
            eos_token_ids: tokens always allowed next (default: the
                tokenizer's `eos_token_id`).

        Raises:
            ValueError: if the vocabulary does not decode to bytes, two ids
                share their bytes, or no BPE merges can be read.
        """
        tokens, _ = decode_vocab(tokenizer)
        encode: dict[bytes, int] = {}
        for token in tokens:
            data = bytes(token)
            if data in encode:
                raise ValueError(
                    f"Duplicate byte sequences found in the vocabulary: {data!r} is token "
                    f"{encode[data]} and {token.token_id}, so bytes cannot name one token"
                )
            encode[data] = token.token_id
        found = read_bpe_merges(tokenizer)
        encode_byte = [encode.get(bytes([b])) for b in range(256)]
        eos = list(eos_token_ids or [])
        if not eos:
            eos = [tokenizer.eos_token_id] if tokenizer.eos_token_id is not None else []
        return cls(
            found.merges,
            encode,
            tokens,
            encode_byte,
            eos,
            vocab=found.vocab,
            gpt2_regex=uses_gpt2_regex(tokenizer),
        )

    def set_overrides(self, model_name: str | None) -> None:
        """Allow the pairs `KNOWN_OVERRIDES` lists for a model whose name contains its key."""
        for key, pairs in KNOWN_OVERRIDES.items():
            if model_name and key in model_name:
                for left, right in pairs:
                    self.overrides[left].add(right)

    def _index_merges(self) -> None:
        """Merges grouped by left token: `_starts[u]:_starts[u+1]` slices `_m_right`, `_m_rank`."""
        d = self.derivations
        items = sorted((u, v, r) for (u, v), r in d.rank.items())
        arr = np.array(items, dtype=np.int64).reshape(-1, 3)
        self._m_right, self._m_rank = arr[:, 1], arr[:, 2]
        self._starts = np.searchsorted(arr[:, 0], np.arange(self.V + 1))

    def _index_left_spines(self) -> None:
        """Every (token, left-spine node, until) of canonical tokens, as three flat arrays."""
        d = self.derivations
        tokens, nodes, untils = [], [], []
        for b in np.flatnonzero(d.canonical).tolist():
            for node, until in d.left_spine(b):
                tokens.append(b)
                nodes.append(node)
                untils.append(until)
        self._ls_token = np.array(tokens, dtype=np.int64)
        self._ls_node = np.array(nodes, dtype=np.int64)
        self._ls_until = np.array(untils, dtype=np.int64)

    def _id_of(self, token: Any) -> int:
        data = Token.as_bytes(token)
        token_id = self._encode.get(bytes(data))
        if token_id is None:
            raise KeyError(f"Last token {data!r} not found in encode map.")
        return token_id

    def _conflicts(self, left: int) -> np.ndarray:
        """Mask of the tokens `b` with `left b` canonical (before EOS and overrides)."""
        cached = self._masks.get(left)
        if cached is not None:
            self._masks.move_to_end(left)
            return cached
        d = self.derivations
        if not d.canonical[left]:
            mask = np.zeros(self.V, dtype=bool)
        else:
            # first[v]: the earliest merge (left-edge node, v) that fires while the node is the edge
            first = np.full(self.V, d.INF, dtype=np.int64)
            for node, until in d.right_spine(left):
                lo, hi = self._starts[node], self._starts[node + 1]
                ranks = self._m_rank[lo:hi]
                keep = ranks < until  # on a tie the left part's own merge is further left
                np.minimum.at(first, self._m_right[lo:hi][keep], ranks[keep])
            # ... and while v is still the right part's left edge (a tie: the cross merge is left)
            when = first[self._ls_node]
            hit = (when < d.INF) & (when <= self._ls_until)
            mask = d.canonical.copy()
            mask[self._ls_token[hit]] = False
            if self.boundaries is not None:
                allowed = self.boundaries.allowed(left)
                if allowed is not None:
                    mask |= allowed & d.canonical
                refused = self.boundaries.refused(left)
                if refused is not None:
                    mask &= ~refused
        self._masks[left] = mask
        if len(self._masks) > _MASK_CACHE:
            self._masks.popitem(last=False)
        return mask

    def __call__(self, context: tuple) -> np.ndarray:
        """Allowed next token ids after `context`: `()` or `(anything, last_token)`."""
        if context == ():
            return np.ones(self.V, dtype=bool)
        _, last = context
        left = self._id_of(last)
        mask = self._conflicts(left).copy()
        extra = [i for i in self.overrides.get(left, ()) if 0 <= i < self.V]
        extra += [i for i in self.eos_token_ids if 0 <= i < self.V]
        mask[extra] = True
        return mask

    def allows(self, left: Any, right: Any) -> bool:
        """Whether `right` may follow `left` (tokens or bytes); the same as the mask, per pair."""
        a, b = self._id_of(left), self._id_of(right)
        if b in self.eos_token_ids or b in self.overrides.get(a, ()):
            return True
        d = self.derivations
        if not (d.canonical[a] and d.canonical[b]):
            return False
        if self.boundaries is not None:
            decided = self.boundaries.decide(a, b)
            if decided is not None:
                return decided
        left_edge = d.left_spine(b)
        for node, until in d.right_spine(a):
            for other, other_until in left_edge:
                r = d.rank.get((node, other))
                if r is not None and r < until and r <= other_until:
                    return False
        return True


class CanonicalTokenization(Potential):
    """A constraint: weight 1 when every adjacent token pair is BPE-canonical, else 0.

    Its vocabulary is every token of the tokenizer (EOS tokens included), as
    `Token`s; EOS is always allowed. Sequences of at most one token are
    canonical. Build it with `from_llm`; multiply it into a `PromptedLLM` to
    keep sampling on the tokenizations the model was trained on.

    Args:
        canonicality_filter: the `FastCanonicalityFilterBPE` of the tokenizer.
    """

    is_boolean = True

    def __init__(self, canonicality_filter: FastCanonicalityFilterBPE) -> None:
        self.canonicality_filter = canonicality_filter
        super().__init__(canonicality_filter._decode)

    @classmethod
    def from_llm(cls, llm: PromptedLLM) -> CanonicalTokenization:
        """The constraint for a `PromptedLLM`'s tokenizer, with its EOS tokens allowed anywhere.

        Raises:
            TypeError: if `llm` is not a `PromptedLLM`.
            ValueError: see `FastCanonicalityFilterBPE.from_tokenizer`.
        """
        if not isinstance(llm, PromptedLLM):
            raise TypeError(f"Expected llm to be an instance of PromptedLLM, got {type(llm)}")
        tokenizer = llm.model.tokenizer
        canonicality_filter = FastCanonicalityFilterBPE.from_tokenizer(
            tokenizer, llm.token_maps.eos_idxs
        )
        canonicality_filter.set_overrides(getattr(tokenizer, "name_or_path", None))
        return cls(canonicality_filter)

    def _check_canonicality(self, context: Sequence[Any]) -> bool:
        """Whether every adjacent pair of `context` is allowed by the filter."""
        allows = self.canonicality_filter.allows
        return all(allows(a, b) for a, b in zip(context, context[1:], strict=False))

    async def complete(self, context: Sequence[Any]) -> float:
        return 0.0 if self._check_canonicality(list(context)) else -math.inf

    async def prefix(self, context: Sequence[Any]) -> float:
        return await self.complete(context)

    async def logw_next(self, context: Sequence[Any]) -> LazyWeights:
        """0 for the tokens that may come next (and EOS), -inf for the rest.

        Raises:
            ValueError: if `context` itself is not canonical.
        """
        context = list(context)
        if not self._check_canonicality(context):
            raise ValueError("Context is non-canonical")
        if context:
            mask = self.canonicality_filter((None, context[-1]))
        else:
            mask = np.ones(self.canonicality_filter.V, dtype=bool)
        logws = np.zeros(len(self.vocab_eos))
        logws[:-1][~mask] = -math.inf
        return self.make_lazy_weights(logws)
