"""Predictors: where the candidate SQL for each (question, engine) comes from.

- ``gold``: the source-dialect gold SQL run verbatim on every engine (naive portability).
- ``transpile``: the gold SQL translated by sqlglot into the engine's dialect.
- ``native-gold``: the gold the benchmark ships written for the engine's own dialect.
- ``file``: a predictions file produced by any system: polysql's JSONL of
  ``{"question_id", "dialect", "sql"}``, or the files BIRD's and Spider's evaluation scripts read
  (:mod:`polysql.sweep.prediction_formats`).
- ``llm:NAME``: a model declared in ``polysql.toml``, prompted per engine
  (:mod:`polysql.llm.predictors`; needs the ``llm`` extra).

Every one implements :class:`polysql.core.predictor.Predictor`: a predictor never raises for a
single question; it returns a :class:`~polysql.core.predictor.Prediction` whose ``failure`` says
why no SQL could be produced, and that is recorded as such.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlglot
from sqlglot.errors import ErrorLevel, SqlglotError

from polysql.core.digest import content_digest
from polysql.core.errors import ConfigError
from polysql.core.predictor import Prediction, Predictor, TargetEngine
from polysql.datasets.base import Question
from polysql.llm.predictors import LLMOptions, llm_predictor
from polysql.sweep.dialect_names import engine_keys, is_known_dialect, unknown_dialect
from polysql.sweep.prediction_files import FilePredictor
from polysql.sweep.prediction_formats import split_spec_options


class GoldPredictor(Predictor[Question]):
    name = "gold"

    def predict(self, question: Question, engine: TargetEngine) -> Prediction:
        return Prediction(sql=question.gold_sql)

    def input_digest(self, question: Question, engine: TargetEngine) -> str:
        return content_digest("gold", question.gold_sql)


class TranspilePredictor(Predictor[Question]):
    name = "transpile"

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "sqlglot": sqlglot.__version__}

    def input_digest(self, question: Question, engine: TargetEngine) -> str:
        # cheaper than translating again: the translation is a function of exactly these
        return content_digest("transpile", sqlglot.__version__, question.gold_sql,
                              question.source_dialect, engine.dialect)

    def predict(self, question: Question, engine: TargetEngine) -> Prediction:
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
        except RecursionError:
            return Prediction(sql=None, failure="transpile_failure: the gold is nested too deeply "
                                                "for sqlglot to read")
        if len(statements) != 1:
            return Prediction(sql=None, failure=f"transpile_failure: produced {len(statements)} statements")
        return Prediction(sql=statements[0])


class NativeGoldPredictor(Predictor[Question]):
    """Each engine's own gold: the SQL the benchmark ships written natively for the engine's
    dialect family (a ``mysql`` gold runs on MySQL and MariaDB, a ``postgresql`` gold on
    PostgreSQL), compared with the reference gold run on its source engine. A question without a
    native gold for an engine is ``missing_prediction`` there, so the denominator stays whole."""

    name = "native-gold"

    def _sql(self, question: Question, engine: TargetEngine) -> str | None:
        if engine.dialect == question.source_dialect:
            return question.gold_sql
        for key in engine_keys(engine.name, engine.dialect):
            sql = question.native_gold(key)
            if sql is not None:
                return sql
        return None

    def input_digest(self, question: Question, engine: TargetEngine) -> str:
        return content_digest("native-gold", self._sql(question, engine) or "")

    def predict(self, question: Question, engine: TargetEngine) -> Prediction:
        sql = self._sql(question, engine)
        if sql is None:
            return Prediction(sql=None, failure="missing_prediction")
        return Prediction(sql=sql, meta={"native": engine.dialect != question.source_dialect})

    def coverage(self, questions: Sequence[Question], engines: Sequence[TargetEngine],
                 dataset: str) -> list[str]:
        """Warnings for the (question, engine) pairs this sweep has no native gold for; raises
        when the swept questions carry no native gold for any swept engine of another dialect
        (every pair would be missing_prediction: a sweep of nothing)."""
        unknown = sorted({name for q in questions for name, _ in q.native_golds
                          if not is_known_dialect(name)})
        warnings = [f"predictor native-gold: the dataset {dataset} has gold SQL for "
                    f"{unknown_dialect(name)}, which no engine or sqlglot dialect is called; "
                    f"it is never run" for name in unknown]
        foreign = [engine for engine in engines
                   if any(engine.dialect != q.source_dialect for q in questions)]
        if not foreign:
            return warnings
        missing = {engine.name: sum(1 for q in questions if engine.dialect != q.source_dialect
                                    and self._sql(q, engine) is None) for engine in foreign}
        if all(missing[e.name] == sum(e.dialect != q.source_dialect for q in questions)
               for e in foreign):
            raise ConfigError(
                f"predictor native-gold: none of the {len(questions)} question(s) swept from "
                f"dataset {dataset} has gold SQL written for "
                f"{', '.join(e.name for e in foreign)}; native golds come with the dataset (a "
                "BIRD mini-dev folder with its mini_dev_mysql.json / mini_dev_postgresql.json, "
                "or gold_sql_<dialect> fields in a generic questions.jsonl)")
        return warnings + [
            f"predictor native-gold: {count} of {len(questions)} question(s) have no gold "
            f"written for {name}; they are recorded as missing_prediction there"
            for name, count in missing.items() if count]


BUILTIN_PREDICTORS = ("gold", "transpile", "native-gold")
#: What a bare path given as a predictor must end with to be taken for a predictions file.
_FILE_SUFFIXES = (".jsonl", ".json", ".txt", ".sql")


def make_predictor(spec: str, *, llm: LLMOptions | None = None) -> Predictor:
    """``gold``, ``transpile``, ``native-gold``, ``file:PATH``, ``NAME=PATH`` (a predictions file named NAME) or
    ``llm:NAME`` (a model from the config file; ``llm`` gives the config path, prompt settings
    and response cache, by default ``./polysql.toml``, default prompts and the on-disk cache).
    A file's PATH may end with ``?format=bird|spider|jsonl&dialect=NAME``
    (:data:`polysql.sweep.prediction_formats.OPTIONS`)."""
    spec = spec.strip()
    if spec.startswith("llm:"):
        return llm_predictor(spec[len("llm:"):].strip(), llm)
    if spec == "gold":
        return GoldPredictor()
    if spec == "transpile":
        return TranspilePredictor()
    if spec == "native-gold":
        return NativeGoldPredictor()
    if spec.startswith("file:"):
        return _file_predictor(spec[len("file:"):], None, spec)
    name, equals, path = spec.partition("=")
    if equals and "?" not in name:  # a '?' before the first '=' starts a bare path's options
        return _file_predictor(path, name.strip(), spec)
    if split_spec_options(spec, spec=spec)[0].endswith(_FILE_SUFFIXES):
        return _file_predictor(spec, None, spec)
    raise ConfigError(
        f"unknown predictor {spec!r}: use one of {', '.join(BUILTIN_PREDICTORS)}, "
        "'file:PATH', 'NAME=PATH' (a predictions file: polysql JSONL, BIRD predict_*.json or a "
        "Spider text file, optionally PATH?format=...&dialect=...), or 'llm:MODEL' (a model in "
        "polysql.toml)"
    )


def _file_predictor(text: str, name: str | None, spec: str) -> FilePredictor:
    path, options = split_spec_options(text, spec=spec)
    return FilePredictor(path, name=name, format=options.format, dialect=options.dialect)
