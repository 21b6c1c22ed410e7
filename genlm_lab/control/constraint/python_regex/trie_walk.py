"""How a `PythonRegex` walks a vocabulary's byte trie: by its automaton, or by the engine.

`PythonRegex.walk_byte_trie` asks one of these for the live tokens after a
context. Where the pattern has an exact automaton (`CharAutomaton`), its
byte-level states run over the trie's edges a depth at a time (`TrieWalker`'s
`_walk_automaton`); otherwise the `regex` engine is asked once per trie node
reached (`_walk_engine`). `byte_mask_walk` is the slow reference both equal.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import regex

from genlm_lab.control.constraint.python_regex.automaton import CharAutomaton
from genlm_lab.control.constraint.python_regex.byte_levels import ByteLevels
from genlm_lab.control.constraint.python_regex.utf8 import split_step

__all__ = ["TrieWalker", "byte_mask_walk"]

_UNTIMED_CHARS = 16  # prefix checks on texts this short run without the timeout
_ASCII = [chr(b) for b in range(128)]
_BYTES = [bytes((b,)) for b in range(256)]


def _positional_partial() -> bool:
    """Whether `fullmatch` takes `partial` as its 5th positional argument (faster than keywords)."""
    try:
        return regex.compile("ab").fullmatch("a", None, None, None, True) is not None
    except TypeError:
        return False


_POSITIONAL = _positional_partial()


class TrieWalker:
    """The trie walks of `PythonRegex` (its state: `_table`, `_byte_ids`, `_byte_keys`,
    `compiled`, `timeout`, `calls`; its checks: `_alive`, `_candidates`)."""

    def _walk_automaton(
        self, auto: CharAutomaton, trie: Any, split: tuple[str, bytes] | None
    ) -> np.ndarray | None:
        """Which tokens of `trie` are live after `split`, read off the automaton (None: dead).

        The automaton's byte-level states run over the trie's edges depth by
        depth, all nodes of a depth at once; a transition is worked out (in
        Python, as `_alive` would decide it) the first time it is met.
        """
        state = 0 if split is None else self._byte_state(auto, split[1], auto.run(split[0]))
        if state == 0:
            return None
        levels = ByteLevels.of(trie)
        states = np.empty(levels.n_nodes, dtype=np.int32)
        states[0] = state
        for child, parent, byte in levels.levels:
            here = states[parent]
            nxt = self._table[here, byte]
            unknown = nxt < 0
            if unknown.any():
                for s, b in set(zip(here[unknown].tolist(), byte[unknown].tolist(), strict=True)):
                    self._table[s, b] = self._byte_step(auto, s, b)
                nxt = self._table[here, byte]
            states[child] = nxt
        return states[levels.token_node] != 0

    def _byte_state(self, auto: CharAutomaton, tail: bytes, char_state: int) -> int:
        """The byte-level state (id) for a text in DFA state `char_state` plus the unfinished `tail`.

        0 is the dead state: the text is dead, or no character starting with
        `tail` keeps it live (the test `_alive` makes, on the same candidates).
        """
        if char_state < 0:
            return 0
        if tail and not any(auto.step(char_state, c) >= 0 for c in self._candidates(tail)):
            return 0
        key = (char_state, tail)
        found = self._byte_ids.get(key)
        if found is None:
            found = self._byte_ids[key] = len(self._byte_keys)
            self._byte_keys.append(key)
            if found >= len(self._table):
                grown = np.full((2 * len(self._table), 256), -1, dtype=np.int32)
                grown[: len(self._table)] = self._table
                self._table = grown
        return found

    def _byte_step(self, auto: CharAutomaton, state: int, byte: int) -> int:
        """The byte-level state after `byte` from `state` (0: dead)."""
        char_state, tail = self._byte_keys[state]
        if not tail and byte < 0x80:
            return self._byte_state(auto, b"", auto.step(char_state, _ASCII[byte]))
        step = split_step(tail + _BYTES[byte])
        if step is None:
            return 0
        return self._byte_state(auto, step[1], auto.run(step[0], char_state))

    def _walk_engine(self, trie: Any, split: tuple[str, bytes] | None) -> list[int] | None:
        """The live tokens of `trie` after `split`, one engine call per node reached (None: dead)."""
        if split is None or not self._alive(*split):
            return None
        children, ends = trie.children, trie.ends
        timeout, alive, compiled = self.timeout, self._alive, self.compiled
        fullmatch = compiled.fullmatch
        if not _POSITIONAL:

            def fullmatch(text: str, _p: Any, _e: Any, _c: Any, partial: bool, *limit: Any) -> Any:
                return compiled.fullmatch(text, partial=partial, timeout=(limit or [None])[0])

        live = list(ends[0])  # empty tokens leave the context unchanged
        calls = 0
        stack = [(0, *split)]
        while stack:
            node, text, tail = stack.pop()
            for byte, child in children[node].items():
                if not tail and byte < 0x80:
                    longer, rest = text + _ASCII[byte], b""
                    calls += 1
                    if timeout is None or len(longer) <= _UNTIMED_CHARS:
                        found = fullmatch(longer, None, None, None, True)
                    else:
                        found = fullmatch(longer, None, None, None, True, timeout)
                    if found is None:
                        continue
                else:
                    step = split_step(tail + _BYTES[byte])
                    if step is None or not alive(text + step[0], step[1]):
                        continue
                    longer, rest = text + step[0], step[1]
                live.extend(ends[child])
                if children[child]:
                    stack.append((child, longer, rest))
        self.calls += calls
        return live


def byte_mask_walk(potential: Any, trie: Any, data: bytes) -> np.ndarray:
    """The token mask by brute force: a full byte mask (`allowed_bytes`) at every live trie node.

    The reference for `PythonRegex.walk_byte_trie` (same `trie` and result),
    kept for tests and benchmarks: it asks the engine about all 256 bytes at
    each node reached, not only those leading to a token.
    """
    out = np.full(trie.n_tokens + 1, -math.inf)
    root = potential.allowed_bytes(data)
    out[-1] = 0.0 if root[256] else -math.inf
    out[list(trie.ends[0])] = 0.0
    stack = [(0, data, root)]
    while stack:
        node, path, mask = stack.pop()
        for byte, child in trie.children[node].items():
            if not mask[byte]:
                continue
            out[list(trie.ends[child])] = 0.0
            if trie.children[child]:
                longer = path + bytes((byte,))
                stack.append((child, longer, potential.allowed_bytes(longer)))
    return out
