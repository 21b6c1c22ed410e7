"""Exact string and prefix weights of a weighted CFG, one input position (column) at a time.

`Tables(grammar, vocab)` trims the grammar to its useful rules, solves the
partition function `Z[X]` (the total weight of all derivations from `X`) and
the null weight `E[X]` (of derivations of the empty string) as least fixed
points with Newton's method, and sets up a CKY chart over *dotted items*
`(rule, d)`: `A(r, d, i, j)` is the weight of the first `d` body symbols of
rule `r` deriving the input between positions `i < j`. Nullable symbols and
unary chains (including cycles: `X -> Y`, `X -> A Y` with `A` nullable) are
summed exactly: within one span, the inside weights solve `v = b + U v`, so
`v = (I - U)^-1 b` with `(I - U)^-1` computed once.

Prefix weights (the total weight of every string that starts with `x`) come
from the prefix grammar: `X'` derives a non-empty prefix of a string of `X`,
through rules `X' -> Y_1 .. Y_(d-1) Y_d'` of weight `w * Z[Y_(d+1)] * ... *
Z[Y_k]`; its chart only ever ends at the last position, so it is one column
per context, computed for every next terminal at once.

The chart is kept in log space (`logaddexp`, log-sum-exp), so weights far below
the smallest float (long inputs, or one reading far less likely than another)
stay exact.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from genlm_lab.control.wcfg.grammar import WeightedGrammar

__all__ = ["Column", "Tables"]

_EPS = np.finfo(float).eps


def _useful_rules(grammar: WeightedGrammar) -> list:
    """The rules of weight > 0 whose symbols are all productive and reachable from the start."""
    rules = [r for r in grammar.rules if r.w > 0]
    terminals = grammar.V
    productive: set[Hashable] = set()

    def ok(r: Any) -> bool:
        return all(y in terminals or y in productive for y in r.body)

    changed = True
    while changed:
        changed = False
        for r in rules:
            if r.head not in productive and ok(r):
                productive.add(r.head)
                changed = True
    rules = [r for r in rules if r.head in productive and ok(r)]
    by_head: dict[Hashable, list] = {}
    for r in rules:
        by_head.setdefault(r.head, []).append(r)
    reached, todo = {grammar.S}, [grammar.S]
    while todo:
        for r in by_head.get(todo.pop(), ()):
            for y in r.body:
                if y not in terminals and y not in reached:
                    reached.add(y)
                    todo.append(y)
    return [r for r in rules if r.head in reached]


class Column:
    """One chart column: what later columns and queries need about the spans ending here."""

    __slots__ = ("prev_items", "inside_start")

    def __init__(self, prev_items: np.ndarray, inside_start: float) -> None:
        self.prev_items = prev_items  # [i, item]: log A(r, d-1, i, j)
        self.inside_start = inside_start  # log inside weight of the start symbol over (0, j)


class Tables:
    """The compiled grammar: trimmed rules, `Z`, `E`, item arrays and unary closures.

    Args:
        grammar: a float `WeightedGrammar`.
        vocab: the terminals in the order of the potential's vocabulary.

    Raises:
        ValueError: if the total weight of the grammar (or of its unary chains) diverges.
    """

    def __init__(self, grammar: WeightedGrammar, vocab: Sequence[Hashable]) -> None:
        rules = _useful_rules(grammar)
        heads = list(dict.fromkeys([grammar.S] + [r.head for r in rules]))
        self.empty = not rules
        nt = {x: k for k, x in enumerate(heads)}
        n = self.n_nt = len(heads)
        self.start = nt[grammar.S]
        term = {x: k for k, x in enumerate(vocab)}
        # items (rule, d), d = 1..k, numbered rule by rule; index M is a zero sentinel
        head, weight, prev, nxt, sym_nt, sym_t, pos = [], [], [], [], [], [], []
        self.nullary = np.zeros(n)  # total weight of empty-bodied rules per head
        for r in rules:
            if not r.body:
                self.nullary[nt[r.head]] += r.w
                continue
            base = len(head)
            for d, y in enumerate(r.body):
                head.append(nt[r.head])
                weight.append(r.w)
                prev.append(base + d - 1 if d else -1)
                nxt.append(base + d + 1 if d + 1 < len(r.body) else -1)
                sym_nt.append(nt.get(y, -1) if y not in grammar.V else -1)
                sym_t.append(term.get(y, -1) if y in grammar.V else -1)
                pos.append(d)
        m = self.n_items = len(head)
        self.item_head = np.array(head, dtype=np.intp)
        self.item_w = np.array(weight, dtype=float)
        prev_a = np.array(prev, dtype=np.intp)
        self.item_prev = np.where(prev_a < 0, m, prev_a)  # -> sentinel
        self.item_next = np.array(nxt, dtype=np.intp)
        nt_a = np.array(sym_nt, dtype=np.intp)
        self.is_nt = nt_a >= 0
        self.item_nt = np.where(self.is_nt, nt_a, n)  # -> sentinel
        pos_a = np.array(pos, dtype=np.intp)
        self.by_pos = [np.flatnonzero(pos_a == d) for d in range(max(pos, default=-1) + 1)]
        leaf = np.zeros((len(vocab), m))
        for k, t in enumerate(sym_t):
            if t >= 0:
                leaf[t, k] = 1.0

        self.Z = self._least_fixpoint(1.0, "total weight")
        self.E = self._least_fixpoint(0.0, "weight of the empty string")
        self.nullpre, suf_e = self._pre_suf(self._values(self.E, 0.0))
        _, suf_z = self._pre_suf(self._values(self.Z, 1.0))
        nonempty = self._nonempty()
        self.item_E = np.where(self.is_nt, np.append(self.E, 0.0)[self.item_nt], 0.0)
        with np.errstate(divide="ignore"):  # log 0 = -inf: weights are kept as logs from here
            self.log_G = np.log(self._closure(suf_e, nonempty))  # span inside from split terms
            self.log_G_prefix = np.log(self._closure(suf_z, nonempty))  # the prefix grammar's
            self.log_nullpre = np.log(self.nullpre)
            self.log_item_E = np.log(self.item_E)
            self.log_leaf = np.log(leaf)

    # ------------------------------------------------------------ fixed points
    def _values(self, x: np.ndarray, leaf: float) -> np.ndarray:
        """The value of each item's symbol: `x` for nonterminals, `leaf` for terminals."""
        return np.where(self.is_nt, np.append(x, 0.0)[self.item_nt], leaf)

    def _pre_suf(self, val: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Products of the values before (pre) and after (suf) each item within its rule."""
        pre = np.ones(self.n_items)
        suf = np.ones(self.n_items)
        for idx in self.by_pos[1:]:
            p = self.item_prev[idx]
            pre[idx] = pre[p] * val[p]
        for idx in reversed(self.by_pos):
            q = self.item_next[idx]
            has = q >= 0
            suf[idx[has]] = suf[q[has]] * val[q[has]]
        return pre, suf

    def _evaluate(self, x: np.ndarray, leaf: float) -> tuple[np.ndarray, np.ndarray]:
        """f(x) (the rules applied once to `x`) and its Jacobian."""
        val = self._values(x, leaf)
        pre, suf = self._pre_suf(val)
        f = self.nullary.copy()
        last = self.item_next < 0
        np.add.at(f, self.item_head[last], (self.item_w * pre * val)[last])
        jac = np.zeros((self.n_nt, self.n_nt + 1))
        np.add.at(jac, (self.item_head, self.item_nt), self.item_w * pre * suf)
        return f, jac[:, : self.n_nt]

    def _least_fixpoint(self, leaf: float, what: str) -> np.ndarray:
        """Least solution of x = f(x) by Newton's method from 0 (monotone for these systems)."""
        n = self.n_nt
        x = np.zeros(n)
        eye = np.eye(n)
        diverges = ValueError(
            f"the grammar's {what} diverges: the sum over its derivations is infinite "
            "(lower the weights of its recursive rules)"
        )
        for _ in range(300):
            f, jac = self._evaluate(x, leaf)
            residual = f - x
            if np.all(np.abs(residual) <= 4 * _EPS * (np.abs(f) + np.abs(x))):
                return x
            try:
                step = np.linalg.solve(eye - jac, residual)
            except np.linalg.LinAlgError:
                raise diverges from None
            if not np.all(np.isfinite(step)) or np.any(step < -1e-9 * (1.0 + x)):
                raise diverges  # I - J is no longer an M-matrix: past the spectral radius 1
            new = x + np.maximum(step, 0.0)
            if np.max(new, initial=0.0) > 1e150:
                raise diverges
            if np.all(np.abs(new - x) <= 4 * _EPS * np.abs(new)):
                return new
            x = new
        raise diverges

    def _nonempty(self) -> np.ndarray:
        """Which nonterminals derive some non-empty string (with weight > 0)."""
        out = np.zeros(self.n_nt + 1, dtype=bool)
        terminal_heads = self.item_head[~self.is_nt]
        out[terminal_heads] = True
        changed = True
        while changed:
            grown = out.copy()
            grown[self.item_head[out[self.item_nt] & self.is_nt]] = True
            changed = bool((grown != out).any())
            out = grown
        return out[: self.n_nt]

    def _closure(self, suffix: np.ndarray, keep: np.ndarray) -> np.ndarray:
        """`(I - U)^-1 W` over the nonterminals in `keep`: [head, item] -> weight.

        `W[X, (r, d)] = w_r * suffix(r, d)` takes an item's weight to its rule's
        head; `U[X, Y]` sums `W` times the null weight before `Y` over the items
        whose symbol is `Y` (the unary chains, spans unchanged).
        """
        n, m = self.n_nt, self.n_items
        w_fin = np.zeros((n, m))
        w_fin[self.item_head, np.arange(m)] = self.item_w * suffix
        unary = np.zeros((n, n + 1))
        np.add.at(unary, (self.item_head, self.item_nt), self.item_w * suffix * self.nullpre)
        k = np.flatnonzero(keep)
        u = unary[np.ix_(k, k)]
        star = np.zeros((n, n))
        if len(k):
            radius = float(np.max(np.abs(np.linalg.eigvals(u)), initial=0.0))
            if radius >= 1.0 - 1e-12:
                raise ValueError(
                    "the grammar's unary chains (X -> Y, or X -> A Y with A nullable) "
                    f"have total weight >= 1 around a cycle (spectral radius {radius:.6g}): "
                    "the weight of a string diverges"
                )
            star[np.ix_(k, k)] = np.linalg.inv(np.eye(len(k)) - u)
        return np.maximum(star, 0.0) @ w_fin  # the series is >= 0: drop rounding below 0

    # ------------------------------------------------------------ chart (log space)
    def first_column(self) -> Column:
        """The column of the empty input (position 0): nothing spans it."""
        return Column(np.zeros((0, self.n_items)), -math.inf)

    def extend(self, columns: Sequence[Column], terminal: int) -> Column:
        """The column after `columns` (positions 0..j-1) for input symbol `terminal` (its index).

        Spans (i, j) are done for i = j-1 down to 0; once the inside weights of
        (i, j) are known they are added to every longer span (i' < i, j) at
        once, through the items that end at i. `terminal` < 0 (a symbol the
        grammar lacks) gives a column of zero weights.
        """
        j = len(columns)  # the new column ends the span at position j
        m = self.n_items
        prev_items = np.full((j, m), -math.inf)
        if terminal < 0 or self.empty:
            return Column(prev_items, -math.inf)
        leaf = self.log_leaf[terminal]
        acc = np.empty((j, m))  # [i, item]: the split terms of span (i, j) found so far
        acc[j - 1] = self.log_nullpre + leaf
        acc[: j - 1] = columns[j - 1].prev_items + leaf
        inside_start = -math.inf
        for i in range(j - 1, -1, -1):
            c0 = acc[i]
            v = _log_matvec(self.log_G, c0)  # inside weights of span (i, j), unary chains included
            v_items = np.append(v, -math.inf)[self.item_nt]
            c = np.logaddexp(c0, self.log_nullpre + v_items)
            a = np.full(m + 1, -math.inf)
            for idx in self.by_pos:
                a[idx] = np.logaddexp(a[self.item_prev[idx]] + self.log_item_E[idx], c[idx])
            prev_items[i] = a[self.item_prev]
            if i:
                np.logaddexp(acc[:i], columns[i].prev_items + v_items, out=acc[:i])
            else:
                inside_start = float(v[self.start])
        return Column(prev_items, inside_start)

    def next_prefix(self, columns: Sequence[Column]) -> np.ndarray:
        """Log prefix weight of the input followed by each terminal (in vocabulary order).

        `columns` is the chart of the input (positions 0..n). The prefix
        grammar's spans (i, n + 1) end after the next terminal; its weight is
        linear in the terminal's indicator over the items, so one backward
        (adjoint) pass from the start symbol gives every terminal's weight:
        `lam[i]` is the derivative of the result by the split terms of (i, n + 1).
        """
        n = len(columns) - 1
        if self.empty:
            return np.full(self.log_leaf.shape[0], -math.inf)
        lam = np.empty((n + 1, self.n_items))
        lam[0] = self.log_G_prefix[self.start]
        by_nt = np.full(self.n_nt + 1, -math.inf)
        for k in range(1, n + 1):
            s = _log_sum_rows((columns[k].prev_items + lam[:k]).T)  # by the items of (k, n+1)
            by_nt.fill(-math.inf)
            np.logaddexp.at(by_nt, self.item_nt, s)
            lam[k] = _log_sum_rows((self.log_G_prefix + by_nt[: self.n_nt, None]).T)
        inner = _log_sum_rows((columns[n].prev_items + lam[:n]).T)
        grad = np.logaddexp(self.log_nullpre + lam[n], inner)
        return _log_sum_rows(self.log_leaf + grad)


def _log_sum_rows(z: np.ndarray) -> np.ndarray:
    """log sum exp of each row of `z` (-inf for an empty or all -inf row)."""
    out = np.full(z.shape[0], -math.inf)
    if z.shape[1] == 0:
        return out
    top = z.max(axis=1)
    live = top > -math.inf
    if live.any():
        zl, tl = z[live], top[live]
        out[live] = tl + np.log(np.exp(zl - tl[:, None]).sum(axis=1))
    return out


def _log_matvec(log_a: np.ndarray, log_x: np.ndarray) -> np.ndarray:
    """log(A @ x) from log A and log x, summing only over the entries of x that are not zero."""
    live = np.flatnonzero(log_x > -math.inf)
    if not len(live):
        return np.full(log_a.shape[0], -math.inf)
    return _log_sum_rows(log_a[:, live] + log_x[live])
