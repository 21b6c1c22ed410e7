"""Where GPT-2's pre-tokenizer regex splits text, as rules on two adjacent tokens.

A byte-level BPE tokenizer first splits text with a regex (contractions,
` ?letters`, ` ?digits`, ` ?other`, whitespace runs) and runs BPE on each
piece alone. The bigram test on merges alone misses that in two ways:

* a boundary the regex always makes (letter | punctuation, `.'` | `s`)
  stops merges across it, so the pair is canonical whatever the merges say;
* a whitespace run followed by a non-space is split before its last
  character (`"\\n\\nA"` is `\\n`, `\\n`, `A`), so an all-whitespace token of
  two or more characters is never followed by a non-space token, and one
  whitespace character (alone or leading a word) may follow any
  all-whitespace token;
* a run of punctuation (or a space) swallows an apostrophe, so a
  contraction token (`'s`) never follows one (`.'s` is `.'`, `s`).

Both are over token edges only (their first and last characters), so they
vectorise over the vocabulary. They apply where the tokenizer's
pre-tokenizer is exactly `ByteLevel(use_regex=True)`, the GPT-2 pattern
(GPT-2, SmolLM2, ...); other patterns (Llama 3's `\\s*[\\r\\n]+`) keep the
bigram test alone.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import regex

__all__ = ["RegexBoundaries", "uses_gpt2_regex"]

UNKNOWN, LETTER, DIGIT, OTHER, SPACE, WHITESPACE = range(6)
_WORDLIKE = (LETTER, DIGIT, OTHER)
_CLASSES = [(regex.compile(r"\p{L}"), LETTER), (regex.compile(r"\p{N}"), DIGIT)]
_WS = regex.compile(r"\s")


def uses_gpt2_regex(tokenizer: Any) -> bool:
    """Whether the tokenizer pre-tokenizes with GPT-2's regex (`ByteLevel(use_regex=True)`) alone."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    try:
        pre = json.loads(backend.to_str()).get("pre_tokenizer") or {}
    except Exception:  # no fast tokenizer: no known pre-tokenizer
        return False
    return pre.get("type") == "ByteLevel" and bool(pre.get("use_regex", True))


def _cls(ch: str) -> int:
    if ch == " ":
        return SPACE
    if _WS.match(ch):
        return WHITESPACE
    for pattern, code in _CLASSES:
        if pattern.match(ch):
            return code
    return OTHER


class RegexBoundaries:
    """Per-token edge classes, and the pairs GPT-2's regex forces apart or joins.

    Args:
        tokens: the bytes of each token id.
        atoms: token ids that are no merge's result and more than one
            character (added and special tokens, split off before the regex).
    """

    def __init__(self, tokens: Sequence[bytes], atoms: np.ndarray) -> None:
        n = len(tokens)
        self.first = np.zeros(n, dtype=np.int8)
        self.last = np.zeros(n, dtype=np.int8)
        self.all_ws = np.zeros(n, dtype=bool)
        self.width = np.zeros(n, dtype=np.int64)
        one_ws = np.zeros(n, dtype=bool)  # one whitespace character, then none or a non-space
        self.contraction = np.zeros(n, dtype=bool)  # punctuation, then a letter: `'s`
        for i, data in enumerate(tokens):
            try:
                text = bytes(data).decode("utf-8")
            except UnicodeDecodeError:
                continue  # part of a character: leave it to the merges
            if not text:
                continue
            classes = [_cls(c) for c in text[:2]]
            self.first[i], self.last[i] = classes[0], _cls(text[-1])
            self.width[i] = len(text)
            self.all_ws[i] = all(_WS.match(c) for c in text)
            one_ws[i] = classes[0] in (SPACE, WHITESPACE) and (
                len(text) == 1 or classes[1] in _WORDLIKE
            )
            self.contraction[i] = classes[0] == OTHER and classes[1:] == [LETTER]
        self.one_ws = one_ws
        self.starts_wordlike = np.isin(self.first, _WORDLIKE)
        self.starts_ws = np.isin(self.first, (SPACE, WHITESPACE))
        self.atoms = atoms
        self.contraction &= ~atoms

    def allowed(self, a: int) -> np.ndarray | None:
        """Tokens the regex separates from `a` in some text (None: no rule for `a`)."""
        if self.all_ws[a]:
            out = self.one_ws.copy()
            if self.width[a] == 1 and self.first[a] == WHITESPACE:  # "\n" | "x": `\s+` ends
                out |= self.starts_wordlike
            return out
        last = self.last[a]
        if last in _WORDLIKE:  # letters | digits | other, and anything | whitespace
            return (self.starts_wordlike & (self.first != last)) | self.starts_ws
        return None

    def _swallows(self, a: int) -> bool:
        """Whether `a` ends a punctuation run or a space: an apostrophe after it joins the run."""
        return self.last[a] == OTHER or (self.all_ws[a] and self.last[a] == SPACE)

    def refused(self, a: int) -> np.ndarray | None:
        """Tokens that never follow `a` (a whitespace run gives its last character away)."""
        out = None
        if self.all_ws[a] and self.width[a] >= 2:
            out = self.starts_wordlike & ~self.atoms
        if self._swallows(a):
            out = self.contraction if out is None else out | self.contraction
        return out

    def decide(self, a: int, b: int) -> bool | None:
        """`allowed` / `refused` for one pair: True, False, or None (no rule: the merges decide)."""
        if self.contraction[b] and self._swallows(a):
            return False
        if self.all_ws[a]:
            if self.width[a] >= 2 and self.starts_wordlike[b] and not self.atoms[b]:
                return False
            if self.one_ws[b]:
                return True
            if self.width[a] == 1 and self.first[a] == WHITESPACE and self.starts_wordlike[b]:
                return True
            return None
        last = self.last[a]
        if last in _WORDLIKE and (
            (self.starts_wordlike[b] and self.first[b] != last) or self.starts_ws[b]
        ):
            return True
        return None
