"""Text to SQL on three small SQLite databases, scored by execution accuracy.

An answer is right when SQLite runs it on the question's database and
returns the same rows as the gold query (as a multiset; in order when the
gold query has an ORDER BY), which is Spider's execution accuracy without
its value-swapping test suites. The constraint is a grammar of the SELECT
queries the question's database allows (`eval.domains.sql_grammar`, built
from that database's tables and columns, compiled by `BoolCFG.from_lark`).

The databases (`eval.domains.spider_databases`): Spider's `concert_singer`
(CC BY-SA 4.0, Yu et al. 2018; 38 questions, two from Spider's sample, the
rest written for genlm_lab) and two written for genlm_lab with invented
rows, `library` (69 questions) and `flights` (64), each question with
Spider's difficulty grade (easy, medium, hard, extra). See
`data/spider/*/README.md` and `data/NOTICE.md`.
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from collections import Counter
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any

from genlm_lab.control import BoolCFG
from genlm_lab.eval.core import Dataset, EvaluationResult, Evaluator, Instance
from genlm_lab.eval.domain import Domain
from genlm_lab.eval.domains.spider_databases import (
    DATABASES,
    DIFFICULTIES,
    database_path,
    load_questions,
)
from genlm_lab.eval.domains.sql_grammar import sql_grammar

__all__ = [
    "DATABASES",
    "SpiderDataset",
    "SpiderDomain",
    "SpiderEvaluator",
    "SpiderInstance",
    "database_path",
    "execute",
]

#: Seconds a query may run before it counts as wrong.
QUERY_TIMEOUT = 2.0

#: The worked example each shipped database's prompt shows (not one of its questions).
_EXAMPLES = {
    "concert_singer": ("How many stadiums are there?", "SELECT count(*) FROM stadium"),
    "library": ("How many authors are there?", "SELECT count(*) FROM author"),
    "flights": ("How many airports are there?", "SELECT count(*) FROM airport"),
}


class SpiderInstance(Instance):
    """A question about a database and its gold SQL."""

    question: str
    gold: str
    db_path: str
    db_id: str = "concert_singer"
    difficulty: str | None = None
    source: str = "genlm_lab"

    def __repr__(self) -> str:
        return f"question {self.instance_id} ({self.db_id}): {self.question}"


class SpiderDataset(Dataset[SpiderInstance]):
    """The shipped questions over the shipped databases, or your own over one database.

    The shipped questions come stratified: one question of each database at
    each difficulty in turn, so that the first N (`--limit N`) are a balanced
    sample; instance ids ("library-12") say where each comes from.

    Args:
        questions: {"question", "gold"} dicts (optionally "instance_id",
            "difficulty", "source") over `db_path`; default: the shipped ones.
        db_path: the SQLite database of `questions` (default: concert_singer),
            or a copy of the one shipped database the questions come from.
        databases: which shipped databases to draw the shipped questions
            from (default: all of `DATABASES`; concert_singer alone when
            only `db_path` is given); not with `questions`.

    Raises:
        ValueError: for an unknown database name, an empty `databases`, or
            `databases` given together with `questions`.
    """

    def __init__(
        self,
        questions: list[dict] | None = None,
        db_path: str | Path | None = None,
        databases: Iterable[str] | None = None,
    ) -> None:
        if questions is not None:
            if databases is not None:
                raise ValueError("give either questions (with db_path) or databases, not both")
            self.db_path = str(db_path or database_path())
            db_id = Path(self.db_path).stem
            self.questions = [
                {
                    "db_path": self.db_path,
                    "db_id": db_id,
                    **q,
                    "instance_id": q.get("instance_id", i),
                }
                for i, q in enumerate(questions)
            ]
            return
        if databases is None:
            databases = DATABASES if db_path is None else ("concert_singer",)
        names = list(dict.fromkeys(databases))
        if not names:
            raise ValueError(f"databases is empty; choose from {', '.join(DATABASES)}")
        if db_path is not None and len(names) > 1:
            raise ValueError("db_path goes with your own questions or with one database")
        strata = []
        for name in names:
            path = str(db_path or database_path(name))
            shipped = [{**q, "db_path": path, "db_id": name} for q in load_questions(name)]
            strata += [[q for q in shipped if q["difficulty"] == d] for d in DIFFICULTIES]
        depth = max(len(s) for s in strata)
        self.questions = [s[rank] for rank in range(depth) for s in strata if rank < len(s)]
        self.db_path = self.questions[0]["db_path"]

    def __len__(self) -> int:
        return len(self.questions)

    def __iter__(self):
        for q in self.questions:
            yield SpiderInstance(**q)

    @property
    def schema(self) -> type[SpiderInstance]:
        return SpiderInstance


def execute(db_path: str, sql: str, timeout: float = QUERY_TIMEOUT) -> list[tuple]:
    """Rows of `sql` on a read-only connection to the database, stopped after `timeout` seconds.

    Raises:
        sqlite3.Error: if the query fails (or is interrupted by the timeout).
    """
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    deadline = time.monotonic() + timeout
    conn.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


class SpiderEvaluator(Evaluator[SpiderInstance]):
    """Execution accuracy: 1 iff the response's rows equal the gold query's."""

    def evaluate_sample(self, instance: SpiderInstance, response: Any) -> EvaluationResult:
        gold = execute(instance.db_path, instance.gold)
        try:
            rows = execute(instance.db_path, str(response))
        except sqlite3.Error as exc:
            return EvaluationResult(score=0, desc="error", metadata={"error": str(exc)})
        ordered = "order by" in instance.gold.lower()
        same = rows == gold if ordered else Counter(rows) == Counter(gold)
        return EvaluationResult(score=int(same), desc="match" if same else "mismatch")


class SpiderDomain(Domain):
    """Text to SQL with the question's database schema in the prompt; one query per line.

    Args:
        questions: {"question", "gold"} dicts over `db_path`; default: the shipped ones.
        db_path: the SQLite database of `questions`; default: concert_singer.
        databases: the shipped databases to use (default: all three); not with `questions`.
    """

    name = "spider"
    eos = (b"\n",)

    def __init__(
        self,
        questions: list[dict] | None = None,
        db_path: str | Path | None = None,
        databases: Iterable[str] | None = None,
    ) -> None:
        dataset = SpiderDataset(questions, db_path, databases)
        super().__init__(dataset, SpiderEvaluator())
        self.db_path = dataset.db_path

    def schema_text(self, db_path: str) -> str:
        """The database's tables as `table(column, ...)` lines, in creation order."""
        return _schema_text(db_path, Path(db_path).stat().st_mtime_ns)

    def prompt(self, instance: SpiderInstance) -> str:
        question, sql = _EXAMPLES.get(instance.db_id) or _generic_example(instance.db_path)
        return (
            "Write one SQLite query, on one line, that answers the question.\n"
            f"Tables:\n{self.schema_text(instance.db_path)}\n"
            f"Question: {question}\nSQL: {sql}\n"
            f"Question: {instance.question}\nSQL: "
        )

    def constraint(self, instance: SpiderInstance) -> BoolCFG:
        return BoolCFG.from_lark(sql_grammar(instance.db_path))

    def identity(self, instance: SpiderInstance) -> dict[str, Any]:
        """The base identity with the database's content hash in place of its path.

        A store then reuses runs wherever the package is installed, and not
        once the database's tables or rows change.
        """
        out = super().identity(instance)
        path = instance.db_path
        out["instance"]["db_path"] = _content_hash(path, Path(path).stat().st_mtime_ns)
        return out


def _tables(db_path: str) -> list[str]:
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        return [
            row[0]
            for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            )
        ]
    finally:
        conn.close()


@lru_cache(maxsize=16)
def _schema_text(db_path: str, mtime_ns: int) -> str:
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        lines = []
        for table in _tables(db_path):
            columns = conn.execute(f'PRAGMA table_info("{table}")').fetchall()
            lines.append(f"{table}({', '.join(c[1] for c in columns)})")
        return "\n".join(lines)
    finally:
        conn.close()


def _generic_example(db_path: str) -> tuple[str, str]:
    table = sorted(_tables(db_path))[0]
    return f"How many rows does the table {table} have?", f"SELECT count(*) FROM {table}"


@lru_cache(maxsize=16)
def _content_hash(db_path: str, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        for line in conn.iterdump():
            digest.update(line.encode("utf-8"))
    finally:
        conn.close()
    return f"sqlite sha256:{digest.hexdigest()[:16]}"
