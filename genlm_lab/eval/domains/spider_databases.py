"""The text-to-SQL databases that ship with genlm_lab: where they live and how their files are built.

Each database has a folder under `genlm_lab/eval/data/spider/` with its
`schema.sql` (tables, and for Spider's `concert_singer` the rows too),
`rows.sql` (INSERTs, for the databases written for genlm_lab), the SQLite
file those make, `questions.json` (questions with gold SQL and a Spider
difficulty) and a README. The SQLite file is shipped so that a run reads it
read-only; `build_database` makes it again from the SQL text, and the tests
check that the shipped file holds exactly what the build makes (the same
`iterdump`: SQLite versions may lay the bytes out differently). After
editing the SQL of a database written here, rebuild its file with
`python -m genlm_lab.eval.domains.spider_databases` (concert_singer's file
is Spider's own and stays as it came).
"""

from __future__ import annotations

import json
import sqlite3
from importlib import resources
from pathlib import Path

__all__ = [
    "DATABASES",
    "DIFFICULTIES",
    "build_database",
    "database_folder",
    "database_path",
    "dump",
    "load_questions",
]

#: The shipped databases, in the order the default dataset draws from them.
DATABASES: tuple[str, ...] = ("concert_singer", "library", "flights")

#: The difficulty grades of Spider (Yu et al. 2018), easiest first.
DIFFICULTIES: tuple[str, ...] = ("easy", "medium", "hard", "extra")


def _check(name: str) -> str:
    if name not in DATABASES:
        raise ValueError(
            f"unknown text-to-SQL database {name!r}; the shipped ones are {', '.join(DATABASES)}"
        )
    return name


def database_folder(name: str) -> Path:
    """The folder of the shipped database `name` (its SQL, SQLite file, questions, README).

    Raises:
        ValueError: if `name` is not one of `DATABASES`.
    """
    root = resources.files("genlm_lab.eval").joinpath("data/spider")
    return Path(str(root.joinpath(_check(name))))


def database_path(name: str = "concert_singer") -> Path:
    """The shipped SQLite file of database `name` (default: Spider's concert_singer).

    Raises:
        ValueError: if `name` is not one of `DATABASES`.
    """
    return database_folder(name) / f"{name}.sqlite"


def load_questions(name: str) -> list[dict]:
    """The shipped questions of database `name`: dicts with instance_id, question, gold,
    difficulty and source.

    Raises:
        ValueError: if `name` is not one of `DATABASES`.
    """
    return json.loads((database_folder(name) / "questions.json").read_text("utf-8"))


def build_database(folder: str | Path, out: str | Path) -> Path:
    """Make a SQLite file at `out` from `folder`'s schema.sql and rows.sql (if there is one).

    Raises:
        ValueError: if `folder` has no schema.sql or `out` already exists.
    """
    folder, out = Path(folder), Path(out)
    schema = folder / "schema.sql"
    if not schema.is_file():
        raise ValueError(f"no schema.sql in {str(folder)!r}")
    if out.exists():
        raise ValueError(f"{str(out)!r} already exists; remove it first")
    script = schema.read_text("utf-8")
    rows = folder / "rows.sql"
    if rows.is_file():
        script += "\n" + rows.read_text("utf-8")
    connection = sqlite3.connect(out)
    try:
        connection.executescript(script)
        connection.commit()
    finally:
        connection.close()
    return out


def dump(path: str | Path) -> list[str]:
    """The SQL text (`iterdump`) of a SQLite file: its tables and rows, independent of layout."""
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return list(connection.iterdump())
    finally:
        connection.close()


def _rebuild() -> None:
    """Write the SQLite file of every database written for genlm_lab (one with a rows.sql) again.

    concert_singer's file is Spider's own, left as it came (its content equals the build's).
    """
    for name in DATABASES:
        if not (database_folder(name) / "rows.sql").is_file():
            continue
        path = database_path(name)
        path.unlink(missing_ok=True)
        build_database(database_folder(name), path)
        print(f"{path}: {len(dump(path))} statements")


if __name__ == "__main__":
    _rebuild()
