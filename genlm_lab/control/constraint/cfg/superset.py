"""`regular_superset`: a regex whose language is every text of a regular Lark grammar.

A grammar without recursion through other rules is regular: a rule that
calls itself only at its start (`a: a x | y`, what Lark makes of `y x*`)
reads as `y x*`, and one that calls itself only at its end (`a: x a | y`)
as `x* y`. Each terminal is its own regex, and `%ignore` terminals may come
before and after each of them. The result holds every text the grammar
derives, and more where llguidance's lexer reads two terminals as one (it
takes the longest match) or where it refuses `%ignore` text at the very end,
so the fewest tokens it needs to end a prefix is a lower bound on the
grammar's: `budget.lower_bound` compiles it (`regular.superset`, reading each
class as every dialect's), and a budget refuses on it soundly. None where the
grammar is not regular this way (an expression inside parentheses), a
terminal has flags, or `lark` cannot read the grammar.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from genlm_lab.control.constraint.cfg.earley import parse_lark

__all__ = ["regular_superset"]


class _NotRegularGrammar(Exception):
    """The grammar is not regular in the way this module reads (or a terminal is unreadable)."""


@lru_cache(maxsize=64)
def regular_superset(grammar: str) -> str | None:
    """A regex (Python's syntax) holding every text of the Lark `grammar` (see the module),
    or None."""
    parsed = parse_lark(grammar)
    if parsed is None:
        return None
    terminals = {t.name: t.pattern for t in parsed.terminals}
    try:
        pieces = {name: _terminal(pattern) for name, pattern in terminals.items()}
        if any(name not in pieces for name in parsed.ignore_tokens):
            return None
        ignore = "|".join(pieces[name] for name in parsed.ignore_tokens)
        gap = f"({ignore})*" if ignore else ""
        rules: dict[str, list[list[Any]]] = {}
        for rule in parsed.rules:
            rules.setdefault(rule.origin.name, []).append(list(rule.expansion))
        if "start" not in rules:
            return None
        text = _Reader(rules, {n: gap + p for n, p in pieces.items()}).read("start") + gap
    except (_NotRegularGrammar, RecursionError):
        return None
    return text


def _terminal(pattern: Any) -> str:
    if pattern.flags:
        raise _NotRegularGrammar(f"flags {sorted(pattern.flags)}")
    if pattern.type == "str" and "\\" in pattern.value:
        # lark keeps `"\/"` and `"\b"` as written; llguidance reads them as `/` and a backspace
        raise _NotRegularGrammar("a backslash lark and llguidance read apart")
    return f"({pattern.to_regexp()})"


class _Reader:
    """Each rule's regex, where the rules reach themselves only as described in the module."""

    def __init__(self, rules: dict[str, list[list[Any]]], terminals: dict[str, str]) -> None:
        self.rules = rules
        self.terminals = terminals
        self.done: dict[str, str] = {}
        self.open: set[str] = set()

    def read(self, name: str) -> str:
        found = self.done.get(name)
        if found is not None:
            return found
        if name not in self.rules:
            raise _NotRegularGrammar(f"{name} has no rule")
        if name in self.open:
            raise _NotRegularGrammar(f"{name} is reached through another rule")
        self.open.add(name)
        left, right, plain = [], [], []
        for expansion in self.rules[name]:
            names = [s.name for s in expansion]
            if name not in names:
                plain.append(expansion)
            elif names.count(name) == 1 and names[0] == name and len(names) > 1:
                left.append(expansion[1:])
            elif names.count(name) == 1 and names[-1] == name and len(names) > 1:
                right.append(expansion[:-1])
            else:
                raise _NotRegularGrammar(f"{name} calls itself in its middle")
        if left and right:
            raise _NotRegularGrammar(f"{name} calls itself at both ends")
        if not plain:
            raise _NotRegularGrammar(f"{name} never ends")
        base = self._alternatives(plain)
        if left:
            found = f"{base}{self._alternatives(left)}*"
        elif right:
            found = f"{self._alternatives(right)}*{base}"
        else:
            found = base
        self.open.discard(name)
        self.done[name] = found
        return found

    def _alternatives(self, expansions: list[list[Any]]) -> str:
        return "(" + "|".join(self._sequence(e) for e in expansions) + ")"

    def _sequence(self, symbols: list[Any]) -> str:
        return "".join(self._terminal(s.name) if s.is_term else self.read(s.name) for s in symbols)

    def _terminal(self, name: str) -> str:
        found = self.terminals.get(name)
        if found is None:  # `%declare`d: written by something else, its text unknown
            raise _NotRegularGrammar(f"{name} has no pattern")
        return found
