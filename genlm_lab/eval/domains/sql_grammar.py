"""`sql_grammar`: a Lark grammar of SQLite SELECT queries over one database's tables and columns.

The text-to-SQL task constrains a model to queries a given database can run:
the grammar is generated from the schema, so table and column names are
terminals (a qualified `singer.Age` only names a column of `singer`; table
aliases are `T1`, `T2`, ... as in Spider, and qualify any column), and the
rest is the SELECT part of SQLite: joins, WHERE, GROUP BY / HAVING, ORDER BY,
LIMIT / OFFSET, aggregates, CASE, set operations and subqueries.

Whitespace is explicit instead of `%ignore`d: two words (keywords, names,
numbers) need at least one blank between them, so `SELECTname` is refused as
SQLite refuses it; punctuation takes optional blanks. (llguidance refuses a
grammar that mixes an ignored and an explicit whitespace terminal.) Keywords
and names are case-insensitive, as in SQLite.

Use it as `BoolCFG.from_lark(sql_grammar("concert_singer.sqlite"))`; the text
is cached per database file (and its modification time), and `BoolCFG` caches
the compiled grammar per text.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path

__all__ = ["read_schema", "sql_grammar"]

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

_CORE = r"""
start: _S? select_stmt (_S? ";")? _S?

select_stmt: select_core (_S compound_op _S select_core)* (_S order_by)? (_S limit)?
compound_op: "UNION"i (_S "ALL"i)? | "INTERSECT"i | "EXCEPT"i
select_core: "SELECT"i (_S "DISTINCT"i)? _S result_columns (_S from_clause)? (_S where_clause)? (_S group_by)?
result_columns: result_column (_S? "," _S? result_column)*
result_column: "*" | qualifier "." "*" | expr (_S "AS"i _S ALIAS)?

from_clause: "FROM"i _S table_ref (join_part)*
join_part: _S? "," _S? table_ref | _S join_op _S table_ref (_S join_constraint)?
join_op: (join_kind _S)? "JOIN"i
join_kind: "INNER"i | "CROSS"i | "NATURAL"i | "LEFT"i (_S "OUTER"i)?
join_constraint: "ON"i _S expr | "USING"i _S? "(" _S? column_name (_S? "," _S? column_name)* _S? ")"
table_ref: table_name (table_alias)? | "(" _S? select_stmt _S? ")" (table_alias)?
table_alias: _S ("AS"i _S)? TALIAS

where_clause: "WHERE"i _S expr
group_by: "GROUP"i _S "BY"i _S expr_list (_S "HAVING"i _S expr)?
order_by: "ORDER"i _S "BY"i _S ordering (_S? "," _S? ordering)*
ordering: expr (_S direction)?
direction: "ASC"i | "DESC"i
limit: "LIMIT"i _S NUMBER (_S "OFFSET"i _S NUMBER | _S? "," _S? NUMBER)?

expr_list: expr (_S? "," _S? expr)*
expr: and_expr (_S "OR"i _S and_expr)*
and_expr: not_expr (_S "AND"i _S not_expr)*
not_expr: "NOT"i _S not_expr | predicate
predicate: sum_expr (comparison)?
comparison: _S? CMP _S? sum_expr
    | _S (negation)? "IN"i _S? "(" _S? (select_stmt | expr_list) _S? ")"
    | _S (negation)? "BETWEEN"i _S sum_expr _S "AND"i _S sum_expr
    | _S (negation)? "LIKE"i _S sum_expr
    | _S "IS"i _S (negation)? "NULL"i
negation: "NOT"i _S
sum_expr: product (_S? ADDOP _S? product)*
product: unary (_S? MULOP _S? unary)*
unary: "-" _S? unary | atom
atom: literal
    | column_ref
    | function_call
    | case_expr
    | "(" _S? select_stmt _S? ")"
    | "(" _S? expr _S? ")"
    | "EXISTS"i _S? "(" _S? select_stmt _S? ")"
case_expr: "CASE"i (_S expr)? (_S "WHEN"i _S expr _S "THEN"i _S expr)+ (_S "ELSE"i _S expr)? _S "END"i
function_call: AGGREGATE _S? "(" _S? ("DISTINCT"i _S)? expr _S? ")"
    | "COUNT"i _S? "(" _S? "*" _S? ")"
    | FUNCTION _S? "(" (_S? expr_list)? _S? ")"
literal: NUMBER | STRING | "NULL"i | "TRUE"i | "FALSE"i

column_ref: column_name | qualified_column
qualifier: table_name | TALIAS

AGGREGATE: "COUNT"i | "SUM"i | "AVG"i | "MIN"i | "MAX"i
FUNCTION: "ABS"i | "LOWER"i | "UPPER"i | "LENGTH"i | "ROUND"i | "COALESCE"i | "IFNULL"i | "SUBSTR"i | "TRIM"i | "CAST"i
CMP: "=" | "==" | "!=" | "<>" | "<" | "<=" | ">" | ">="
ADDOP: "+" | "-" | "||"
MULOP: "*" | "/" | "%"
NUMBER: /[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?/
STRING: /'([^'\n]|'')*'/ | /"([^"\n]|"")*"/
TALIAS: /[Tt][0-9]+/
ALIAS: /[A-Za-z_][A-Za-z0-9_]*/
_S: /[ \t\r\n]+/
"""


def read_schema(database: str | Path | sqlite3.Connection) -> dict[str, list[str]]:
    """Table name -> column names of a SQLite database (file path or open connection).

    Raises:
        ValueError: if the file is missing, is not a SQLite database, or has no tables.
    """
    if isinstance(database, sqlite3.Connection):
        return _tables(database, str(database))
    path = Path(database)
    if not path.is_file():
        raise ValueError(f"no SQLite database at {str(path)!r}")
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return _tables(connection, str(path))
    finally:
        connection.close()


def _tables(connection: sqlite3.Connection, where: str) -> dict[str, list[str]]:
    try:
        names = [
            row[0]
            for row in connection.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') "
                "AND name NOT LIKE 'sqlite_%' ORDER BY name"
            )
        ]
        tables = {
            name: [row[1] for row in connection.execute(f"PRAGMA table_info({_quote(name)})")]
            for name in names
        }
    except sqlite3.DatabaseError as error:
        raise ValueError(f"{where} is not a readable SQLite database: {error}") from None
    if not tables:
        raise ValueError(f"{where} has no tables")
    return tables


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _name_terminal(name: str) -> str:
    """Lark alternatives that spell `name`: bare (if an identifier) and quoted, any case."""
    spellings = [_quote(name), "`" + name.replace("`", "``") + "`", f"[{name}]"]
    if _IDENTIFIER.fullmatch(name):
        spellings.insert(0, name)
    return " | ".join(_lark_string(s) + "i" for s in spellings if "]" not in s[1:-1])


def _lark_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _rule_name(table: str, index: int) -> str:
    slug = re.sub(r"[^a-z0-9]+", "_", table.lower()).strip("_") or "t"
    return f"columns_{index}_{slug}"


def grammar_from_tables(tables: Mapping[str, Sequence[str]]) -> str:
    """The Lark grammar for a schema given as table name -> column names.

    Raises:
        ValueError: if there are no tables or a table has no columns.
    """
    if not tables:
        raise ValueError("a SQL grammar needs at least one table")
    lines = [_CORE.strip(), ""]
    table_rules, qualified = [], []
    all_columns: dict[str, None] = {}
    for index, (table, columns) in enumerate(tables.items()):
        if not columns:
            raise ValueError(f"table {table!r} has no columns")
        rule = _rule_name(table, index)
        table_rules.append(f"    {_name_terminal(table)}")
        lines.append(f"{rule}: " + "\n    | ".join(_name_terminal(c) for c in columns))
        qualified.append(f'({_name_terminal(table)}) "." {rule}')
        for column in columns:
            all_columns.setdefault(column)
    lines.append("table_name: " + "\n    |".join(table_rules).strip())
    lines.append("column_name: " + "\n    | ".join(_name_terminal(c) for c in all_columns))
    lines.append(
        "qualified_column: " + "\n    | ".join(qualified) + '\n    | TALIAS "." column_name'
    )
    return "\n".join(lines) + "\n"


@lru_cache(maxsize=32)
def _cached(path: str, mtime_ns: int) -> str:
    return grammar_from_tables(read_schema(path))


def sql_grammar(
    database: str | Path | sqlite3.Connection | Mapping[str, Sequence[str]],
) -> str:
    """A Lark grammar of SELECT queries over `database`'s tables and columns.

    Args:
        database: a SQLite file, an open connection, or a mapping table -> columns.

    Returns:
        The grammar text, for `BoolCFG.from_lark` (cached per file and its mtime).

    Raises:
        ValueError: if the database cannot be read or has no tables.
    """
    if isinstance(database, Mapping):
        return grammar_from_tables(database)
    if isinstance(database, sqlite3.Connection):
        return grammar_from_tables(read_schema(database))
    path = Path(database)
    if not path.is_file():
        raise ValueError(f"no SQLite database at {str(path)!r}")
    return _cached(str(path.resolve()), path.stat().st_mtime_ns)
