"""The gold audit: does each native gold answer the same as the reference gold?

A benchmark may ship, beside its reference gold (``Question.gold_sql``, written for the source
dialect), gold SQL written natively for other dialects (``Question.native_golds``). Both are meant
to answer the question, so on faithful copies of the data they should return the same result. A
``native-gold`` sweep dual-executes exactly that pair (the native gold on its engine, the
reference gold on the source engine) and judges it by the comparison contract; this module reads
its records and says, per engine, how many native golds agree and which do not, and why.

The sweep records every (question, engine) pair, so nothing is dropped silently: a pair without a
native gold is ``missing_prediction`` there and counted as such, and a question with no native
gold for any swept engine is listed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from polysql.core.errors import ConfigError, DatasetError
from polysql.datasets.base import Dataset, Question

#: the sweep predictor whose records this audit reads (:class:`NativeGoldPredictor`)
GOLD_PREDICTOR = "native-gold"

#: a record's status -> what it says about the native gold
_OUTCOMES = {"match": "agree", "mismatch": "disagree", "exec_error": "error",
             "invalid_gold": "reference_error"}
_MISSING = "missing_prediction"


@dataclass(frozen=True, slots=True)
class GoldPair:
    """One native gold judged against the reference gold."""

    dataset: str
    question_id: str
    db_id: str
    engine: str
    dialect: str
    #: ``agree``, ``disagree`` (both ran, results differ), ``error`` (the native gold failed on
    #: its engine) or ``reference_error`` (the reference gold failed: nothing could be judged)
    outcome: str
    status: str  # the sweep record's status
    reason: str  # the verdict's reason, or the error
    native_sql: str
    gold_sql: str
    tags: tuple[str, ...] = ()


@dataclass(slots=True)
class EngineGoldCounts:
    """What the audit found on one engine."""

    engine: str
    dialect: str
    audited: int = 0  # questions with a native gold for this engine
    agree: int = 0
    disagree: int = 0
    error: int = 0
    reference_error: int = 0
    no_native_gold: int = 0  # questions without a native gold for this engine

    def add(self, outcome: str) -> None:
        self.audited += 1
        setattr(self, outcome, getattr(self, outcome) + 1)


@dataclass(slots=True)
class GoldAudit:
    dataset: str
    reference_dialect: str
    engines: list[EngineGoldCounts]
    pairs: list[GoldPair]
    questions: int  # questions the audit covered (with or without native golds)
    #: questions with no native gold for any audited engine: counted, never silently dropped
    uncovered: list[str] = field(default_factory=list)
    #: swept engines that speak the reference dialect: their "native gold" is the reference itself
    reference_engines: list[str] = field(default_factory=list)
    pending: int = 0  # (question, engine) pairs the sweep planned but has not recorded

    @property
    def disagreements(self) -> list[GoldPair]:
        """Every pair that is not ``agree``, disagreements first, then errors."""
        rank = {"disagree": 0, "error": 1, "reference_error": 2}
        return sorted((p for p in self.pairs if p.outcome != "agree"),
                      key=lambda p: (rank[p.outcome], p.question_id, p.engine))

    @property
    def complete(self) -> bool:
        return self.pending == 0


def native_dialects(questions: Iterable[Question]) -> list[str]:
    """The dialects the questions carry native golds for, as the benchmark spells them."""
    return sorted({name for q in questions for name, _sql in q.native_golds})


def require_native_golds(dataset: Dataset) -> None:
    """Raise DatasetError when no question of ``dataset`` carries a native gold: there is nothing
    to audit, and the user most likely loaded a variant of the benchmark without them."""
    if native_dialects(dataset.questions):
        return
    raise DatasetError(
        f"dataset {dataset.name!r} ({len(dataset.questions)} questions) carries no gold SQL written "
        "for another dialect, so there is nothing to audit; native golds come with the dataset "
        "(a BIRD mini-dev folder with its mini_dev_mysql.json / mini_dev_postgresql.json, or "
        "gold_sql_<dialect> fields in a generic questions file)")


def audited_engines(engines: Sequence[tuple[str, str]], questions: Sequence[Question]) -> list[str]:
    """The names among ``engines`` ((name, sqlglot dialect) pairs) whose native golds can be
    audited: those not speaking the questions' reference dialect. ConfigError when none is left."""
    references = {q.source_dialect for q in questions}
    foreign = [name for name, dialect in engines if dialect not in references]
    if not foreign:
        raise ConfigError(
            f"every engine given ({', '.join(name for name, _ in engines)}) speaks the reference "
            f"dialect of the gold SQL ({', '.join(sorted(references))}), which is what native golds "
            "are compared with; add the engines whose native golds to audit to --engines")
    return foreign


def audit_gold_records(records: Iterable[dict[str, Any]], *, dataset: str,
                       engines: Sequence[str], question_ids: Sequence[str],
                       pending: int = 0) -> GoldAudit:
    """The gold audit of ``records`` (a run folder's latest records): those of the
    ``native-gold`` predictor for ``engines`` and ``question_ids``, in that order."""
    wanted_engines = set(engines)
    wanted_questions = set(question_ids)
    chosen = [r for r in records
              if r.get("predictor") == GOLD_PREDICTOR and r.get("dataset") == dataset
              and r.get("engine") in wanted_engines and str(r.get("question_id")) in wanted_questions]
    counts: dict[str, EngineGoldCounts] = {}
    references: set[str] = set()
    pairs: list[GoldPair] = []
    covered: set[str] = set()
    reference_dialect = ""
    for record in chosen:
        engine, dialect = str(record["engine"]), str(record.get("dialect") or "")
        gold_dialect = str(record.get("gold_dialect") or "")
        reference_dialect = reference_dialect or gold_dialect
        if dialect == gold_dialect:
            references.add(engine)  # the predictor hands such an engine the reference gold itself
            continue
        tally = counts.setdefault(engine, EngineGoldCounts(engine, dialect))
        if record.get("prediction_failure") == _MISSING:
            tally.no_native_gold += 1
            continue
        question_id = str(record["question_id"])
        covered.add(question_id)
        status = str(record["status"])
        outcome = _OUTCOMES.get(status, "error")  # generation_failure: the native text was unusable
        tally.add(outcome)
        pairs.append(GoldPair(
            dataset=dataset, question_id=question_id, db_id=str(record.get("db_id")),
            engine=engine, dialect=dialect, outcome=outcome, status=status,
            reason=_reason(record), native_sql=str(record.get("sql") or ""),
            gold_sql=str(record.get("gold_sql") or ""), tags=tuple(record.get("tags") or ())))
    order = {name: index for index, name in enumerate(engines)}
    recorded_questions = {str(r["question_id"]) for r in chosen}
    return GoldAudit(
        dataset=dataset, reference_dialect=reference_dialect,
        engines=sorted(counts.values(), key=lambda c: order[c.engine]),
        pairs=sorted(pairs, key=lambda p: (p.question_id, order[p.engine])),
        questions=len(wanted_questions),
        uncovered=[q for q in question_ids if q in recorded_questions and q not in covered],
        reference_engines=sorted(references, key=order.__getitem__), pending=pending)


def _reason(record: dict[str, Any]) -> str:
    if record.get("status") == "invalid_gold":
        error = (record.get("gold") or {}).get("error") or {}
        return f"the reference gold failed: {error.get('message') or record.get('reason') or ''}"
    return str(record.get("reason") or record.get("prediction_failure") or "")
