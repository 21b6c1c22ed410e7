"""`CharAutomaton`: a Python `regex` pattern's partial matching as a lazy DFA over characters.

Why a second regex compiler beside `automata.regex_automaton`: that one reads
a pattern with interegular (the common `re` subset) into a weighted byte
automaton with GenLM's uniform weights, for `WFSA`; this one reads the
patterns of Python's `regex` module (what `PythonRegex` takes), tests each
character set with that module itself (its `\\w`, `\\s` and `.` differ from
`re`'s), and must agree with the backtracking engine's partial-match verdicts
exactly. One regex dialect and one purpose each.
"""

from __future__ import annotations

import re
from itertools import chain
from re._constants import MAXREPEAT as _MAXREPEAT
from typing import Any

import regex

from genlm_lab.control.constraint.regular.parse_tree import parse

__all__ = ["CharAutomaton"]

_PRED, _EXCL, _EPS, _FINAL = 0, 1, 2, 3
_MAX_STATES = 4096  # a pattern whose automaton would be larger keeps to the engine
_CATEGORIES = {
    "CATEGORY_DIGIT": r"\d",
    "CATEGORY_NOT_DIGIT": r"\D",
    "CATEGORY_SPACE": r"\s",
    "CATEGORY_NOT_SPACE": r"\S",
    "CATEGORY_WORD": r"\w",
    "CATEGORY_NOT_WORD": r"\W",
}


class _NotModelled(Exception):
    """The pattern holds something `CharAutomaton` does not model (it keeps to the engine)."""


def _char(code: int) -> str:
    return f"\\U{code:08x}"


def _class_source(op: str, arg: Any) -> str:
    """`regex`-module source of one character item of `re`'s parse (a literal, `.` or a set)."""
    if op == "LITERAL":
        return _char(arg)
    if op == "NOT_LITERAL":
        return f"[^{_char(arg)}]"
    if op == "ANY":
        return "."
    parts = []
    for item, value in arg:  # op == "IN"
        name = item.name
        if name == "NEGATE":
            parts.insert(0, "^")
        elif name == "LITERAL":
            parts.append(_char(value))
        elif name == "RANGE":
            parts.append(f"{_char(value[0])}-{_char(value[1])}")
        elif name == "CATEGORY" and value.name in _CATEGORIES:
            parts.append(_CATEGORIES[value.name])
        else:
            raise _NotModelled(name)
    return "[" + "".join(parts) + "]"


_ONE_CHARACTER = ("Any", "AnyAll", "AnyU", "Character", "Property", "Range")


def _one_character(pattern: str) -> bool:
    """Whether the `regex` module parses `pattern` (no flags) as one character or character set.

    Such a pattern matches exactly one character, so a text is live iff it is
    empty or one character the pattern matches. Read with the module's own
    (private) parser, so `\\p{..}` and set operations are read as it reads
    them; False wherever that parser is not there or says anything else.
    """
    try:
        from regex._main import _Info, _parse_pattern, _Source

        source = _Source(pattern)
        info = _Info(0, source.char_type, {})
        parsed = _parse_pattern(source, info)
        items = parsed.items if type(parsed).__name__ == "Sequence" else [parsed]
        if not source.at_end() or info.flags or len(items) != 1:
            return False
        name = type(items[0]).__name__
    except Exception:  # noqa: BLE001 - an unknown parser version: keep to the engine
        return False
    return name in _ONE_CHARACTER or name.startswith("Set")


class CharAutomaton:
    """A pattern's partial matching as a DFA over characters, built lazily from an NFA.

    Only for patterns that Python's own `re` parser reads (without warnings,
    flags or case folding) and that hold nothing but characters, sets, `.`,
    alternation, groups and greedy or lazy repeats, `^`/`\\A` only at the start
    and `$`/`\\Z` only at the end, and possessive repeats of one character
    outside any repeat. For those, `fullmatch(text, partial=True)` finds a
    match iff some path of the backtracking engine reads all of `text`: the
    set of NFA states reached after `text` is not empty (a possessive repeat
    of one character leaves its loop only on a character it cannot take).
    Each character set is tested by the `regex` module itself (its `\\w`, `\\s`
    and `.` differ from `re`'s), so the automaton agrees with the engine
    character for character. A pattern the `regex` module itself parses as
    one character set (`\\P{Greek}`, `[\\p{L}&&\\P{Lu}]`) is the automaton of
    that set, tested with the pattern. `build` returns None for any other.
    """

    def __init__(self) -> None:
        self.kind: list[int] = []
        self.pred: list[int] = []  # PRED/EXCL: the character set tested
        self.next: list[Any] = []  # PRED: target; EXCL: (loop, exit); EPS: targets
        self.sets: list[Any] = []  # the compiled character sets
        self._set_ids: dict[str, int] = {}
        self._closures: dict[int, frozenset[int]] = {}
        self._ids: dict[frozenset[int], int] = {}
        self.states: list[frozenset[int]] = []  # DFA state -> its NFA states
        self.rows: list[dict[str, int]] = []  # DFA state -> char -> DFA state (-1: dead)
        self.ascii: list[list[int]] = []  # the same for the 128 ASCII chars (-2: not yet known)
        self.start = -1

    # ---- building
    @classmethod
    def build(cls, pattern: str, flags: int) -> CharAutomaton | None:
        """The automaton of `pattern`, or None where it is not exactly the engine's (see above)."""
        if flags:
            return None
        out = cls()
        final = out._add(_FINAL, -1, None)
        if _one_character(pattern):  # the engine's own set, tested on each character
            out.sets.append(regex.compile(pattern).fullmatch)
            out.start = out._dfa(out._closure(out._add(_PRED, 0, final)))
            return out
        if "[:" in pattern:  # POSIX classes: `re` reads `[[:alpha:]]` as a plain set
            return None
        try:
            parsed = parse(pattern)
            if parsed is None:
                return None
            if parsed.state.flags & ~re.UNICODE:
                return None
            out.start = out._dfa(out._closure(out._seq(list(parsed), final, True, True, False)))
        except Exception:  # noqa: BLE001 - anything not modelled keeps to the engine
            return None
        return out

    def _add(self, kind: int, pred: int, nxt: Any) -> int:
        if len(self.kind) >= _MAX_STATES:
            raise _NotModelled("too many states")
        self.kind.append(kind)
        self.pred.append(pred)
        self.next.append(nxt)
        return len(self.kind) - 1

    def _set(self, op: str, arg: Any) -> int:
        source = _class_source(op, arg)
        found = self._set_ids.get(source)
        if found is None:
            found = self._set_ids[source] = len(self.sets)
            self.sets.append(regex.compile(source).fullmatch)
        return found

    def _seq(self, items: list, nxt: int, head: bool, tail: bool, looped: bool) -> int:
        """Entry state of the sequence `items` followed by state `nxt` (built back to front)."""
        anchors = [op.name == "AT" for op, _ in items]
        for i in reversed(range(len(items))):
            in_head = head and all(anchors[:i])
            in_tail = tail and all(anchors[i + 1 :])
            nxt = self._item(items[i], nxt, in_head, in_tail, looped)
        return nxt

    def _item(self, item: tuple, nxt: int, head: bool, tail: bool, looped: bool) -> int:
        op, arg = item[0].name, item[1]
        if op in ("LITERAL", "NOT_LITERAL", "ANY", "IN"):
            return self._add(_PRED, self._set(op, arg), nxt)
        if op == "AT":
            name = arg.name
            if (name in ("AT_BEGINNING", "AT_BEGINNING_STRING") and head) or (
                name in ("AT_END", "AT_END_STRING") and tail
            ):
                return nxt  # always true there: fullmatch starts at 0 and must reach the end
            raise _NotModelled(name)
        if op == "BRANCH":
            return self._add(
                _EPS, -1, [self._seq(list(b), nxt, head, tail, looped) for b in arg[1]]
            )
        if op == "SUBPATTERN":
            _, add_flags, del_flags, body = arg
            if add_flags or del_flags:
                raise _NotModelled("scoped flags")
            return self._seq(list(body), nxt, head, tail, looped)
        if op in ("MAX_REPEAT", "MIN_REPEAT"):  # greedy or lazy: the same paths exist
            low, high, body = arg
            body = list(body)
            if high == _MAXREPEAT:
                loop = self._add(_EPS, -1, None)
                self.next[loop] = [self._seq(body, loop, False, False, True), nxt]
                entry = loop
            else:
                entry = nxt
                for _ in range(high - low):
                    entry = self._add(_EPS, -1, [self._seq(body, entry, False, False, True), nxt])
            for _ in range(low):
                entry = self._seq(body, entry, False, False, True)
            return entry
        if op == "POSSESSIVE_REPEAT" and not looped:
            low, high, body = arg
            body = list(body)
            if len(body) != 1 or body[0][0].name not in ("LITERAL", "NOT_LITERAL", "ANY", "IN"):
                raise _NotModelled("possessive repeat of more than one character")
            pred = self._set(body[0][0].name, body[0][1])
            if high == _MAXREPEAT:
                entry = self._add(_EXCL, pred, None)
                self.next[entry] = (entry, nxt)
            else:
                entry = nxt
                for _ in range(high - low):
                    entry = self._add(_EXCL, pred, (entry, nxt))
            for _ in range(low):
                entry = self._add(_PRED, pred, entry)
            return entry
        raise _NotModelled(op)

    def admits_nothing(self) -> bool:
        """Whether no path from the start reaches the end over character sets that hold a
        character (a loop's exit counts as reachable: the answer is never a wrong True)."""
        empty: dict[int, bool] = {}

        def holds_none(pred: int) -> bool:
            if pred not in empty:
                test = self.sets[pred]
                empty[pred] = not any(
                    test(chr(c)) is not None
                    for c in chain(range(0x800), range(0x800, 0xD800), range(0xE000, 0x110000))
                )
            return empty[pred]

        seen = set(self.states[self.start]) if self.start >= 0 else set()
        todo = list(seen)
        while todo:
            s = todo.pop()
            kind = self.kind[s]
            if kind == _FINAL:
                return False
            nxt = []
            if kind == _PRED and not holds_none(self.pred[s]):
                nxt.append(self.next[s])
            elif kind == _EXCL:
                if not holds_none(self.pred[s]):
                    nxt.append(self.next[s][0])
                nxt.append(self.next[s][1])
            for t in nxt:
                for u in self._closure(t):
                    if u not in seen:
                        seen.add(u)
                        todo.append(u)
        return True

    # ---- running
    def _closure(self, state: int) -> frozenset[int]:
        found = self._closures.get(state)
        if found is None:
            out, seen, stack = set(), {state}, [state]
            while stack:
                s = stack.pop()
                if self.kind[s] == _EPS:
                    for t in self.next[s]:
                        if t not in seen:
                            seen.add(t)
                            stack.append(t)
                else:
                    out.add(s)
            found = self._closures[state] = frozenset(out)
        return found

    def _dfa(self, states: frozenset[int]) -> int:
        if not states:
            return -1
        found = self._ids.get(states)
        if found is None:
            found = self._ids[states] = len(self.states)
            self.states.append(states)
            self.rows.append({})
            self.ascii.append([-2] * 128)
        return found

    def _step_states(self, states: frozenset[int], char: str) -> set[int]:
        out: set[int] = set()
        for s in states:
            kind = self.kind[s]
            if kind == _FINAL:
                continue
            hit = self.sets[self.pred[s]](char) is not None
            if kind == _PRED:
                if hit:
                    out |= self._closure(self.next[s])
            elif hit:
                out |= self._closure(self.next[s][0])
            else:  # a possessive loop that cannot take `char` hands it to what follows
                out |= self._step_states(self._closure(self.next[s][1]), char)
        return out

    def step(self, state: int, char: str) -> int:
        """The DFA state after `char` from `state` (-1: no path reads it, the text is dead)."""
        row = self.rows[state]
        found = row.get(char)
        if found is None:
            found = row[char] = self._dfa(frozenset(self._step_states(self.states[state], char)))
            if len(char) == 1 and ord(char) < 128:
                self.ascii[state][ord(char)] = found
        return found

    def run(self, text: str, state: int | None = None) -> int:
        """The DFA state after `text` (from the start, or from `state`); -1 if dead."""
        state = self.start if state is None else state
        for char in text:
            if state < 0:
                break
            state = self.step(state, char)
        return state
