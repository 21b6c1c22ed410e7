"""`MaskView`: what a product of potentials allows next, token by token and as a trie.

For one context, every factor of a potential (`potential.factors()`: the LM,
each regex / grammar / schema, a critic) gives a next-token log-weight over
`vocab_eos`. A factor *blocks* a token where its weight is -inf. The view shows
the LM's top-k tokens with their probability and the factors that block each,
the allowed mass (the LM probability of the tokens no factor blocks, EOS
included: the weight a direct sampler adds when every other factor is a
constraint), the blocked mass, and, on request, the vocabulary's trie with the
subtrees greyed where every token is blocked. An AWRS trace (the tokens it drew,
accepted and rejected, and the weight it returned) can be shown next to the
exact mass it estimates.

`mask_data` is the pure part (arrays in, a dict out); `mask_data_of` asks the
potential's factors for their weights; `MaskView` draws the dict, statically
(`mask_html`) and live.
"""

from __future__ import annotations

import asyncio
import math
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from genlm_lab.control.potential.base import factor_names
from genlm_lab.trie import TokenCharacterTrie
from genlm_lab.util import escape_bytes
from genlm_lab.widgets._mask_data import mask_data, mask_html, normalized_logprobs
from genlm_lab.widgets.base import LiveView, esm
from genlm_lab.widgets.trie_view import _parse_prefix, trie_data

__all__ = ["MaskView", "mask_data", "mask_data_of", "mask_html"]


async def _weights(factor: Any, context: list) -> np.ndarray:
    try:
        return np.asarray((await factor.logw_next(context)).weights, dtype=np.float64)
    except ValueError:  # the context is already ruled out: nothing can follow it
        return np.full(len(factor.vocab_eos), -math.inf)


def _context_tokens(potential: Any, context: Any) -> list:
    """A context as a list of the potential's tokens (text is tokenised by its LM)."""
    if isinstance(context, (str, bytes, bytearray)):
        text = context.encode() if isinstance(context, str) else bytes(context)
        llm = next((f for f in potential.factors() if hasattr(f, "token_ids")), None)
        if llm is None:
            raise ValueError(
                "a text context needs an LM factor (PromptedLLM) to tokenise it; "
                "pass a list of the potential's tokens instead"
            )
        ids = llm.model.tokenizer.encode(text.decode("utf-8", "replace"), add_special_tokens=False)
        return [potential.vocab_eos[potential.lookup[llm.model.byte_vocab[i]]] for i in ids]
    return list(context)


def _context_text(context: list) -> str:
    return escape_bytes(
        b"".join(bytes(t) if not isinstance(t, int) else bytes([t]) for t in context)
    )


async def mask_data_of(
    potential: Any,
    context: Any = (),
    *,
    top_k: int = 20,
    n_allowed: int = 5,
    awrs: Any = None,
) -> tuple[dict, dict[str, np.ndarray]]:
    """`mask_data` of a potential after `context`, and the factor weights it came from.

    Args:
        potential: a `Potential` (a `Product` shows one column per factor), or a
            token sampler (its target is used).
        context: a list of the potential's tokens, or text (tokenised by the LM factor).
        top_k: rows for the LM's most probable tokens (see `mask_data`).
        n_allowed: extra rows for the most probable allowed tokens outside the top k.
        awrs: an AWRS sampler (its `sample_with_info(context)` is run once) or its
            `info["awrs"]` dict; the trace is shown next to the exact mass.
    """
    sampler = None
    if not hasattr(potential, "factors") and hasattr(potential, "target"):
        sampler, potential = potential, potential.target
    if awrs is None and sampler is not None and type(sampler).__name__ == "AWRS":
        awrs = sampler
    tokens = _context_tokens(potential, context)
    potential.encode(tokens)  # a token outside the vocabulary: one clear ValueError, here
    factors = potential.factors()
    names = factor_names(potential)  # the names control.SMC records extras under
    arrays = await asyncio.gather(*(_weights(f, tokens) for f in factors))
    weights = dict(zip(names, arrays, strict=True))
    boolean = {k: bool(f.is_boolean) for k, f in zip(names, factors, strict=True)}
    if awrs is not None and hasattr(awrs, "sample_with_info"):
        *_, info = await awrs.sample_with_info(tokens)
        awrs = info.get("awrs", info)
    data = mask_data(
        potential.vocab_eos,
        weights,
        boolean=boolean,
        context=_context_text(tokens),
        top_k=top_k,
        n_allowed=n_allowed,
        awrs=awrs,
    )
    coverage = {name: _coverage(f) for name, f in zip(names, factors, strict=True)}
    if any(coverage.values()):
        data["coverage"] = {k: v for k, v in coverage.items() if v}
    return data, weights


def _coverage(factor: Any) -> list[dict]:
    """A JSON-schema factor's `coverage` rows (where each constraint is enforced), else []."""
    rows = getattr(factor, "coverage", None)
    if rows is None:
        rows = getattr(getattr(factor, "grammar", None), "coverage", None)
    return list(rows) if isinstance(rows, list) else []


_TRIES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _trie(owner: Any, tokens: Sequence[Any]) -> TokenCharacterTrie:
    """The trie of `vocab_eos` (EOS as the bytes "EOS"), built once per factor."""
    try:
        return _TRIES[owner]
    except (KeyError, TypeError):
        pass
    trie = TokenCharacterTrie(
        [b"EOS" if type(t).__name__ == "EndOfSequence" else _as_bytes(t) for t in tokens]
    )
    try:
        _TRIES[owner] = trie
    except TypeError:
        pass
    return trie


def _as_bytes(t: Any) -> bytes:
    if isinstance(t, int) and not isinstance(t, bool):
        return bytes([t])
    return bytes(t)


class MaskView(LiveView):
    """What a product of potentials allows after a context: top-k rows, masses, trie, AWRS.

    Build it with `await MaskView.of(potential, context)`; `await view.update(context=...)`
    recomputes. In the browser, a toggle switches between the table and the
    vocabulary's trie (blocked subtrees greyed; click a node to drill in); the
    static HTML shows the trie in a collapsed section below the table.

    Args:
        data: `mask_data` output to draw (a view without a potential).
    """

    _esm = esm("mask.js")

    def __init__(self, data: dict | None = None) -> None:
        super().__init__()
        self._potential: Any = None
        self._context: Any = ()
        self._weights: dict[str, np.ndarray] = {}
        self._boolean: dict[str, bool] = {}
        self._awrs: Any = None
        self._message = ""
        self._settings: dict[str, Any] = {
            "top_k": 20,
            "awrs": None,
            "prefix": b"",
            "depth": None,
            "trie_top_k": None,
            "trie": True,
        }
        self._send_now(data or {"kind": "mask", "rows": [], "factors": []})
        self.on_msg(self._on_msg)

    @classmethod
    async def of(
        cls,
        potential: Any,
        context: Any = (),
        *,
        top_k: int = 20,
        awrs: Any = None,
        prefix: bytes | str = b"",
        depth: int | None = None,
        trie_top_k: int | None = None,
        trie: bool = True,
    ) -> MaskView:
        """The mask of `potential` (or a sampler's target) after `context` (see `mask_data_of`).

        Args:
            potential: a `Potential` (a `Product` gives one column per factor) or a sampler.
            context: a list of the potential's tokens, or text (tokenised by its LM).
            top_k: table rows for the LM's most probable tokens.
            awrs: an `AWRS` sampler (run once on the context) or its `info["awrs"]`.
            prefix: the byte prefix whose subtrie of the vocabulary is drawn
                (default: the root; give a prefix for a 49k vocabulary).
            depth: levels drawn below `prefix` (default: 12 for a small
                vocabulary, 2 for a large one).
            trie_top_k: children drawn per node (default: all of them for a
                small vocabulary, 8 for a large one).
            trie: compute the trie at all.
        """
        view = cls()
        view._potential = potential
        await view.update(
            context=context,
            top_k=top_k,
            awrs=awrs,
            prefix=prefix,
            depth=depth,
            trie_top_k=trie_top_k,
            trie=trie,
        )
        return view

    async def update(self, **changes: Any) -> None:
        """Recompute for a new `context` (or any argument of `of`) and redraw.

        Raises:
            ValueError: for an unknown setting, or a context the potential cannot read.
        """
        unknown = sorted(set(changes) - {"context", *self._settings})
        if unknown:
            raise ValueError(
                f"unknown settings {unknown}; expected context or {sorted(self._settings)}"
            )
        if self._potential is None:
            raise ValueError("this MaskView was built from data; use MaskView.of(potential, ...)")
        self._settings.update({k: v for k, v in changes.items() if k != "context"})
        self._context = changes.get("context", self._context)
        data, self._weights = await mask_data_of(
            self._potential, self._context, top_k=1, awrs=self._settings["awrs"]
        )
        self._boolean = {f["name"]: f["boolean"] for f in data["factors"]}
        self._awrs, self._text = data["awrs"], data["context"]
        self._render()

    def _render(self) -> None:
        st = self._settings
        target = getattr(self._potential, "target", self._potential)
        data = mask_data(
            target.vocab_eos,
            self._weights,
            boolean=self._boolean,
            context=self._text,
            top_k=st["top_k"],
        )
        data["awrs"] = self._awrs
        if st["trie"]:
            data["trie"] = self._trie_data(data, target.vocab_eos, target.factors()[0])
            data["trie"]["error"] = self._message
        self.push(lambda: data, final=True)

    def _trie_data(self, data: dict, tokens: Sequence[Any], owner: Any) -> dict:
        st = self._settings
        small = len(tokens) <= 64
        depth = st["depth"] if st["depth"] is not None else (12 if small else 2)
        top = st["trie_top_k"] or (len(tokens) if small else 8)
        lm = data["lm"]
        ws = (
            np.exp(normalized_logprobs(self._weights[lm]))
            if lm
            else np.full(len(tokens), 1 / len(tokens))
        )
        blocked = np.zeros(len(tokens), dtype=bool)
        for w in self._weights.values():
            blocked |= ~(w > -math.inf)
        trie = _trie(owner, tokens)
        return trie_data(trie, ws, st["prefix"], depth, top, data["context"], blocked=blocked)

    def _on_msg(self, _widget: Any, content: dict, _buffers: Any) -> None:
        old = dict(self._settings)
        try:
            self._message = ""
            if "prefix_hex" in content:
                self._settings["prefix"] = bytes.fromhex(content["prefix_hex"])
            if "prefix_text" in content:
                self._settings["prefix"] = _parse_prefix(str(content["prefix_text"]))
            if "depth" in content:
                self._settings["depth"] = int(content["depth"])
            self._render()
        except ValueError as err:  # shown in the view: there is no cell to raise into
            self._settings = old
            self._message = str(err)
            self._render()

    @staticmethod
    def to_html(data: dict) -> str:
        return mask_html(data)
