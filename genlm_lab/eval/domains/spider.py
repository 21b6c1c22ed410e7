"""Text to SQL on Spider's `concert_singer` database, scored by execution accuracy.

An answer is right when SQLite runs it on the database and returns the same
rows as the gold query (as a multiset; in order when the gold query has an
ORDER BY), which is Spider's execution accuracy without its value-swapping
test suites. The constraint is a grammar of the SELECT queries this
database's schema allows (`eval.domains.sql_grammar`, compiled by
`BoolCFG.from_lark`). The database (CC BY-SA 4.0, Yu et al. 2018) and 20
questions with gold SQL (two from Spider's sample, the rest written for
genlm_lab) ship in `data/spider/` (see `data/NOTICE.md`).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections import Counter
from importlib import resources
from pathlib import Path
from typing import Any

from genlm_lab.control import BoolCFG
from genlm_lab.eval.core import Dataset, EvaluationResult, Evaluator, Instance
from genlm_lab.eval.domain import Domain
from genlm_lab.eval.domains.sql_grammar import sql_grammar

__all__ = [
    "SpiderDataset",
    "SpiderDomain",
    "SpiderEvaluator",
    "SpiderInstance",
    "database_path",
    "execute",
]

#: Seconds a query may run before it counts as wrong.
QUERY_TIMEOUT = 2.0


def database_path() -> Path:
    """The shipped concert_singer SQLite file."""
    return Path(
        str(resources.files("genlm_lab.eval").joinpath("data/spider/concert_singer.sqlite"))
    )


class SpiderInstance(Instance):
    """A question about the database and its gold SQL."""

    question: str
    gold: str
    db_path: str
    source: str = "genlm_lab"

    def __repr__(self) -> str:
        return f"question {self.instance_id}: {self.question}"


class SpiderDataset(Dataset[SpiderInstance]):
    """The shipped questions (or your own list of {"question", "gold"} dicts) over one database."""

    def __init__(
        self, questions: list[dict] | None = None, db_path: str | Path | None = None
    ) -> None:
        self.db_path = str(db_path or database_path())
        if questions is None:
            text = (
                resources.files("genlm_lab.eval")
                .joinpath("data/spider/questions.json")
                .read_text("utf-8")
            )
            questions = json.loads(text)
        self.questions = [
            dict(q, instance_id=q.get("instance_id", i)) for i, q in enumerate(questions)
        ]

    def __len__(self) -> int:
        return len(self.questions)

    def __iter__(self):
        for q in self.questions:
            yield SpiderInstance(db_path=self.db_path, **q)

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
    """Text to SQL with the schema in the prompt; one query per line.

    Args:
        questions: {"question", "gold"} dicts; default: the shipped 20.
        db_path: the SQLite database; default: the shipped concert_singer.
    """

    name = "spider"
    eos = (b"\n",)

    def __init__(
        self, questions: list[dict] | None = None, db_path: str | Path | None = None
    ) -> None:
        dataset = SpiderDataset(questions, db_path)
        super().__init__(dataset, SpiderEvaluator())
        self.db_path = dataset.db_path
        conn = sqlite3.connect(f"file:{self.db_path}?mode=ro", uri=True)
        try:
            tables = conn.execute(
                "SELECT name, sql FROM sqlite_master WHERE type = 'table'"
            ).fetchall()
        finally:
            conn.close()
        self.schema_text = "\n".join(
            f"{name}({', '.join(c[1] for c in _columns(self.db_path, name))})" for name, _ in tables
        )
        self._grammar: str | None = None

    def prompt(self, instance: SpiderInstance) -> str:
        return (
            "Write one SQLite query, on one line, that answers the question.\n"
            f"Tables:\n{self.schema_text}\n"
            "Question: How many stadiums are there?\nSQL: SELECT count(*) FROM stadium\n"
            f"Question: {instance.question}\nSQL: "
        )

    def constraint(self, instance: SpiderInstance) -> BoolCFG:
        if self._grammar is None:
            self._grammar = sql_grammar(self.db_path)
        return BoolCFG.from_lark(self._grammar)


def _columns(db_path: str, table: str) -> list[tuple]:
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        return conn.execute(f'PRAGMA table_info("{table}")').fetchall()
    finally:
        conn.close()
