"""Bind each record to what produced it, so a resumed sweep never keeps a stale verdict.

A record carries ``inputs``: a digest of the prediction's inputs (the SQL of a predictions file,
the gold for ``gold``, sqlglot's version and the gold for ``transpile``, the prompt's ingredients
and model settings for a model), of the gold SQL, and the fingerprint of the source database;
on an engine whose databases polysql did not load (an existing database per db_id), also the
fingerprint of that database, and on an engine whose built copies hold more than the source's
tables (PostgreSQL's fold schema), the digest of that layout; on an engine whose values have
changed the form they are decoded in (MySQL's TIME), that form; and the version of the comparison
contract that judged it. On resume a record whose digests differ from today's is re-evaluated
(its executions come from the cache); an identical one is kept.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from polysql.core.digest import content_digest
from polysql.core.predictor import Predictor, TargetEngine
from polysql.datasets.base import Question
from polysql.normalizers.policy import CONTRACT_VERSION

Inputs = dict[str, str]
#: The comparison contract's version: a verdict judged under another one is re-judged.
CONTRACT = f"compare-{CONTRACT_VERSION}"


def gold_digest(question: Question) -> str:
    return content_digest("gold-sql", question.gold_sql, question.source_dialect)


class RecordInputs:
    """Today's ``inputs`` for any (question, predictor, engine) of one dataset.

    ``database_fingerprint(db_id)`` gives the source database's content digest; it is asked once
    per database (hashing a large database is the only costly part).
    """

    def __init__(self, database_fingerprint: Callable[[str], str],
                 target_fingerprint: Callable[[str, str], str | None] = lambda engine, db_id: None,
                 ) -> None:
        self._fingerprint_of = database_fingerprint
        self._target_of = target_fingerprint
        self._fingerprints: dict[str, str] = {}
        self._targets: dict[tuple[str, str], str | None] = {}
        self._lock = threading.Lock()

    def target(self, engine: str, db_id: str) -> str | None:
        """The fingerprint of an existing database ``engine`` evaluates on for ``db_id``, or of
        the layout of the copies it builds; None for a copy that holds only the source's tables
        (the source's fingerprint covers it)."""
        key = (engine, db_id)
        with self._lock:
            if key not in self._targets:
                self._targets[key] = self._target_of(engine, db_id)
            return self._targets[key]

    def database(self, db_id: str) -> str:
        with self._lock:
            if db_id not in self._fingerprints:
                self._fingerprints[db_id] = self._fingerprint_of(db_id)
            return self._fingerprints[db_id]

    def of(self, question: Question, predictor: Predictor[Question], engine: TargetEngine) -> Inputs:
        inputs = {"prediction": predictor.input_digest(question, engine),
                  "gold": gold_digest(question),
                  "database": self.database(question.db_id),
                  "contract": CONTRACT}
        target = self.target(engine.name, question.db_id)
        if target is not None:  # only then: records on plain built copies keep the inputs they had
            inputs["target"] = target
        return inputs
