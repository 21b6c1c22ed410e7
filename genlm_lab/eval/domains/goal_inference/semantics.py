"""When two Blocksworld goals mean the same: the same set of goal states, decided without enumerating them.

A goal is a conjunction of positive facts; it denotes the set of states,
among all the states Blocksworld can reach, in which every fact holds.
Planetarium (Zuo et al. 2024) counts a generated goal right when it denotes
the same set as the gold one; so does `equivalent`. A state places every
block on the table, on one other block, or in the arm; at most one block on
each block, at most one in the arm, no cycles. `(clear x)` holds when
nothing is on x and x is not held, `(arm-empty)` when nothing is held. Every
such state is reachable from every other (unstack all, then build), so the
reachable states are exactly these.

Enumerating is no option at score time: 9 blocks have 4,596,553 arm-empty
states and 3,549,177 more with a block in hand. Instead:

1. *Consistency is local.* A conjunction G is satisfiable iff no block gets
   two places, no block carries two blocks, at most one block is held, the
   `on` facts make no cycle, no block G calls clear carries a block or is
   held, no held block carries one, and G holds nothing if it says
   `(arm-empty)`. Necessity is plain;
   for sufficiency put every block G leaves unplaced on the table: the table
   holds any number of blocks, so this breaks none of those conditions and
   the result is a state satisfying G. `_Layout.admits(f)` decides whether a
   consistent G stays consistent with one more fact f, in O(blocks).
2. *Negation is a disjunction of facts.* In every state, not-(on x y) means x
   is on the table, held, or on some z != y; not-(clear x) means x is held or
   some z is on x; not-(arm-empty) means some z is held; likewise for
   on-table and holding. So G entails f iff G admits none of these facts.
3. *The closure is the meaning.* The closure of G is every ground fact G
   entails; it is a function of G's set of states, and the set is the states
   satisfying the closure, so two satisfiable goals denote the same set iff
   their closures are equal. Order, duplicates and implied facts (the
   bottom of a fully specified tower is on the table; with every block
   placed the arm is empty) drop out.

A closure of a 9-block goal asks `admits` about 1,000 times (each fact's
negation has at most 10 facts), each a walk down at most 9 blocks; tests
check it against enumeration of every state of up to 5 blocks. Planetarium
also counts a goal wrong when it cannot be reached (it asks for a plan), so
an unsatisfiable goal is never equivalent, not even to another. Planetarium's graph matching also lets objects be renamed where
the initial state is symmetric; the descriptions here name their blocks, so
`equivalent` does not.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from genlm_lab.eval.domains.goal_inference.pddl import ARITY, Fact

__all__ = ["all_facts", "closure", "consistent", "entails", "equivalent", "negation"]

_TABLE, _ARM = object(), object()


class _Layout:
    """What a consistent conjunction of facts fixes: places, supports, clear blocks, the arm."""

    def __init__(self) -> None:
        self.place: dict[str, object] = {}  # block -> _TABLE, _ARM or the block it is on
        self.above: dict[str, str] = {}  # block -> the block on it
        self.clear: set[str] = set()
        self.held: str | None = None
        self.arm_empty = False

    @classmethod
    def of(cls, facts: Iterable[Fact]) -> _Layout | None:
        """The layout of `facts`, or None if no state satisfies them all."""
        layout = cls()
        for fact in facts:
            if fact[0] not in ARITY or len(fact) != ARITY[fact[0]] + 1:
                raise ValueError(f"{fact} is not a Blocksworld fact ({', '.join(ARITY)})")
            if not layout.admits(fact):
                return None
            layout.add(fact)
        return layout

    def admits(self, fact: Fact) -> bool:
        """Whether some state satisfies this layout's facts and `fact` too (see the module doc)."""
        kind = fact[0]
        if kind == "arm-empty":
            return self.held is None
        x = fact[1]
        if kind == "clear":
            return x not in self.above and self.place.get(x) is not _ARM
        if x in self.place:  # x has its place already: the fact must name the same one
            return self.place[x] == {"on-table": _TABLE, "holding": _ARM}.get(kind, fact[-1])
        if kind == "on-table":
            return True
        if kind == "holding":
            return (
                self.held is None
                and not self.arm_empty
                and x not in self.clear
                and x not in self.above
            )
        y = fact[2]  # on x y, with x not yet placed
        if x == y or y in self.above or y in self.clear or self.place.get(y) is _ARM:
            return False
        below: object = y
        while isinstance(below, str):  # a cycle would run from y down to x
            if below == x:
                return False
            below = self.place.get(below)
        return True

    def add(self, fact: Fact) -> None:
        """Record an admitted fact."""
        kind = fact[0]
        if kind == "arm-empty":
            self.arm_empty = True
        elif kind == "clear":
            self.clear.add(fact[1])
        elif kind == "on-table":
            self.place[fact[1]] = _TABLE
        elif kind == "holding":
            self.place[fact[1]] = _ARM
            self.held = fact[1]
        else:
            self.place[fact[1]] = fact[2]
            self.above[fact[2]] = fact[1]


def all_facts(blocks: Sequence[str]) -> list[Fact]:
    """Every ground fact over `blocks` (no `(on x x)`, which no state satisfies)."""
    out: list[Fact] = [("arm-empty",)]
    for x in blocks:
        out += [("on-table", x), ("clear", x), ("holding", x)]
        out += [("on", x, y) for y in blocks if y != x]
    return out


def negation(fact: Fact, blocks: Sequence[str]) -> list[Fact]:
    """Facts whose disjunction holds in exactly the states where `fact` does not.

    Raises:
        ValueError: for an unknown predicate.
    """
    if fact[0] not in ARITY:
        raise ValueError(f"unknown predicate {fact[0]!r}; Blocksworld has {', '.join(ARITY)}")
    if fact[0] == "arm-empty":
        return [("holding", z) for z in blocks]
    x = fact[1]
    if fact[0] == "clear":
        return [("holding", x)] + [("on", z, x) for z in blocks if z != x]
    places: list[Fact] = [("on-table", x), ("holding", x)]
    places += [("on", x, z) for z in blocks if z != x]
    return [p for p in places if p != fact]


def consistent(facts: Iterable[Fact]) -> bool:
    """Whether some Blocksworld state satisfies every fact."""
    return _Layout.of(facts) is not None


def entails(facts: Iterable[Fact], fact: Fact, blocks: Sequence[str]) -> bool:
    """Whether every state of `blocks` that satisfies `facts` satisfies `fact` (True if none does)."""
    layout = _Layout.of(facts)
    return layout is None or not any(layout.admits(g) for g in negation(fact, blocks))


def closure(facts: Iterable[Fact], blocks: Sequence[str]) -> frozenset[Fact] | None:
    """Every fact over `blocks` that `facts` entail: the goal's canonical form (None: unsatisfiable).

    Raises:
        ValueError: if a fact names a block outside `blocks`.
    """
    facts = list(facts)
    known = set(blocks)
    for fact in facts:
        if not set(fact[1:]) <= known:
            raise ValueError(f"{fact} names a block outside {sorted(known)}")
    layout = _Layout.of(facts)
    if layout is None:
        return None
    return frozenset(
        f for f in all_facts(blocks) if not any(layout.admits(g) for g in negation(f, blocks))
    )


def equivalent(a: Iterable[Fact], b: Iterable[Fact], blocks: Sequence[str]) -> bool:
    """Whether goals `a` and `b` denote the same non-empty set of states of `blocks`."""
    closed = closure(a, blocks)
    return closed is not None and closed == closure(b, blocks)
