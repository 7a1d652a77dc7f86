"""The transpilation audit: would a transpile-based evaluator have reached the same verdict?

Dual execution runs a prediction natively on its target engine. Evaluators that cannot run every
engine judge it another way: translate the prediction back to the gold's dialect with sqlglot
(``sqlglot.transpile(sql, read=<engine dialect>, write=<gold dialect>)``), run that on the source
database, compare with the gold. That is sound only if the translation keeps the meaning the
engine gives the SQL (integer division, collation, date arithmetic, NULL placement...). This
module measures how often it does not, on the records of a sweep the user already ran: each
prediction on a non-reference engine is re-judged the transpile way, and its verdict set beside
the dual-execution verdict the record holds.

Everything runs on the source database through polysql's own backend, opened read-only (its
screen refuses statements that would write or reach outside the database), under the run's
timeout, row limit and comparison policy. The dataset's files are never modified.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sqlglot
from sqlglot.errors import ErrorLevel, SqlglotError

from polysql.backends.base import DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT, Backend
from polysql.core.errors import ConfigError, DatasetError, ResultsStoreError
from polysql.core.model import Result
from polysql.core.outage import require_available
from polysql.core.store import RESULTS_FILE, ResultsStore, read_run_info, run_plan, sweep_folder
from polysql.datasets.base import Dataset
from polysql.datasets.registry import get_dataset, spec_in
from polysql.engines.registry import connect
from polysql.normalizers.compare import resolve_policy
from polysql.normalizers.gold import GoldRuns, judge_within_row_cap, run_gold

#: the transpile verdicts, from best to worst
TRANSPILE_VERDICTS = ("match", "result_differs", "exec_error", "transpile_failure")

ACCEPTS_REJECTED = "transpile accepts what dual execution rejects"
REJECTS_ACCEPTED = "transpile rejects what dual execution accepts"


@dataclass(frozen=True, slots=True)
class TranspileJudgement:
    """One prediction of the run, judged both ways."""

    dataset: str
    question_id: str
    db_id: str
    predictor: str
    engine: str
    dialect: str  # the engine's sqlglot dialect, what the prediction was read as
    tags: tuple[str, ...]
    dual_status: str  # the record's status: match, mismatch or exec_error
    dual_reason: str
    #: ``match``, ``result_differs`` (ran on the source, another result), ``exec_error`` (the
    #: translation failed on the source engine) or ``transpile_failure`` (sqlglot refused it)
    verdict: str
    reason: str  # why: sqlglot's error, the source engine's error, or the comparison's reason
    sql: str
    transpiled: str | None

    @property
    def dual_correct(self) -> bool:
        return self.dual_status == "match"

    @property
    def transpile_correct(self) -> bool:
        return self.verdict == "match"

    @property
    def differs(self) -> bool:
        """The two ways of judging disagree on whether the prediction is correct."""
        return self.dual_correct != self.transpile_correct

    @property
    def direction(self) -> str:
        """Which way they disagree ('' when they agree)."""
        if not self.differs:
            return ""
        return ACCEPTS_REJECTED if self.transpile_correct else REJECTS_ACCEPTED

    @property
    def why(self) -> str:
        """Why the verdicts differ: what the engine said when transpile accepts what dual
        execution rejects, the transpile side's reason otherwise ('' when they agree)."""
        if not self.differs:
            return ""
        if self.transpile_correct:
            return f"{self.dual_status} on {self.engine}: {self.dual_reason}"
        return self.reason


@dataclass(slots=True)
class TranspileAudit:
    run_dir: str
    dataset: str
    reference_dialect: str
    judgements: list[TranspileJudgement]
    #: records not re-judged, by why (on a reference-dialect engine, no SQL, gold failed)
    skipped: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    timeout: float = DEFAULT_TIMEOUT
    max_rows: int = DEFAULT_MAX_ROWS
    pending: int = 0  # records the run planned but does not hold

    @property
    def differing(self) -> list[TranspileJudgement]:
        return [j for j in self.judgements if j.differs]


class AuditObserver:
    """Progress hooks (the command line draws a bar from them); no-ops by default."""

    def start(self, total: int) -> None: ...

    def advance(self) -> None: ...


def transpile_back(sql: str, read: str, write: str) -> tuple[str | None, str | None]:
    """``sql`` translated from dialect ``read`` to ``write`` as a transpile-based evaluator does
    it (sqlglot's defaults: constructs it cannot express are translated as best it can, not
    refused), as (SQL, None), or (None, why) when sqlglot cannot translate it."""
    try:
        statements = sqlglot.transpile(sql, read=read, write=write,
                                       unsupported_level=ErrorLevel.IGNORE)  # WARN, minus the log
    except RecursionError:
        return None, "nested too deeply for sqlglot to read"
    except (SqlglotError, ValueError) as exc:  # ValueError: a dialect sqlglot does not know
        text = str(exc).strip()
        return None, text.splitlines()[0] if text else type(exc).__name__
    statements = [s for s in statements if s.strip()]
    if len(statements) != 1:
        return None, f"sqlglot produced {len(statements)} statements"
    return statements[0], None


class SourceDatabases:
    """The dataset's source databases, opened read-only on first use; every statement's result
    and every gold's runs are kept, as predictors repeat each other."""

    def __init__(self, dataset: Dataset, *, timeout: float, max_rows: int) -> None:
        self.dataset = dataset
        self.timeout = timeout
        self.max_rows = max_rows
        self._backends: dict[str, Backend] = {}
        self._results: dict[tuple[str, str, int], Result] = {}
        self._golds: dict[tuple[str, str, str], GoldRuns] = {}

    def backend(self, db_id: str) -> Backend:
        if db_id not in self._backends:
            self._backends[db_id] = connect(self.dataset.database_url(db_id), read_only=True)
        return self._backends[db_id]

    def run(self, db_id: str, sql: str, max_rows: int | None = None) -> Result:
        """``sql``'s result on ``db_id`` under ``max_rows`` (the run's row cap unless given)."""
        cap = self.max_rows if max_rows is None else max_rows
        key = (db_id, sql, cap)
        if key not in self._results:
            # the source database gone (moved, unreadable) is not a translation's exec_error
            self._results[key] = require_available(
                self.backend(db_id).execute(sql, timeout=self.timeout, max_rows=cap),
                f"a statement on {db_id}'s source database")
        return self._results[key]

    def gold(self, db_id: str, sql: str, dialect: str) -> GoldRuns:
        key = (db_id, sql, dialect)
        if key not in self._golds:
            # re-runs for ties only when a translation is not the gold's own answer, as a sweep
            self._golds[key] = run_gold(sql, dialect, lambda text: self.run(db_id, text),
                                        deferred=True)
        return self._golds[key]

    def close(self) -> None:
        for backend in self._backends.values():
            backend.close()
        self._backends.clear()


def load_run(run_dir: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A run folder's ``run.json`` and latest records; ResultsStoreError when it is not one."""
    if not (run_dir / RESULTS_FILE).is_file():
        raise ResultsStoreError(f"{run_dir} holds no {RESULTS_FILE}: is it a folder written by "
                                "`polysql sweep --out DIR`?")
    info = read_run_info(run_dir)
    if info is None:
        raise ResultsStoreError(f"{run_dir} holds no run.json: it was not written by "
                                "`polysql sweep`, or was copied without it")
    records = ResultsStore(run_dir).latest_records()
    if not records:
        raise ResultsStoreError(f"{run_dir / RESULTS_FILE} holds no records: the sweep wrote "
                                "nothing yet")
    return info, records


def run_dataset(run_dir: Path, info: dict[str, Any], spec: str | None) -> Dataset:
    """The dataset the run swept: ``spec`` when given, else the one run.json names."""
    chosen = spec or info.get("dataset_spec") or (info.get("settings") or {}).get("dataset")
    if not chosen:
        raise DatasetError(f"{run_dir / 'run.json'} does not say which dataset was swept; "
                           "pass it with --dataset SPEC")
    try:
        # run.json's spec is as the sweep was given it: relative paths from where it ran
        return get_dataset(str(chosen) if spec else spec_in(sweep_folder(info), str(chosen)))
    except DatasetError as exc:
        if spec:
            raise
        raise DatasetError(f"{exc} (the dataset spec {chosen!r} comes from "
                           f"{run_dir / 'run.json'}; if it was relative to another folder, "
                           "pass the dataset with --dataset SPEC)") from exc


def audit_transpile(run_dir: str | Path, *, dataset: Dataset | None = None,
                    dataset_spec: str | None = None, predictors: Sequence[str] | None = None,
                    observer: AuditObserver | None = None) -> TranspileAudit:
    """Re-judge every prediction of the run at ``run_dir`` on a non-reference engine the
    transpile way. ``dataset`` (or ``dataset_spec``) overrides the dataset run.json names;
    ``predictors`` keeps only those predictors' records."""
    folder = Path(run_dir)
    observer = observer or AuditObserver()
    info, records = load_run(folder)
    return _audit(folder, info, records, dataset, dataset_spec, predictors, observer)


def _audit(folder: Path, info: dict[str, Any], records: list[dict[str, Any]],
           dataset: Dataset | None, dataset_spec: str | None, predictors: Sequence[str] | None,
           observer: AuditObserver) -> TranspileAudit:
    """:func:`audit_transpile` once the run is read."""
    if dataset is None:
        dataset = run_dataset(folder, info, dataset_spec)
    settings = info.get("settings") or {}
    timeout = float(settings.get("timeout") or DEFAULT_TIMEOUT)
    max_rows = int(settings.get("max_rows") or DEFAULT_MAX_ROWS)
    policy: dict[str, Any] = dict(settings.get("policy") or {})
    resolve_policy(None, policy)  # a run.json edited by hand fails here, with the option's name
    audit = TranspileAudit(run_dir=str(folder), dataset=dataset.name, reference_dialect="",
                           judgements=[], timeout=timeout, max_rows=max_rows,
                           pending=len(run_plan(folder).pending(records)))
    chosen = _select(records, dataset.name, predictors, folder)
    observer.start(len(chosen))
    sources = SourceDatabases(dataset, timeout=timeout, max_rows=max_rows)
    try:
        _check_fingerprints(chosen, sources, audit)
        for record in chosen:
            why_not = _skip_reason(record)
            audit.reference_dialect = audit.reference_dialect or str(record.get("gold_dialect"))
            if why_not is not None:
                audit.skipped[why_not] = audit.skipped.get(why_not, 0) + 1
            else:
                audit.judgements.append(_judge(record, sources, policy))
            observer.advance()
    finally:
        sources.close()
    return audit


def _select(records: list[dict[str, Any]], dataset: str, predictors: Sequence[str] | None,
            folder: Path) -> list[dict[str, Any]]:
    datasets = sorted({str(r.get("dataset")) for r in records})
    if dataset not in datasets:
        raise DatasetError(f"{folder} holds records of dataset {', '.join(datasets)}, not of "
                           f"{dataset!r}; pass the dataset that was swept with --dataset SPEC")
    chosen = [r for r in records if r.get("dataset") == dataset]
    if predictors:
        known = sorted({str(r["predictor"]) for r in chosen})
        unknown = sorted(set(predictors) - set(known))
        if unknown:
            raise ConfigError(f"{folder} holds no records of predictor(s) {', '.join(unknown)}; "
                              f"its predictors are {', '.join(known)}")
        chosen = [r for r in chosen if r["predictor"] in set(predictors)]
    if all(r.get("dialect") == r.get("gold_dialect") for r in chosen):
        engines = sorted({str(r["engine"]) for r in chosen})
        raise ConfigError(f"{folder} holds predictions only on {', '.join(engines)}, which speak(s) "
                          "the gold's own dialect: there is nothing to translate; audit a run "
                          "that swept other engines")
    return sorted(chosen, key=lambda r: (str(r["question_id"]), str(r["predictor"]), str(r["engine"])))


def _skip_reason(record: dict[str, Any]) -> str | None:
    """Why a record is not re-judged, or None when it is."""
    if record.get("dialect") == record.get("gold_dialect"):
        return "engine speaks the gold's dialect (nothing to translate)"
    if record.get("status") == "invalid_gold":
        return "the gold failed (nothing to compare with)"
    if record.get("sql") is None:
        return "no SQL was produced"
    return None


def _check_fingerprints(records: list[dict[str, Any]], sources: SourceDatabases,
                        audit: TranspileAudit) -> None:
    """Warn when a source database changed since the run: its dual verdicts were computed over
    other data, so a difference may come from the data rather than from the translation."""
    recorded: dict[str, set[str]] = {}
    for record in records:
        if _skip_reason(record) is None:
            digest = (record.get("inputs") or {}).get("database")
            if digest:
                recorded.setdefault(str(record["db_id"]), set()).add(str(digest))
    for db_id, digests in sorted(recorded.items()):
        current = sources.backend(db_id).fingerprint()
        if digests != {current}:
            audit.warnings.append(
                f"database {db_id} has changed since the run was swept; verdicts that differ on "
                "its questions may come from the data, not the translation (re-run the sweep "
                "to compare like with like)")


def _judge(record: dict[str, Any], sources: SourceDatabases,
           policy: dict[str, Any]) -> TranspileJudgement:
    db_id, sql = str(record["db_id"]), str(record["sql"])
    reference = str(record["gold_dialect"])
    transpiled, failure = transpile_back(sql, read=str(record["dialect"]), write=reference)
    if transpiled is None:
        verdict, reason = "transpile_failure", f"sqlglot cannot translate it: {failure}"
    else:
        gold = sources.gold(db_id, str(record["gold_sql"]), reference)
        result = sources.run(db_id, transpiled)
        if result.error is not None:
            verdict = "exec_error"
            reason = f"the translation fails on the source database: {result.error.message}"
        else:
            def rerun(max_rows: int) -> tuple[Callable[[str], Result], Result]:
                # as a sweep judges a verdict that rests on rows the row cap cut off
                return (lambda text: sources.run(db_id, text, max_rows),
                        sources.run(db_id, transpiled, max_rows))

            judged = judge_within_row_cap(gold, result, lambda text: sources.run(db_id, text),
                                          rerun, sources.max_rows, **policy).verdict
            verdict = "match" if judged.match else "result_differs"
            reason = judged.reason
    return TranspileJudgement(
        dataset=str(record["dataset"]), question_id=str(record["question_id"]), db_id=db_id,
        predictor=str(record["predictor"]), engine=str(record["engine"]),
        dialect=str(record["dialect"]), tags=tuple(record.get("tags") or ()),
        dual_status=str(record["status"]), dual_reason=str(record.get("reason") or ""),
        verdict=verdict, reason=reason, sql=sql, transpiled=transpiled)
