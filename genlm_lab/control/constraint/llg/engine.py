"""The mask engine behind regex, grammar and JSON-schema potentials: a thin llguidance adapter.

llguidance (Rust) compiles a grammar once per vocabulary and, for a matcher
advanced through a context, fills the bitmask of every token whose bytes keep
the grammar alive in one native call. This module hides its API behind
`Engine`: contexts are tuples of our token indices, states are cached per
context (SMC particles extend their parent's context by one token, so each
step costs one `consume_token` on a cached state), and the EOS of
our vocabulary is allowed exactly when the grammar accepts. How states are
kept (moved forward, not copied, so long documents cost linear time) is
`matcher_cache.StateCache`.

Special tokens (BOS, chat markers) are never allowed: they are not text.
"""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence

import llguidance
import numpy as np
from llguidance.numpy import fill_next_token_bitmask, fill_next_token_bitmask_par

from genlm_lab.control.constraint.errors import InvalidGrammar
from genlm_lab.control.constraint.llg.mask_weights import read_only_masks
from genlm_lab.control.constraint.llg.matcher_cache import StateCache, as_key
from genlm_lab.util.vocab_key import vocabulary_key

__all__ = ["Engine", "GreedyTokenizer", "InvalidGrammar", "check_grammar", "llg_tokenizer"]

_EOS_TEXT = b"<|genlm-lab-eos|>"


def _regex_position(message: str) -> int | None:
    """The 0-based position of the caret under a regex in a `regex parse error` message."""
    lines = message.splitlines()
    for i, line in enumerate(lines):
        if line.rstrip().endswith("regex parse error:") and i + 2 < len(lines):
            caret = lines[i + 2]
            if "^" in caret:
                return caret.index("^") - 4
    return None


def check_grammar(grammar: str, kind: str, source: str) -> None:
    """Raise `InvalidGrammar` naming the position unless llguidance compiles `grammar`.

    Args:
        grammar: llguidance's grammar text (from `grammar_from_*`).
        kind: "regex", "Lark grammar" or "JSON schema", for the message.
        source: what the user gave, quoted in the message.
    """
    message = llguidance.LLMatcher.validate_grammar(grammar)
    if not message or message.startswith("WARNING"):
        return
    detail = message.strip()
    where = ""
    if kind == "regex":
        pos = _regex_position(message)
        if pos is not None:
            where = f" at position {pos}"
        reason = re.search(r"^error: (.*)$", message, re.MULTILINE)
        detail = reason.group(1) if reason else detail
    elif kind == "Lark grammar":
        at = re.match(r"at (\d+)\((\d+)\): (.*)", message)
        if at:
            where = f" at line {at.group(1)}, column {at.group(2)}"
            detail = at.group(3)
            reason = re.search(r"^error: (.*)$", message, re.MULTILINE)
            if reason:
                detail = f"{detail.rstrip(':')}: {reason.group(1)}"
    raise InvalidGrammar(f"invalid {kind}{where}: {detail}\n{source}")


_NO_FORCING = '%llguidance {"no_forcing": true, "allow_initial_skip": true}\n'


def exact_grammar(grammar: str) -> str:
    """`grammar` with llguidance's forcing switched off, as Lark text.

    By default, where the grammar forces some bytes llguidance allows only
    their canonical tokenization (after "caf" in `café`, the token "é" but
    not the lone byte token b"\\xc3"). A potential allows every token whose
    bytes keep the grammar alive, whatever the tokenization: `no_forcing`.
    """
    try:
        top = json.loads(grammar)
    except json.JSONDecodeError:
        return _NO_FORCING + grammar
    (inner,) = top["grammars"]
    if inner.get("lark_grammar") is not None:
        return _NO_FORCING + inner["lark_grammar"]
    return _NO_FORCING + "start: %json " + json.dumps(inner["json_schema"])


class GreedyTokenizer:
    """What llguidance's `TokenizerWrapper` asks of a tokenizer, for a plain list of byte strings.

    llguidance only uses the encoder to tokenise text the grammar forces; a
    greedy longest match (bytes no token covers are skipped) is enough there.
    """

    def __init__(self, tokens: list[bytes], eos: int, special: list[int]) -> None:
        self.tokens = tokens
        self.eos_token_id = eos
        self.bos_token_id = None
        self.special_token_ids = special
        skip = set(special)
        self._ids = {t: i for i, t in enumerate(tokens) if i not in skip and t}
        self._longest = max((len(t) for t in self._ids), default=1)

    def __call__(self, data: bytes | str) -> list[int]:
        if isinstance(data, str):
            data = data.encode("utf-8")
        out, i = [], 0
        while i < len(data):
            for width in range(min(self._longest, len(data) - i), 0, -1):
                token = self._ids.get(data[i : i + width])
                if token is not None:
                    out.append(token)
                    i += width
                    break
            else:
                i += 1
        return out


_TOKENIZERS: dict[str, llguidance.LLTokenizer] = {}
_TOKENIZERS_LOCK = threading.Lock()


def llg_tokenizer(tokens: Sequence[bytes], special: Iterable[int] = ()) -> llguidance.LLTokenizer:
    """An llguidance tokenizer whose token i is `tokens[i]`, plus an EOS token at index len(tokens).

    Single bytes missing from `tokens` are added after EOS (see below); masks
    are read only over `tokens` and EOS.

    Cached per vocabulary, since the build walks every token once.
    """
    raw = [bytes(t) for t in tokens]
    special_ids = sorted({int(i) for i in special} | {len(raw)})
    key = vocabulary_key(raw, special_ids)
    with _TOKENIZERS_LOCK:
        found = _TOKENIZERS.get(key)
        if found is None:
            # Empty tokens confuse the token trie; they never match anything anyway.
            padded = [t if t else b"<|genlm-lab-empty|>" for t in raw] + [_EOS_TEXT]
            specials = special_ids + [i for i, t in enumerate(raw) if not t]
            # Every single byte must be a token: where the grammar forces bytes no token
            # spells, llguidance otherwise allows wrong tokens (seen: "ca" + "é" for "café"
            # in a vocabulary without "f"). The extra tokens sit after EOS and are never read.
            present = set(padded)
            padded += [bytes([b]) for b in range(256) if bytes([b]) not in present]
            wrapper = llguidance.TokenizerWrapper(GreedyTokenizer(padded, len(raw), specials))
            found = _TOKENIZERS[key] = llguidance.LLTokenizer(wrapper)
        return found


_ROOTS: dict[tuple[int, str], llguidance.LLMatcher] = {}
_ROOTS_LOCK = threading.Lock()


def _root_matcher(tokenizer: llguidance.LLTokenizer, grammar: str) -> llguidance.LLMatcher:
    """A fresh matcher of `grammar` at its start, copied from one compiled per tokenizer."""
    key = (id(tokenizer), grammar)
    with _ROOTS_LOCK:
        root = _ROOTS.get(key)
        if root is None:
            root = llguidance.LLMatcher(tokenizer, exact_grammar(grammar), log_level=0)
            if root.is_error():
                raise InvalidGrammar(root.get_error())
            if len(_ROOTS) >= 64:
                _ROOTS.pop(next(iter(_ROOTS)))
            _ROOTS[key] = root
        return root.deep_copy()


class Engine:
    """Masks and checks of one compiled grammar over one vocabulary, with a cache of states.

    Args:
        tokens: the byte string of each token index of the potential.
        grammar: llguidance grammar text (already validated).
        special: token indices that are never allowed (not text).
        cache_size: how many context states (and masks) to keep, least recently used go first.
        cache_tokens: the most tokens summed over the cached contexts (bounds memory
            whatever the documents' length).
        final: an exact check of a finished text, asked (once per context) where the
            grammar accepts: EOS is allowed only where it passes too. For grammars that
            over-approximate a language (a JSON schema with features llguidance lacks).
    """

    def __init__(
        self,
        tokens: Sequence[bytes],
        grammar: str,
        special: Iterable[int] = (),
        cache_size: int = 4096,
        cache_tokens: int = 1 << 22,
        final: Callable[[bytes], bool] | None = None,
    ) -> None:
        self.n_tokens = len(tokens)
        self._tokens = [bytes(t) for t in tokens]
        self._byte_level = self._tokens == [bytes([i]) for i in range(256)]
        self._final = final
        self._finals: OrderedDict = OrderedDict()
        self._final_tokens = 0
        self.tokenizer = llg_tokenizer(tokens, special)
        self.grammar = grammar
        self._root = _root_matcher(self.tokenizer, grammar)
        self._states = StateCache(self._root, self.n_tokens, cache_size, cache_tokens)
        self._masks: OrderedDict[tuple[int, ...], np.ndarray] = OrderedDict()  # packed bits
        self._mask_tokens = 0
        self._cache_size = cache_size
        self._cache_tokens = cache_tokens
        self._words = (self.tokenizer.vocab_size + 31) // 32
        # `&` with this clears the bits of EOS and of the padding tokens after it
        keep = np.zeros(self._words * 32, dtype=np.uint8)
        keep[: self.n_tokens] = 1
        self._keep = np.packbits(keep, bitorder="little")
        self._dead = np.zeros(self._words * 4, dtype=np.uint8)
        self._dead.flags.writeable = False
        self._executor = llguidance.LLExecutor(num_threads=2)
        self._lock = threading.Lock()
        self.stats = {"masks": 0, "checks": 0}

    # ------------------------------------------------------------ states
    def state(self, context: tuple[int, ...]) -> llguidance.LLMatcher | None:
        """The matcher after `context` (read-only), or None if the context left the grammar."""
        with self._lock:
            return self._states.get(as_key(context))

    def _accepts(self, context, state: llguidance.LLMatcher) -> bool:
        """The grammar accepts `context` here, and so does the final check if there is one."""
        if not state.is_accepting():
            return False
        if self._final is None:
            return True
        found = self._finals.get(context)
        if found is None:
            if isinstance(context, bytes) and self._byte_level:
                text = context
            else:
                text = b"".join(self._tokens[i] for i in context)
            found = self._finals[context] = bool(self._final(text))
            self._final_tokens += len(context)
            while len(self._finals) > 1 and (
                len(self._finals) > self._cache_size or self._final_tokens > self._cache_tokens
            ):
                gone, _ = self._finals.popitem(last=False)
                self._final_tokens -= len(gone)
        return found

    def _state(self, context: tuple[int, ...], pinned=()) -> llguidance.LLMatcher | None:
        return self._states.get(context, pinned)

    def _remember_mask(self, context: tuple[int, ...], bits: np.ndarray) -> None:
        if context in self._masks:
            return
        self._masks[context] = bits
        self._mask_tokens += len(context)
        while len(self._masks) > 1 and (
            len(self._masks) > self._cache_size or self._mask_tokens > self._cache_tokens
        ):
            gone, _ = self._masks.popitem(last=False)
            self._mask_tokens -= len(gone)

    # ------------------------------------------------------------ queries
    def alive(self, context: tuple[int, ...]) -> bool:
        """Whether some continuation of `context` completes the grammar."""
        return self.state(context) is not None

    def accepting(self, context: tuple[int, ...]) -> bool:
        """Whether `context` is a complete string of the grammar (and passes the final check)."""
        context = as_key(context)
        with self._lock:
            state = self._states.get(context)
            return state is not None and self._accepts(context, state)

    def allows(self, context: tuple[int, ...], token: int) -> bool:
        """Whether `token` may follow `context` (EOS: whether the context is complete).

        Uses a cached mask when there is one, else one native check (a few us).
        """
        context = as_key(context)
        with self._lock:
            bits = self._masks.get(context)
            if bits is not None:
                return bool((bits[token >> 3] >> (token & 7)) & 1)
            state = self._state(context)
            if state is None:
                return False
            self.stats["checks"] += 1
            if token >= self.n_tokens:
                return self._accepts(context, state)
            return state.validate_tokens([token]) == 1

    def mask(self, context: tuple[int, ...]) -> np.ndarray:
        """Bool array over the tokens and EOS (last): which may follow `context`."""
        return self.masks([context])[0]

    def masks(self, contexts: Sequence[tuple[int, ...]]) -> list[np.ndarray]:
        """`mask` of several contexts (read-only bool arrays), from `bits`."""
        return read_only_masks(self.bits(contexts), self.n_tokens + 1)

    def bits(self, contexts: Sequence[tuple[int, ...]]) -> list[np.ndarray]:
        """The masks of several contexts as packed bits (read-only uint8, bit i = token i).

        Bit `n_tokens` is EOS; every later bit is 0. The uncached masks are
        computed in one native call (a parallel one for several contexts);
        they are cached packed: 1 bit per token, no per-token Python.
        """
        contexts = [as_key(c) for c in contexts]
        with self._lock:
            out: list[np.ndarray | None] = [self._masks.get(c) for c in contexts]
            todo: dict[tuple[int, ...], list[int]] = {}
            for i, context in enumerate(contexts):
                if out[i] is None:
                    todo.setdefault(context, []).append(i)
            if todo:
                pinned = set(todo)
                states = [(c, self._state(c, pinned)) for c in todo]
                live = [(c, s) for c, s in states if s is not None]
                words = np.zeros((max(len(live), 1), self._words), dtype=np.int32)
                if len(live) == 1:  # one state: no thread hand-off
                    fill_next_token_bitmask(live[0][1], words, 0)
                elif live:
                    fill_next_token_bitmask_par(
                        self._executor, [(s, k) for k, (_, s) in enumerate(live)], words
                    )
                self.stats["masks"] += len(live)
                rows = words.view(np.uint8)
                rows &= self._keep
                eos_byte, eos_bit = divmod(self.n_tokens, 8)
                computed: dict[tuple[int, ...], np.ndarray] = {}
                for k, (c, s) in enumerate(live):
                    row = rows[k]
                    if self._accepts(c, s):
                        row[eos_byte] |= 1 << eos_bit
                    row.flags.writeable = False
                    computed[c] = row
                for c, _ in states:
                    bits = computed.get(c, self._dead)
                    self._remember_mask(c, bits)
                    for i in todo[c]:
                        out[i] = bits
            return out  # type: ignore[return-value]

    def clear(self) -> None:
        """Forget cached states and masks."""
        with self._lock:
            self._states.clear()
            self._masks.clear()
            self._finals.clear()
            self._final_tokens = 0
            self._mask_tokens = 0
