"""One record per (dataset, question, predictor, engine): what ``results.jsonl`` holds.

A record carries everything error analysis reads besides the outcome, so nothing downstream ever
reopens the dataset or an engine; field by field it is documented in docs/cli.md.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from polysql.backends.base import Backend
from polysql.core.model import Result, Verdict
from polysql.datasets.base import Question
from polysql.engines.fleet import EngineSpec
from polysql.normalizers.gold import GoldRuns
from polysql.sweep.inputs import Inputs


def record_status(gold: GoldRuns, sql: str | None, result: Result | None, verdict: Verdict) -> str:
    """``invalid_gold``, ``generation_failure``, ``exec_error``, ``match`` or ``mismatch``."""
    if gold.result.error is not None:
        return "invalid_gold"
    if sql is None:
        return "generation_failure"
    if result is not None and result.error is not None:
        return "exec_error"
    return "match" if verdict.match else "mismatch"


def build_record(*, dataset: str, question: Question, predictor: str, spec: EngineSpec,
                 backend: Backend, sql: str | None, failure: str | None, meta: dict[str, Any],
                 gold: GoldRuns, result: Result | None, verdict: Verdict,
                 inputs: Inputs) -> dict[str, Any]:
    status = record_status(gold, sql, result, verdict)
    return {
        "dataset": dataset,
        "question_id": question.id,
        "db_id": question.db_id,
        "predictor": predictor,
        "engine": spec.name,
        "engine_version": backend.version(),
        # an emulator's verdicts say so even when the engine was given another name
        "emulated": spec.backend.is_emulated(spec.url),
        "dialect": spec.dialect,
        "tags": list(question.tags),
        "difficulty": question.difficulty,
        # what error analysis reads besides the outcome, so it never reopens the dataset
        "question": question.question,
        "evidence": question.evidence,
        "gold_sql": question.gold_sql,
        "gold_dialect": question.source_dialect,
        "status": status,
        "match": verdict.match and status == "match",
        "reason": verdict.reason,
        "details": verdict.details,
        "sql": sql,
        "prediction_failure": failure,
        "prediction_meta": meta,
        "pred": result_summary(result),
        "gold": result_summary(gold.result),
        # digests of what produced this record: a resume re-evaluates it when they change
        "inputs": inputs,
        "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def result_summary(result: Result | None) -> dict[str, Any] | None:
    """What a record keeps of a result: its shape, timing and error, never its rows."""
    if result is None:
        return None
    return {
        "columns": result.columns,
        "types": result.types,
        "row_count": len(result.rows),
        "truncated": result.truncated,
        "elapsed": round(result.elapsed, 6),
        "error": result.error.to_dict() if result.error else None,
        **({"stats": result.stats} if result.stats else {}),
    }
