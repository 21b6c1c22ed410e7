"""`lark_of_cfg`: a context-free grammar object written as Lark text, for `BoolCFG(cfg)`.

genlm-control builds a `BoolCFG` from a genlm-grammar `CFG` (rules with a
weight, a head and a body; terminals in `cfg.V`, start symbol `cfg.S`). Ours
compiles Lark text with llguidance, so the rules are written out: each
nonterminal becomes a rule `n<i>`, `start` derives the start symbol, every
rule of nonzero weight is one alternative (weights only say whether a rule
counts: the potential is boolean), and each terminal is a string literal.
A terminal is a byte value (an int below 128: Lark's strings are text, so a
lone byte of a multi-byte character cannot be written), a `str`, or ASCII
`bytes`. Our `WeightedGrammar` reads the same way.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from genlm_lab.control.constraint.errors import InvalidGrammar

__all__ = ["lark_of_cfg"]


def _literal(text: str) -> str:
    """`text` as a Lark string literal (quotes, backslashes and control characters escaped)."""
    out = []
    for c in text:
        if c in '"\\':
            out.append("\\" + c)
        elif ord(c) < 0x20 or ord(c) == 0x7F:
            out.append(f"\\x{ord(c):02x}")
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


def _terminal(symbol: Hashable) -> str:
    if isinstance(symbol, int) and not isinstance(symbol, bool):
        if not 0 <= symbol < 128:
            raise InvalidGrammar(
                f"the terminal byte {symbol} cannot be written in Lark (its strings are text, "
                "and a byte of 128 or more is part of a multi-byte character): give the "
                "grammar str terminals, or use WCFG for a byte-level grammar"
            )
        return _literal(chr(symbol))
    if isinstance(symbol, str):
        return _literal(symbol)
    if isinstance(symbol, (bytes, bytearray)):
        try:
            return _literal(bytes(symbol).decode("ascii"))
        except UnicodeDecodeError:
            raise InvalidGrammar(f"the terminal {bytes(symbol)!r} is not ASCII text") from None
    raise InvalidGrammar(f"a terminal must be a byte value, str or bytes, got {symbol!r:.40}")


def _rules(cfg: Any) -> list[tuple[Any, Hashable, tuple]]:
    rules = getattr(cfg, "rules", None)
    rules = list(cfg) if rules is None else list(rules)
    try:
        return [(r.w, r.head, tuple(r.body)) for r in rules]
    except AttributeError:
        raise TypeError(
            f"cannot read the rules of {type(cfg).__name__}: expected rules with .w, .head, .body"
        ) from None


def lark_of_cfg(cfg: Any) -> str:
    """Lark text for the strings `cfg` derives from its start symbol (rules of weight 0 left out).

    Args:
        cfg: a genlm-grammar `CFG` or a `WeightedGrammar`: `.S`, `.V` and rules.

    Raises:
        TypeError: if `cfg` is not such a grammar.
        InvalidGrammar: for a terminal Lark cannot write (a byte of 128 or more), or
            a grammar that derives no text.
    """
    if not (hasattr(cfg, "S") and hasattr(cfg, "V")):
        raise TypeError(
            f"BoolCFG takes a context-free grammar object (.S, .V, rules), got {type(cfg).__name__}"
            "; for Lark text use BoolCFG.from_lark"
        )
    terminals = set(cfg.V)
    rules = [(head, body) for w, head, body in _rules(cfg) if w]
    # Lark has no way to say "derives nothing": write only the productive symbols.
    productive: set[Hashable] = set()
    grew = True
    while grew:
        grew = False
        for head, body in rules:
            if head not in productive and all(s in terminals or s in productive for s in body):
                productive.add(head)
                grew = True
    if cfg.S not in productive:
        raise InvalidGrammar(f"the grammar derives no text: its start symbol {cfg.S!r} never ends")
    names = {cfg.S: "n0"}
    alternatives: dict[str, list[str]] = {"n0": []}
    for head, body in rules:
        if head not in productive or not all(s in terminals or s in productive for s in body):
            continue
        parts = []
        for s in body:
            if s in terminals:
                if s != "" and s != b"":
                    parts.append(_terminal(s))
            else:
                parts.append(names.setdefault(s, f"n{len(names)}"))
        alternatives.setdefault(names.setdefault(head, f"n{len(names)}"), []).append(
            " ".join(parts)
        )
    lines = ["start: n0"] + [f"{n}: " + " | ".join(alts) for n, alts in alternatives.items()]
    return "\n".join(lines) + "\n"
