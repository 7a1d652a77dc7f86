"""What a dataset is to the rest of polysql: questions with gold SQL over source databases."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path

#: The dialect text-to-SQL data sets write their gold SQL in: BIRD, Spider and the demo ship
#: each database as a SQLite file. A fact of the data, not of an engine; the engine that runs
#: gold SQL is whichever one speaks this dialect.
GOLD_DIALECT = "sqlite"


@dataclass(frozen=True, slots=True)
class Question:
    """One natural-language question with its gold SQL, written for ``source_dialect``."""

    id: str
    db_id: str
    question: str
    gold_sql: str
    evidence: str = ""
    tags: tuple[str, ...] = ()
    source_dialect: str = GOLD_DIALECT
    difficulty: str | None = None
    #: gold SQL the benchmark also ships written natively for other dialects, as (dialect, SQL)
    #: pairs with lower-case dialect names as the benchmark spells them (``mysql``,
    #: ``postgresql``); ``gold_sql`` stays the reference. A tuple keeps the question hashable.
    native_golds: tuple[tuple[str, str], ...] = ()

    def native_gold(self, dialect: str) -> str | None:
        """The gold written natively for ``dialect`` (any spelling's lower case), or None."""
        wanted = dialect.lower()
        return next((sql for name, sql in self.native_golds if name == wanted), None)


@dataclass(slots=True)
class Dataset(ABC):
    """A named set of questions over one or more source databases (SQLite files)."""

    name: str
    questions: list[Question] = field(default_factory=list)

    @abstractmethod
    def database_path(self, db_id: str) -> Path:
        """Path of the SQLite source database for ``db_id`` (built on demand if needed)."""

    def database_url(self, db_id: str) -> str:
        return f"sqlite:///{self.database_path(db_id)}"

    def db_ids(self) -> list[str]:
        return sorted({q.db_id for q in self.questions})

    def question(self, question_id: str) -> Question:
        for q in self.questions:
            if q.id == question_id:
                return q
        raise KeyError(question_id)
