"""Predictors: where the candidate SQL for each (question, engine) comes from.

- ``gold``: the source-dialect gold SQL run verbatim on every engine (naive portability).
- ``transpile``: the gold SQL translated by sqlglot into the engine's dialect.
- ``file``: a JSONL file of ``{"question_id", "dialect", "sql"}`` produced by any system.
- ``llm:NAME``: a model declared in ``polysql.toml``, prompted per engine
  (:mod:`polysql.predictors_llm`; needs the ``llm`` extra).

A predictor never raises for a single question: it returns a :class:`Prediction` whose
``failure`` says why no SQL could be produced, and that is recorded as such.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlglot
from sqlglot.errors import ErrorLevel, SqlglotError

from polysql.datasets.base import Question
from polysql.errors import ConfigError, PredictionFileError

if TYPE_CHECKING:
    from polysql.predictors_llm import LLMOptions


@dataclass(frozen=True, slots=True)
class EngineInfo:
    """What a predictor may know about the engine it writes for."""

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


class Predictor(ABC):
    name: str
    #: predict() reads ``EngineInfo.schema``; the sweep renders it only for predictors that do
    needs_schema: bool = False
    #: example rows per table in that schema
    sample_rows: int = 0
    #: submit() runs predictions in the background (remote model calls), so the sweep hands
    #: them all over early and executes each as soon as it is ready
    concurrent: bool = False

    @abstractmethod
    def predict(self, question: Question, engine: EngineInfo) -> Prediction: ...

    def submit(self, question: Question, engine: EngineInfo) -> Future[Prediction]:
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


class GoldPredictor(Predictor):
    name = "gold"

    def predict(self, question: Question, engine: EngineInfo) -> Prediction:
        return Prediction(sql=question.gold_sql)


class TranspilePredictor(Predictor):
    name = "transpile"

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "sqlglot": sqlglot.__version__}

    def predict(self, question: Question, engine: EngineInfo) -> Prediction:
        if engine.dialect == question.source_dialect:
            return Prediction(sql=question.gold_sql, meta={"identity": True})
        try:
            statements = sqlglot.transpile(
                question.gold_sql, read=question.source_dialect, write=engine.dialect,
                unsupported_level=ErrorLevel.RAISE,
            )
        except SqlglotError as exc:
            first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            return Prediction(sql=None, failure=f"transpile_failure: {first_line}")
        if len(statements) != 1:
            return Prediction(sql=None, failure=f"transpile_failure: produced {len(statements)} statements")
        return Prediction(sql=statements[0])


@dataclass(slots=True)
class FileProblem:
    """A line of a predictions file that was skipped, with where and why."""

    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


class FilePredictor(Predictor):
    """Predictions read from a JSONL file.

    Each line: ``{"question_id": ..., "dialect": ..., "sql": ...}``. ``dialect`` names the engine
    (``duckdb``) or its sqlglot dialect (``postgres``); ``engine`` is accepted as a synonym.
    A line without ``dialect`` applies to every engine. Malformed lines are collected in
    ``problems`` (file:line and what is wrong) and skipped; a (question, engine) with no
    prediction is recorded as ``missing_prediction`` so the denominator stays whole.
    """

    def __init__(self, path: str | Path, name: str | None = None) -> None:
        self.path = Path(path)
        self.name = name or f"file:{self.path.stem}"
        self.problems: list[FileProblem] = []
        self._by_key: dict[tuple[str, str | None], str] = {}
        self._read()

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "path": str(self.path), "predictions": len(self._by_key),
                "skipped_lines": len(self.problems)}

    def _read(self) -> None:
        if not self.path.exists():
            raise PredictionFileError(f"predictions file {self.path} does not exist")
        try:
            text = self.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise PredictionFileError(f"cannot read predictions file {self.path}: {exc}") from exc
        for number, raw in enumerate(text.splitlines(), start=1):
            if not raw.strip():
                continue
            problem = self._parse_line(raw)
            if problem:
                self.problems.append(FileProblem(str(self.path), number, problem))
        if not self._by_key and not self.problems:
            raise PredictionFileError(f"predictions file {self.path} is empty")

    def _parse_line(self, raw: str) -> str | None:
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            return f"not valid JSON ({exc.msg} at column {exc.colno})"
        if not isinstance(obj, dict):
            return f"expected a JSON object, got {type(obj).__name__}"
        qid, sql = obj.get("question_id"), obj.get("sql")
        dialect = obj.get("dialect", obj.get("engine"))
        if qid is None or isinstance(qid, (dict, list, bool)):
            return "missing or invalid 'question_id'"
        if not isinstance(sql, str):
            return "missing 'sql' (must be a string)"
        if dialect is not None and not isinstance(dialect, str):
            return "'dialect' must be a string"
        key = (str(qid), dialect.lower() if dialect else None)
        if key in self._by_key:
            return f"duplicate prediction for question {key[0]!r} dialect {key[1]!r} (first one kept)"
        self._by_key[key] = sql
        return None

    def predict(self, question: Question, engine: EngineInfo) -> Prediction:
        for dialect in (engine.name, engine.dialect, None):
            sql = self._by_key.get((question.id, dialect))
            if sql is not None:
                return Prediction(sql=sql)
        return Prediction(sql=None, failure="missing_prediction")


BUILTIN_PREDICTORS = ("gold", "transpile")


def make_predictor(spec: str, *, llm: LLMOptions | None = None) -> Predictor:
    """``gold``, ``transpile``, ``file:PATH``, ``NAME=PATH`` (a predictions file named NAME) or
    ``llm:NAME`` (a model from the config file; ``llm`` gives the config path, prompt settings
    and response cache, by default ``./polysql.toml``, default prompts and the on-disk cache)."""
    spec = spec.strip()
    if spec.startswith("llm:"):
        from polysql.predictors_llm import llm_predictor

        return llm_predictor(spec[len("llm:"):].strip(), llm)
    if spec == "gold":
        return GoldPredictor()
    if spec == "transpile":
        return TranspilePredictor()
    if spec.startswith("file:"):
        return FilePredictor(spec[len("file:"):])
    if "=" in spec:
        name, path = spec.split("=", 1)
        return FilePredictor(path, name=name.strip())
    if spec.endswith((".jsonl", ".json")):
        return FilePredictor(spec)
    raise ConfigError(
        f"unknown predictor {spec!r}: use one of {', '.join(BUILTIN_PREDICTORS)}, "
        "'file:PATH.jsonl', 'NAME=PATH.jsonl', or 'llm:MODEL' (a model in polysql.toml)"
    )
