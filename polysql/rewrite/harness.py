"""Run rewrite cases: validate a case against its references, judge a method's answer, run a pool.

One terminal outcome per case and method, decided in this order (the first that applies wins):

1. ``source_acceptance_failure``  the method could not accept the input;
2. ``generation_failure``         the method failed (error, exception, not a MethodAnswer), or its
                                  SQL is not exactly one statement;
3. ``no_rewrite``                 the method decided to leave the query as it is;
4. ``no_op``                      the rewrite is the input up to formatting, comments and alias
                                  names (:func:`polysql.analysis.rewrite.noop.is_noop`);
5. ``execution_failure``          the rewrite fails on the case's engine (a syntax or runtime
                                  error, a timeout, a statement the read-only connection refuses);
6. ``unsafe_rewrite``             it runs, but its result breaks the case's contract;
7. a rewrite that passed the gate is timed against the input (:func:`time_pair`) and scored
   (SCS of both, CGOQ), then graded by its speedup s = input median / rewrite median:
   ``performance_gain`` when s >= 1 + delta, ``regression`` when s <= 1 / (1 + delta), otherwise
   (inside the neutral band) ``simplification_gain`` when the simplification credit K is above
   0, else ``neutral``. A faster rewrite is a performance gain however simple it is, and a slower
   one a regression however simple.

Every outcome carries the input's SCS (for quartile tables). A rewrite sqlglot cannot parse runs
and is judged like any other, but earns no simplification credit (its SCS is unknown).

An input that fails on its engine, or returns more rows than ``max_rows``, is a broken case, not a
method's failure: :func:`run_method` and :func:`run_pool` raise :class:`DatasetError` naming it;
:func:`validate_reference_pair` reports it as the reason the case is not certified.

A case whose engine cannot be used here at all (its client library is not installed, its server
does not answer) is neither: :func:`usable_cases` sets it aside as a :class:`SkippedCase` with the
reason, so the other pools can still be evaluated and the skip is reported, never hidden. An
engine that goes away during a run (any statement answers ``unavailable``) is not a method's
failure either: :class:`EngineUnavailableError` is raised and nothing is scored for that case
(see :mod:`polysql.core.outage`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sqlglot.errors

import polysql
from polysql.analysis.rewrite.cgoq import (
    DEFAULT_PARAMS,
    CgoqParams,
    cgoq,
    simplification_credit,
    simplification_ratio,
)
from polysql.analysis.rewrite.model import GATED_OUTCOMES, CaseOutcome, MethodAnswer
from polysql.analysis.rewrite.noop import is_noop
from polysql.analysis.rewrite.scs import ScsResult, features, fit_caps, scs
from polysql.backends.base import DEFAULT_MAX_ROWS, Backend
from polysql.core.errors import (
    ComparisonError,
    ConfigError,
    DatasetError,
    EngineUnavailableError,
    LLMUnavailableError,
)
from polysql.core.model import Result
from polysql.core.outage import require_available
from polysql.datasets.rewrite.cases import Contract, RewriteCase, split_statements
from polysql.engines.copies import engine_name
from polysql.engines.timing import (
    DEFAULT_RUNS,
    DEFAULT_WARMUP,
    TimedRun,
    TimingError,
    measured_order,
    time_pair,
)
from polysql.normalizers.gold import GoldRuns, run_gold
from polysql.rewrite.databases import method_schema, open_database, resolve_engine_url

__all__ = [
    "Method",
    "Progress",
    "ReferenceReport",
    "SkippedCase",
    "ask_method",
    "blinded",
    "check_contract",
    "classify",
    "contract_policy",
    "input_caps",
    "run_input",
    "run_method",
    "run_pool",
    "skip_failure",
    "skip_summary",
    "usable_cases",
    "validate_reference_pair",
]

Method = Callable[[RewriteCase, str], MethodAnswer]
Progress = Callable[[int, int, CaseOutcome], None]


# --- the contract --------------------------------------------------------------------------------

def contract_policy(contract: Contract) -> dict[str, Any]:
    """Comparison options for a rewrite against its input on the same engine.

    Both results come from one engine, so none of the cross-engine leniencies apply: columns pair
    by position and must be as many; values compare as the engine returned them (no text for
    numbers, dates or booleans, no padding trimmed, NULLs placed as the engine placed them), and
    numbers exactly unless the contract declares a tolerance.
    """
    tolerant = contract.relative > 0 or contract.absolute > 0
    return {
        "numeric_tolerance": tolerant, "rel_tol": contract.relative, "abs_tol": contract.absolute,
        "numeric_strings": False, "bool_as_int": False, "bool_text": False,
        "temporal_text": False, "midnight_as_date": False, "trim_trailing_spaces": False,
        "align_by_name": False, "align_by_value": False, "allow_extra_columns": False,
        "null_order": "strict",
    }


def _extra_check_failure(check: str, base: Result, rewrite: Result) -> str | None:
    if check == "same_row_count" and len(base.rows) != len(rewrite.rows):
        return f"same_row_count: the input returns {len(base.rows)} rows, the rewrite " \
               f"{len(rewrite.rows)}"
    if check == "same_column_names" and base.columns != rewrite.columns:
        return f"same_column_names: the input's columns are {base.columns}, the rewrite's " \
               f"{rewrite.columns}"
    if check == "same_column_types" and base.types != rewrite.types:
        return f"same_column_types: the input's column types are {base.types}, the rewrite's " \
               f"{rewrite.types}"
    return None


def check_contract(case: RewriteCase, input_result: Result | GoldRuns,
                   rewrite_result: Result) -> tuple[bool, str]:
    """Whether ``rewrite_result`` is consistent with the input's under the case's contract, and
    why (the first broken rule, or the comparison's reason).

    Rows compare in order when ``case.rows_ordered`` (rows tied on the input's ORDER BY keys may
    still come in any order), else as a bag. Pass the :class:`GoldRuns` of :func:`run_input` to
    let ties be judged on ORDER BY keys the input does not return, and tie groups its LIMIT cuts.
    """
    runs = input_result if isinstance(input_result, GoldRuns) else \
        GoldRuns(case.input_sql, case.dialect, input_result, input_result)
    if not runs.result.ok:
        raise DatasetError(f"case {case.id}: the input has no result to compare with")
    if not rewrite_result.ok:
        assert rewrite_result.error is not None
        return False, f"the rewrite failed with a {rewrite_result.error.kind} error: " \
                      f"{rewrite_result.error.message}"
    if runs.result.truncated or rewrite_result.truncated:
        side = "the input" if runs.result.truncated else "the rewrite"
        return False, f"{side} returned more rows than the row cap; the results cannot be " \
                      "compared in full"
    for check in case.contract.extra_checks:
        failure = _extra_check_failure(check, runs.result, rewrite_result)
        if failure is not None:
            return False, failure
    try:
        verdict = polysql.compare(runs.compared, rewrite_result, ordered=case.rows_ordered,
                                  dialect=case.dialect, **runs.compare_kwargs(),
                                  **contract_policy(case.contract))
    except ComparisonError as exc:
        raise DatasetError(f"case {case.id}: its contract cannot be applied: {exc}") from exc
    if verdict.match:
        return True, verdict.reason
    return False, f"the rewrite's result differs from the input's (compared as gold = input, " \
                  f"predicted = rewrite): {verdict.reason}"


# --- running one case ----------------------------------------------------------------------------

def run_input(case: RewriteCase, backend: Backend, *,
              max_rows: int = DEFAULT_MAX_ROWS) -> GoldRuns:
    """Run the input (and the re-runs that let ties be judged); DatasetError when it fails."""
    def execute(sql: str) -> Result:
        return require_available(backend.execute(sql, timeout=case.timeout, max_rows=max_rows),
                                 f"case {case.id}'s input")

    runs = run_gold(_runnable(case.input_sql, case.dialect), case.dialect, execute)
    if not runs.result.ok:
        assert runs.result.error is not None
        raise DatasetError(
            f"case {case.id} is broken: its input fails on {backend.name} with a "
            f"{runs.result.error.kind} error: {runs.result.error.message}")
    if runs.result.truncated:
        raise DatasetError(f"case {case.id} is broken: its input returns more than {max_rows} "
                           "rows, so results cannot be compared in full")
    return runs


def input_caps(cases: Iterable[RewriteCase]) -> dict[str, float]:
    """SCS caps fitted on the frozen input corpus: every case's input query."""
    counts = [features(case.input_sql, case.dialect) for case in cases]
    parsed = [c for c in counts if c.ok]
    if not parsed:
        raise ConfigError("no input query could be parsed, so SCS caps cannot be fitted")
    return fit_caps(parsed)


def _statements(sql: str, dialect: str) -> tuple[str, ...] | None:
    """The statements of ``sql`` without their semicolons; None when it cannot even be tokenized
    (then the engine judges it as written)."""
    try:
        return split_statements(sql, dialect)
    except sqlglot.errors.SqlglotError:
        return None


def _runnable(sql: str, dialect: str) -> str:
    """The one statement of ``sql`` as the engine gets it: a trailing semicolon is not part of
    it (drivers differ on whether they accept one)."""
    statements = _statements(sql, dialect)
    return statements[0] if statements is not None and len(statements) == 1 else sql


def classify(speedup: float, credit: float, params: CgoqParams = DEFAULT_PARAMS) -> str:
    """The grade of a rewrite that passed the gate (see the module docstring)."""
    if speedup >= 1 + params.delta:
        return "performance_gain"
    if speedup <= 1 / (1 + params.delta):
        return "regression"
    return "simplification_gain" if credit > 0 else "neutral"


def _scs_summary(result: ScsResult) -> dict[str, Any]:
    return {"status": str(result.status), "scs": result.scs,
            "group_scores": dict(result.group_scores), "raw": dict(result.raw),
            "parser": result.parser, "error": result.error}


def _engine_label(backend: Backend) -> str:
    return engine_name(type(backend), backend.url)


def run_method(case: RewriteCase, backend: Backend, answer: MethodAnswer, *, method_name: str,
               params: CgoqParams = DEFAULT_PARAMS, caps: Mapping[str, float],
               input_runs: GoldRuns | None = None, warmup: int = DEFAULT_WARMUP,
               runs: int = DEFAULT_RUNS, max_rows: int = DEFAULT_MAX_ROWS) -> CaseOutcome:
    """The terminal outcome of ``answer`` for ``case`` on ``backend`` (its evaluation database).

    ``input_runs`` (from :func:`run_input`) saves running the input again; without it the input
    runs when a rewrite reaches execution. Raises DatasetError when the input itself fails.
    """
    scs_input = scs(case.input_sql, case.dialect, caps)
    meta: dict[str, Any] = {"engine_version": backend.version(),
                            "scs": {"input": _scs_summary(scs_input)}}
    if answer.message is not None:
        meta["answer_message"] = answer.message
    if answer.meta:
        meta["answer_meta"] = dict(answer.meta)

    def outcome(kind: str, reason: str, **extra: Any) -> CaseOutcome:
        return CaseOutcome(case_id=case.id, pool=case.pool, engine=_engine_label(backend),
                           dialect=case.dialect, method=method_name, outcome=kind,
                           answer_kind=answer.kind, rewrite_sql=answer.sql, reason=reason,
                           scs_input=scs_input.scs, meta=meta, **extra)

    if answer.kind == "source_acceptance_failure":
        return outcome("source_acceptance_failure", answer.message or "the method did not accept "
                                                                      "the input")
    if answer.kind == "method_error":
        return outcome("generation_failure", answer.message or "the method reported an error")
    if answer.kind == "no_rewrite":
        return outcome("no_rewrite", answer.message or "the method left the query as it is")
    assert answer.sql is not None
    statements = _statements(answer.sql, case.dialect)
    if statements is not None and len(statements) != 1:
        return outcome("generation_failure", f"the rewrite must be exactly one SQL statement, "
                                             f"found {len(statements)}")
    rewrite_sql = _runnable(answer.sql, case.dialect)
    if is_noop(case.input_sql, answer.sql, case.dialect):
        return outcome("no_op", "the rewrite is the input up to formatting, comments and alias "
                                "names")

    if input_runs is None:  # before the rewrite runs: a broken case must not pass for its fault
        input_runs = run_input(case, backend, max_rows=max_rows)
    rewrite_result = require_available(
        backend.execute(rewrite_sql, timeout=case.timeout, max_rows=max_rows),
        f"the rewrite of case {case.id}")
    if not rewrite_result.ok:
        assert rewrite_result.error is not None
        meta["error"] = rewrite_result.error.to_dict()
        return outcome("execution_failure", f"the rewrite failed on {backend.name} with a "
                                            f"{rewrite_result.error.kind} error: "
                                            f"{rewrite_result.error.message}")
    consistent, reason = check_contract(case, input_runs, rewrite_result)
    if not consistent:
        return outcome("unsafe_rewrite", reason, consistent=False)

    log: list[TimedRun] = []
    try:
        timing = time_pair(backend, input_runs.sql, rewrite_sql, warmup=warmup, runs=runs,
                           timeout=case.timeout, max_rows=max_rows, log=log)
    except TimingError as exc:
        if exc.query == "input":
            raise DatasetError(f"case {case.id} is broken: {exc}") from exc
        assert exc.result.error is not None
        meta["error"] = exc.result.error.to_dict()
        return outcome("execution_failure", str(exc))
    scs_rewrite = scs(answer.sql, case.dialect, caps)
    meta["scs"]["rewrite"] = _scs_summary(scs_rewrite)
    meta["timing_order"] = measured_order(log)
    speedup = timing.speedup
    # An unparsed rewrite's SCS is unknown: score it as no simpler than the input.
    base_scs = scs_input.scs if scs_input.scs is not None else 0.0
    rewrite_scs = scs_rewrite.scs if scs_rewrite.scs is not None else base_scs
    credit = simplification_credit(simplification_ratio(base_scs, rewrite_scs), params)
    meta.update(speedup=speedup, simplification_credit=credit)
    grade = classify(speedup, credit, params)
    return outcome(grade, f"{reason}; speedup {speedup:.3g}x, simplification credit {credit:.3g}",
                   consistent=True, timing=timing, scs_rewrite=scs_rewrite.scs,
                   cgoq=cgoq(speedup, base_scs, rewrite_scs, True, params))


# --- engines that cannot be used here ------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class SkippedCase:
    """A case left out because its engine cannot be used here; ``reason`` says why and how to
    fix it (e.g. the extra to install)."""

    case_id: str
    pool: str
    engine: str  # the engine name the case declares
    dialect: str
    reason: str


def usable_cases(cases: Sequence[RewriteCase], *, engines: Mapping[str, str] | None = None,
                 cache_dir: Path | None = None,
                 connect_options: Mapping[str, Any] | None = None,
                 ) -> tuple[list[RewriteCase], list[SkippedCase]]:
    """Split ``cases`` into those whose engine can be used here and those whose engine cannot.

    Each engine (the URL a case's engine name resolves to) is tried once, by opening its first
    case's evaluation database (built then, and reused when the case runs): when that raises
    :class:`EngineUnavailableError` (client library not installed, server unreachable), every
    case of that engine is skipped with its message. Any other failure (a broken setup script,
    a case in the wrong dialect) is raised as it would be when the case runs.
    """
    down: dict[str, str] = {}
    tried: set[str] = set()
    usable: list[RewriteCase] = []
    skipped: list[SkippedCase] = []
    for case in cases:
        key = resolve_engine_url(case.engine, engines).render_as_string(hide_password=False)
        if key not in tried:
            tried.add(key)
            try:
                open_database(case, engines=engines, cache_dir=cache_dir,
                              connect_options=connect_options).close()
            except EngineUnavailableError as exc:
                down[key] = " ".join(str(exc).split())  # drivers' messages span lines
        if key in down:
            skipped.append(SkippedCase(case.id, case.pool, case.engine, case.dialect, down[key]))
        else:
            usable.append(case)
    return usable, skipped


def skip_summary(skipped: Iterable[SkippedCase]) -> list[str]:
    """One line per pool and reason, in the order met: 'skipped: 9 case(s) of pool spark-core
    (pyspark is not installed; ...)'."""
    counts: dict[tuple[str, str], int] = {}
    for skip in skipped:
        counts[skip.pool, skip.reason] = counts.get((skip.pool, skip.reason), 0) + 1
    return [f"skipped: {count} case(s) of pool {pool} ({reason})"
            for (pool, reason), count in counts.items()]


def skip_failure(skipped: Sequence[SkippedCase], *, ran: int, require_all: bool) -> str | None:
    """Why skipped cases make a run fail, or None when they do not: skips are reported but
    tolerated, unless no case could run at all or every case was required to run."""
    if not skipped or (ran and not require_all):
        return None
    why = "every case is required to run (--require-all)" if ran else "no selected case could run"
    return (f"{len(skipped)} case(s) skipped and {why}: install the missing clients or start the "
            "engines named above, or select other pools with --pool")


# --- reference-pair mode -------------------------------------------------------------------------

@dataclass(slots=True)
class ReferenceReport:
    """Reference-pair validation of one case: certified when the input runs and every reference
    runs, keeps the contract and is a real rewrite (a gated outcome). ``skipped`` holds the
    reason when the case could not run at all (its engine is unusable here): then it is neither
    certified nor failed."""

    case_id: str
    pool: str
    engine: str
    dialect: str
    engine_version: str
    certified: bool
    problems: list[str] = field(default_factory=list)
    scs_input: float | None = None
    references: list[CaseOutcome] = field(default_factory=list)
    skipped: str | None = None

    @classmethod
    def for_skipped(cls, skip: SkippedCase) -> ReferenceReport:
        return cls(case_id=skip.case_id, pool=skip.pool, engine=skip.engine, dialect=skip.dialect,
                   engine_version="", certified=False, skipped=skip.reason)

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["references"] = [reference.to_dict() for reference in self.references]
        return out


def validate_reference_pair(case: RewriteCase, backend: Backend, *,
                            caps: Mapping[str, float] | None = None,
                            params: CgoqParams = DEFAULT_PARAMS, warmup: int = DEFAULT_WARMUP,
                            runs: int = DEFAULT_RUNS,
                            max_rows: int = DEFAULT_MAX_ROWS) -> ReferenceReport:
    """Run the input and every reference on ``backend`` (the case's evaluation database) as a
    method's rewrites would be run, recording timings, SCS and CGOQ. ``caps`` default to caps
    fitted on this case's input alone."""
    caps = caps if caps is not None else input_caps([case])
    report = ReferenceReport(case_id=case.id, pool=case.pool, engine=_engine_label(backend),
                             dialect=case.dialect, engine_version=backend.version(),
                             certified=False,
                             scs_input=scs(case.input_sql, case.dialect, caps).scs)
    try:
        input_runs = run_input(case, backend, max_rows=max_rows)
    except DatasetError as exc:
        report.problems.append(str(exc))
        return report
    for number, reference in enumerate(case.references, 1):
        name = f"reference_rewrite_{number:02d}"
        try:
            outcome = run_method(case, backend, MethodAnswer(kind="rewrite", sql=reference),
                                 method_name=name, params=params, caps=caps,
                                 input_runs=input_runs, warmup=warmup, runs=runs,
                                 max_rows=max_rows)
        except DatasetError as exc:  # the input failed while being timed
            report.problems.append(str(exc))
            return report
        report.references.append(outcome)
        if outcome.outcome not in GATED_OUTCOMES:
            report.problems.append(f"sql/{name}.sql: {outcome.outcome}: {outcome.reason}")
    report.certified = not report.problems
    return report


# --- method mode over a pool ---------------------------------------------------------------------

def blinded(case: RewriteCase) -> RewriteCase:
    """``case`` as a method may see it: no reference rewrites, no description of the opportunity."""
    return dataclasses.replace(case, references=(), opportunity="", description="")


def ask_method(method: Method, case: RewriteCase, schema: str) -> MethodAnswer:
    """The method's answer for ``case``; any exception or a wrong return becomes a method error,
    except :class:`LLMUnavailableError`: a model endpoint that gave no answer at all is an outage,
    not an answer, and is raised."""
    try:
        answer = method(blinded(case), schema)
    except LLMUnavailableError:
        raise
    except Exception as exc:  # a method's crash is its own failure, never the run's
        return MethodAnswer(kind="method_error", message=f"{type(exc).__name__}: {exc}",
                            meta={"exception": type(exc).__name__})
    if not isinstance(answer, MethodAnswer):
        return MethodAnswer(kind="method_error",
                            message=f"the method returned {type(answer).__name__}, "
                                    "not a MethodAnswer")
    return answer


def run_pool(cases: Sequence[RewriteCase], method: Method, *, method_name: str = "method",
             engines: Mapping[str, str] | None = None, params: CgoqParams = DEFAULT_PARAMS,
             caps: Mapping[str, float] | None = None, progress: Progress | None = None,
             cache_dir: Path | None = None, connect_options: Mapping[str, Any] | None = None,
             warmup: int = DEFAULT_WARMUP, runs: int = DEFAULT_RUNS,
             max_rows: int = DEFAULT_MAX_ROWS) -> list[CaseOutcome]:
    """Every case's outcome under ``method``, in the order given; no case leaves the denominator.

    ``method(case, schema)`` sees the case without its references (:func:`blinded`) and the
    schema text (:func:`~polysql.rewrite.databases.method_schema`). ``caps`` default to
    caps fitted on all the cases' inputs. ``engines`` overrides engine names with URLs. A case
    whose database cannot be built, or whose input fails, stops the run with an error naming it;
    a model endpoint that gives no answer raises :class:`LLMUnavailableError`, and an engine
    that goes away mid-run :class:`EngineUnavailableError`: none of the method's cases is
    scored (an outage must not count as the method's failures).
    """
    cases = list(cases)
    if not cases:
        return []
    caps = caps if caps is not None else input_caps(cases)
    outcomes: list[CaseOutcome] = []
    for index, case in enumerate(cases, 1):
        with open_database(case, engines=engines, cache_dir=cache_dir,
                           connect_options=connect_options) as database:
            input_runs = run_input(case, database.backend, max_rows=max_rows)
            answer = ask_method(method, case, method_schema(case, database.backend))
            result = run_method(case, database.backend, answer, method_name=method_name,
                                params=params, caps=caps, input_runs=input_runs, warmup=warmup,
                                runs=runs, max_rows=max_rows)
        outcomes.append(result)
        if progress is not None:
            progress(index, len(cases), result)
    return outcomes
