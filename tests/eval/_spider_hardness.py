"""Spider's difficulty grade of a SQL query, computed from its text (a test helper).

Yu et al. (2018) grade a query by counting its parts (Spider's `eval_hardness`):

- component 1: WHERE, GROUP BY, ORDER BY, LIMIT, each join (a table beyond
  the first), each OR and each LIKE in the ON, WHERE and HAVING conditions;
- component 2: each nested query (a subquery in a condition, and each
  UNION / INTERSECT / EXCEPT);
- others: more than one aggregate (in SELECT and ORDER BY), more than one
  selected column, more than one WHERE condition, more than one GROUP BY key.

easy: c1 <= 1, others 0, no nesting; medium: (others <= 2, c1 <= 1) or
(c1 <= 2, others < 2), no nesting; hard: (others > 2, c1 <= 2) or
(2 < c1 <= 3, others <= 2), no nesting, or (c1 <= 1, others 0, one nested
query); extra: the rest. Only the outermost SELECT's parts count, as in
Spider. A subquery in FROM counts as nested (Spider's parser does not grade
those; the shipped questions have none).
"""

from __future__ import annotations

import re

_TOKEN = re.compile(
    r"""'(?:[^']|'')*'|"(?:[^"]|"")*"|\d+(?:\.\d+)?|[A-Za-z_][A-Za-z0-9_]*|<>|!=|<=|>=|==|\S"""
)
_CLAUSES = ("select", "from", "where", "group", "having", "order", "limit")
_SET_OPS = {"union", "intersect", "except"}
_AGGREGATES = {"count", "sum", "avg", "min", "max"}


def _tree(tokens: list[str]) -> list:
    """Tokens nested by parentheses: a parenthesized part becomes a list."""
    stack: list[list] = [[]]
    for token in tokens:
        if token == "(":
            stack.append([])
        elif token == ")":
            group = stack.pop()
            stack[-1].append(group)
        else:
            stack[-1].append(token.lower() if token[0] not in "'\"" else token)
    if len(stack) != 1:
        raise ValueError("unbalanced parentheses")
    return stack[0]


def _is_query(node) -> bool:
    return isinstance(node, list) and bool(node) and node[0] == "select"


def _walk(nodes: list):
    """Tokens and subqueries of a clause, looking inside non-query parentheses."""
    for node in nodes:
        if _is_query(node):
            yield node
        elif isinstance(node, list):
            yield from _walk(node)
        else:
            yield node


def _clauses(part: list) -> dict[str, list]:
    out: dict[str, list] = {}
    current = None
    for node in part:
        if isinstance(node, str) and node in _CLAUSES:
            current = node
            out[current] = []
        elif current is not None and not (node == "by" and not out[current]):
            out[current].append(node)
    return out


def _count_top(nodes: list, word: str) -> int:
    return sum(1 for node in nodes if node == word)


def _aggregates(nodes: list) -> int:
    count = 0
    for token, after in zip(nodes, [*nodes[1:], None], strict=True):
        if isinstance(token, str) and token in _AGGREGATES and isinstance(after, list):
            count += 1
        if isinstance(token, list) and not _is_query(token):
            count += _aggregates(token)
    return count


def _conditions(nodes: list) -> int:
    """WHERE conditions: one more than the ANDs and ORs (the AND of a BETWEEN not counted)."""
    flat = [n for n in _walk(nodes) if isinstance(n, str)]
    joins, between = 0, 0
    for token in flat:
        if token == "between":
            between += 1
        elif token == "and" and between:
            between -= 1
        elif token in ("and", "or"):
            joins += 1
    return joins + 1


def counts(sql: str) -> tuple[int, int, int]:
    """(component 1, component 2, others) of a query, as Spider counts them."""
    tree = _tree(_TOKEN.findall(sql.strip().rstrip(";")))
    parts: list[list] = [[]]
    for node in tree:
        if isinstance(node, str) and node in _SET_OPS:
            parts.append([])
        elif node != "all" or parts[-1]:
            parts[-1].append(node)
    clauses = _clauses(parts[0])
    conditions = [*clauses.get("where", []), *clauses.get("having", [])]
    from_part = clauses.get("from", [])
    on = []
    for node in from_part:
        if node == "on" or on:
            on.append(node)
    scanned = [n for n in _walk(conditions + on) if isinstance(n, str)]
    comp1 = sum(key in clauses for key in ("where", "group", "order", "limit"))
    comp1 += _count_top(from_part, "join") + _count_top(from_part, ",")
    comp1 += scanned.count("or") + scanned.count("like")
    nested = [n for n in _walk(conditions + from_part) if _is_query(n)]
    comp2 = len(parts) - 1 + len(nested)
    others = 0
    others += _aggregates(clauses["select"] + clauses.get("order", [])) > 1
    others += _count_top(clauses["select"], ",") > 0
    others += "where" in clauses and _conditions(clauses["where"]) > 1
    others += _count_top(clauses.get("group", []), ",") > 0
    return comp1, comp2, others


def hardness(sql: str) -> str:
    """Spider's grade of `sql`: "easy", "medium", "hard" or "extra"."""
    c1, c2, others = counts(sql)
    if c1 <= 1 and others == 0 and c2 == 0:
        return "easy"
    if c2 == 0 and ((others <= 2 and c1 <= 1) or (c1 <= 2 and others < 2)):
        return "medium"
    if (c2 == 0 and ((others > 2 and c1 <= 2) or (2 < c1 <= 3 and others <= 2))) or (
        c1 <= 1 and others == 0 and c2 <= 1
    ):
        return "hard"
    return "extra"
