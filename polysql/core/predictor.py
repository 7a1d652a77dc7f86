"""The predictor protocol: what gives a candidate SQL query for a question on a target engine.

It lives in the lowest layer because every kind of predictor implements it: the built-in ones
and predictions files of the sweep (:mod:`polysql.sweep.predictors`) and model-backed ones
(:mod:`polysql.llm.predictors`), which sit on different layers and must not import each other.

A predictor never raises for a single question: it returns a :class:`Prediction` whose
``failure`` says why no SQL could be produced, and that is recorded as such.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from polysql.core.digest import content_digest

__all__ = ["Prediction", "Predictor", "QuestionT", "TargetEngine"]

#: The question a predictor answers: :class:`polysql.datasets.base.Question` for every predictor
#: polysql ships. Questions belong to the datasets layer, above this one; the protocol never looks
#: inside one, so it names the type as a parameter (``Predictor[Question]``) instead.
QuestionT = TypeVar("QuestionT")


@dataclass(frozen=True, slots=True)
class TargetEngine:
    """What a predictor may know about the engine it writes for (not the engine's own facts:
    those are :class:`polysql.backends.base.EngineInfo`)."""

    name: str  # engine key in results ("sqlite", "duckdb", "postgres", ...)
    dialect: str  # sqlglot dialect name
    version: str | None = None  # as the backend reports it ("3.45.1", "PostgreSQL 15.4")
    # The question's database as this engine holds it (CREATE TABLE text), filled in by the
    # sweep for predictors whose ``needs_schema`` is set.
    schema: str | None = None


@dataclass(slots=True)
class Prediction:
    sql: str | None
    failure: str | None = None  # e.g. "transpile_failure: ...", "missing_prediction"
    meta: dict[str, Any] = field(default_factory=dict)
    # Set when no answer could be obtained for reasons outside the system under test (a model
    # endpoint unreachable, timing out or failing after its retries): nothing is scored, the work
    # stays pending and the next run asks again.
    unavailable: str | None = None


class Predictor(ABC, Generic[QuestionT]):
    name: str
    #: predict() reads ``TargetEngine.schema``; the sweep renders it only for predictors that do
    needs_schema: bool = False
    #: example rows per table in that schema
    sample_rows: int = 0
    #: submit() runs predictions in the background (remote model calls), so the sweep hands
    #: them all over early and executes each as soon as it is ready
    concurrent: bool = False

    @abstractmethod
    def predict(self, question: QuestionT, engine: TargetEngine) -> Prediction: ...

    def submit(self, question: QuestionT, engine: TargetEngine) -> Future[Prediction]:
        """Start :meth:`predict` and return its future. By default it runs right here."""
        future: Future[Prediction] = Future()
        future.set_result(self.predict(question, engine))
        return future

    def usage(self) -> dict[str, Any] | None:
        """Cost of the predictions made so far (model calls, tokens...); None when free."""
        return None

    def close(self) -> None:
        """Release threads and connections; pending background predictions are cancelled."""
        return None  # nothing held by default

    def describe(self) -> dict[str, Any]:
        """Configuration recorded with the run (for reproducibility)."""
        return {"name": self.name}

    def input_digest(self, question: QuestionT, engine: TargetEngine) -> str:
        """A digest of everything this predictor's answer for (question, engine) depends on.

        Records carry it; a resumed sweep re-evaluates a record whose digest changed (a fixed
        predictions file, another sqlglot, an edited question). The default digests the
        prediction itself, which is right for any cheap, deterministic predictor; predictors
        whose answers are expensive (models) digest their inputs instead.
        """
        prediction = self.predict(question, engine)
        return content_digest("prediction", prediction.sql, prediction.failure)
