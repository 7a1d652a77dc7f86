"""The rewrite harness on real engines: reference-pair validation, every terminal outcome of a
method's answer, the timing protocol, and a pool run that keeps every case in the denominator.

DuckDB and SQLite always run; PostgreSQL and MySQL/MariaDB run against the servers named by
POLYSQL_POSTGRES_URL / POLYSQL_MYSQL_URL and skip when those cannot be reached (fail when
POLYSQL_REQUIRE lists them). Cases are the scaffold's: three items, an IN-subquery on the table's
own key as the input, its predicate applied directly as the reference.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from polysql_testkit.rewrite_engines import Engine, make_engine

from polysql.analysis.rewrite.cgoq import (
    CgoqParams,
    cgoq,
    simplification_credit,
    simplification_ratio,
)
from polysql.analysis.rewrite.model import GATED_OUTCOMES, CaseOutcome, MethodAnswer
from polysql.analysis.rewrite.scs import features, fit_caps, scs
from polysql.core.errors import DatasetError
from polysql.core.model import Result
from polysql.datasets.rewrite.cases import Contract, RewriteCase
from polysql.engines.copies import EvaluationCopy
from polysql.engines.registry import connect
from polysql.engines.timing import TimedRun, TimingError, measured_order, time_pair
from polysql.rewrite.cases import load_case
from polysql.rewrite.databases import open_database
from polysql.rewrite.harness import (
    blinded,
    check_contract,
    classify,
    contract_policy,
    input_caps,
    run_input,
    run_method,
    run_pool,
    validate_reference_pair,
)
from polysql.rewrite.scaffold import scaffold_case

ENGINES = ("duckdb", "sqlite", "postgres", "mysql")
REFERENCE = "SELECT name, price\nFROM items\nWHERE price > 1\nORDER BY name\n"
WRONG_PREDICATE = "SELECT name, price\nFROM items\nWHERE price > 2\nORDER BY name\n"
# the scaffold's input, reformatted, recased and commented: the same query
REFORMATTED_INPUT = ("select name, price from items  -- the items\n"
                     "where id in (select id from items where price > 1) order by name")


@pytest.fixture(scope="module", params=[pytest.param(n, marks=getattr(pytest.mark, n), id=n)
                                        for n in ENGINES])
def engine(request: pytest.FixtureRequest,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    made = make_engine(request.param, tmp_path_factory.mktemp("cache"), "h")
    try:
        yield made
    finally:
        made.cleanup()


@dataclass
class Opened:
    case: RewriteCase
    database: EvaluationCopy
    caps: dict[str, float]

    def run(self, answer: MethodAnswer, **options: Any) -> CaseOutcome:
        return run_method(self.case, self.database.backend, answer, method_name="test",
                          caps=self.caps, **options)


@pytest.fixture(scope="module")
def opened(engine: Engine, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Opened]:
    """The scaffolded case on the engine, its database built once for the module."""
    case = engine.case(tmp_path_factory.mktemp("cases"), "outcomes")
    with engine.open(case) as database:
        yield Opened(case, database, input_caps([case]))


def _rewrite(sql: str) -> MethodAnswer:
    return MethodAnswer(kind="rewrite", sql=sql)


def _write(case: RewriteCase, relative: str, text: str) -> RewriteCase:
    (case.path / relative).write_text(text, encoding="utf-8")
    return load_case(case.path)


# --- reference-pair mode -------------------------------------------------------------------------

def test_the_reference_pair_is_certified(opened: Opened) -> None:
    report = validate_reference_pair(opened.case, opened.database.backend, caps=opened.caps)
    assert report.certified, report.problems
    assert report.problems == []
    assert len(report.references) == 1
    reference = report.references[0]
    assert reference.outcome in GATED_OUTCOMES
    assert reference.method == "reference_rewrite_01"
    assert reference.consistent is True
    assert reference.timing is not None
    assert len(reference.timing.input_runs) == len(reference.timing.rewrite_runs) == 5
    # recorded scores agree with the metrics computed directly
    assert report.scs_input == scs(opened.case.input_sql, opened.case.dialect, opened.caps).scs
    assert reference.scs_rewrite == scs(REFERENCE, opened.case.dialect, opened.caps).scs
    assert reference.scs_input is not None and reference.scs_rewrite is not None
    assert reference.scs_rewrite < reference.scs_input
    assert reference.cgoq == pytest.approx(
        cgoq(reference.timing.speedup, reference.scs_input, reference.scs_rewrite, True))
    dumped = report.to_dict()
    assert dumped["certified"] is True
    assert dumped["references"][0]["timing"]["speedup"] == reference.timing.speedup


def test_a_broken_reference_is_caught(engine: Engine, tmp_path: Path) -> None:
    case = _write(engine.case(tmp_path, "wrongref"), "sql/reference_rewrite_01.sql",
                  WRONG_PREDICATE)
    with engine.open(case) as database:
        report = validate_reference_pair(case, database.backend)
    assert not report.certified
    assert report.references[0].outcome == "unsafe_rewrite"
    assert report.references[0].consistent is False
    assert len(report.problems) == 1
    assert report.problems[0].startswith("sql/reference_rewrite_01.sql: unsafe_rewrite: ")


def test_a_failing_reference_and_a_failing_input_are_reported(engine: Engine,
                                                              tmp_path: Path) -> None:
    case = _write(engine.case(tmp_path, "badref"), "sql/reference_rewrite_01.sql",
                  "SELECT name, price FROM no_such_items ORDER BY name")
    with engine.open(case) as database:
        report = validate_reference_pair(case, database.backend)
        assert not report.certified
        assert report.references[0].outcome == "execution_failure"
        assert "no_such_items" in report.problems[0]

        broken = _write(case, "sql/benchmark_input.sql",
                        "SELECT name, price FROM missing_table ORDER BY name")
        report = validate_reference_pair(broken, database.backend)
        assert not report.certified
        assert report.references == []
        assert "case badref is broken: its input fails" in report.problems[0]
        with pytest.raises(DatasetError, match="case badref is broken"):
            run_method(broken, database.backend, _rewrite(REFERENCE), method_name="m",
                       caps=input_caps([broken]))


# --- method mode: every terminal outcome ---------------------------------------------------------

@pytest.mark.parametrize(("answer", "expected"), [
    (MethodAnswer(kind="source_acceptance_failure", message="cannot parse"),
     "source_acceptance_failure"),
    (MethodAnswer(kind="method_error", message="model timed out"), "generation_failure"),
    (MethodAnswer(kind="rewrite", sql="SELECT 1 AS a; SELECT 2 AS b"), "generation_failure"),
    (MethodAnswer(kind="rewrite", sql="-- only a comment"), "generation_failure"),
    (MethodAnswer(kind="no_rewrite", message="already optimal"), "no_rewrite"),
    (MethodAnswer(kind="rewrite", sql=REFORMATTED_INPUT), "no_op"),
    (MethodAnswer(kind="rewrite", sql="SELEC name FROM items"), "execution_failure"),
    (MethodAnswer(kind="rewrite", sql="SELECT name, price FROM no_such_items"),
     "execution_failure"),
    (MethodAnswer(kind="rewrite", sql=WRONG_PREDICATE), "unsafe_rewrite"),
    (MethodAnswer(kind="rewrite", sql="SELECT name FROM items WHERE price > 1 ORDER BY name"),
     "unsafe_rewrite"),
], ids=["source_acceptance", "method_error", "two_statements", "no_statement", "no_rewrite",
        "noop", "syntax_error", "missing_table", "wrong_predicate", "missing_column"])
def test_each_answer_gets_its_terminal_outcome(opened: Opened, answer: MethodAnswer,
                                               expected: str) -> None:
    outcome = opened.run(answer)
    assert outcome.outcome == expected, outcome.reason
    assert outcome.answer_kind == answer.kind
    assert outcome.rewrite_sql == answer.sql
    assert outcome.timing is None and outcome.cgoq is None
    assert outcome.consistent is (False if expected == "unsafe_rewrite" else None)
    assert outcome.scs_input == scs(opened.case.input_sql, opened.case.dialect, opened.caps).scs
    assert outcome.reason


def test_the_reference_rewrite_passes_the_gate_and_is_timed(opened: Opened) -> None:
    outcome = opened.run(_rewrite(REFERENCE))
    assert outcome.outcome in GATED_OUTCOMES
    assert outcome.consistent is True
    timing = outcome.timing
    assert timing is not None
    assert len(timing.input_runs) == 5 and len(timing.rewrite_runs) == 5
    assert timing.warmup == 1 and timing.timeouts == 0
    assert all(run > 0 for run in timing.input_runs + timing.rewrite_runs)
    # interleaved, the first query of each round alternating
    assert outcome.meta["timing_order"] == ["input", "rewrite", "rewrite", "input"] * 2 + \
        ["input", "rewrite"]
    # the grade follows from the recorded speedup and SCS, by the documented rule
    assert outcome.scs_input is not None and outcome.scs_rewrite is not None
    credit = simplification_credit(simplification_ratio(outcome.scs_input, outcome.scs_rewrite))
    assert outcome.meta["simplification_credit"] == credit > 0
    assert outcome.outcome == classify(timing.speedup, credit)
    assert outcome.cgoq == pytest.approx(
        cgoq(timing.speedup, outcome.scs_input, outcome.scs_rewrite, True))


def test_a_trailing_semicolon_is_not_a_second_statement(opened: Opened) -> None:
    outcome = opened.run(_rewrite(REFERENCE.rstrip() + ";\n"), warmup=0, runs=1)
    assert outcome.outcome in GATED_OUTCOMES, outcome.reason
    assert outcome.rewrite_sql == REFERENCE.rstrip() + ";\n"  # recorded as the method gave it


def test_evaluated_sql_leaves_the_database_as_it_was(opened: Opened) -> None:
    for statement in ("DROP TABLE items", "DELETE FROM items"):
        outcome = opened.run(_rewrite(statement))
        assert outcome.outcome == "execution_failure", outcome.reason
    # seen through a fresh read-only connection
    with connect(opened.database.url, **_read_options(opened)) as fresh:
        result = fresh.execute("SELECT count(*) FROM items")
    assert result.ok and result.rows == [(3,)]


def _read_options(opened: Opened) -> dict[str, Any]:
    return {"reader_role": opened.database.backend.reader_role} \
        if opened.database.engine == "postgres" else {}


def test_the_server_itself_refuses_writes(engine: Engine, opened: Opened) -> None:
    """With the statement screen off, the reader login alone keeps the database unchanged."""
    if engine.name not in ("postgres", "mysql"):
        pytest.skip("file engines have no statement screen to turn off")
    with connect(opened.database.url, screen=False, **_read_options(opened)) as unscreened:
        for statement in ("DROP TABLE items", "DELETE FROM items"):
            outcome = run_method(opened.case, unscreened, _rewrite(statement), method_name="m",
                                 caps=opened.caps)
            assert outcome.outcome == "execution_failure", outcome.reason
            assert "only queries may run" not in outcome.reason  # the screen's words
        assert unscreened.execute("SELECT count(*) FROM items").rows == [(3,)]


# --- the contract --------------------------------------------------------------------------------

def _result(columns: list[str], rows: list[tuple[Any, ...]],
            types: list[str] | None = None) -> Result:
    return Result(columns=columns, rows=rows, types=types or ["INTEGER"] * len(columns))


def _contract_case(tmp_path: Path, *, row_order: str = "auto", relative: float = 0,
                   absolute: float = 0, checks: str = "[]") -> RewriteCase:
    case_dir = scaffold_case(tmp_path, f"c{uuid.uuid4().hex[:6]}", engine="duckdb", pool="p")
    case_yaml = case_dir / "case.yaml"
    text = case_yaml.read_text(encoding="utf-8")
    text = text.replace("row_order: auto", f"row_order: {row_order}")
    # fixed-point: YAML reads 1e-09 (no dot) as text
    text = text.replace("relative: 0", f"relative: {relative:.12f}")
    text = text.replace("absolute: 0", f"absolute: {absolute:.12f}")
    text = text.replace("extra_checks: [same_column_names]", f"extra_checks: {checks}")
    case_yaml.write_text(text, encoding="utf-8")
    return load_case(case_dir)


def test_rows_compare_in_order_only_under_an_ordered_contract(tmp_path: Path) -> None:
    base = _result(["name", "price"], [("apple", 1), ("cherry", 4)])
    swapped = _result(["name", "price"], [("cherry", 4), ("apple", 1)])
    ordered = _contract_case(tmp_path)  # auto, and the input has ORDER BY name
    assert ordered.rows_ordered
    assert check_contract(ordered, base, base)[0]
    consistent, reason = check_contract(ordered, base, swapped)
    assert not consistent and "order" in reason
    bag = _contract_case(tmp_path, row_order="bag")
    assert not bag.rows_ordered
    assert check_contract(bag, base, swapped)[0]


def test_rows_tied_on_the_order_keys_may_come_in_any_order(tmp_path: Path) -> None:
    case = _contract_case(tmp_path)
    base = _result(["name", "price"], [("apple", 1), ("apple", 2), ("fig", 3)])
    ties_swapped = _result(["name", "price"], [("apple", 2), ("apple", 1), ("fig", 3)])
    assert check_contract(case, base, ties_swapped)[0]


def test_numbers_compare_exactly_unless_the_contract_gives_a_tolerance(tmp_path: Path) -> None:
    base = _result(["total"], [(1.0,)], ["DOUBLE"])
    near = _result(["total"], [(1.0 + 1e-12,)], ["DOUBLE"])
    assert not check_contract(_contract_case(tmp_path, row_order="bag"), base, near)[0]
    tolerant = _contract_case(tmp_path, row_order="bag", relative=1e-9)
    assert check_contract(tolerant, base, near)[0]
    far = _result(["total"], [(1.001,)], ["DOUBLE"])
    assert not check_contract(tolerant, base, far)[0]
    absolute = _contract_case(tmp_path, row_order="bag", absolute=0.01)
    assert check_contract(absolute, base, far)[0]


def test_columns_pair_by_position_and_must_be_as_many(tmp_path: Path) -> None:
    case = _contract_case(tmp_path, row_order="bag")
    base = _result(["a", "b"], [(1, 2)])
    assert check_contract(case, base, _result(["x", "y"], [(1, 2)]))[0]  # renamed: fine
    assert not check_contract(case, base, _result(["b", "a"], [(2, 1)]))[0]  # swapped
    assert not check_contract(case, base, _result(["a", "b", "c"], [(1, 2, 3)]))[0]  # extra
    text = _result(["a", "b"], [("1", "2")], ["VARCHAR", "VARCHAR"])
    assert not check_contract(case, base, text)[0]  # numbers as text are other values


@pytest.mark.parametrize(("check", "rewrite", "why"), [
    ("same_column_names", _result(["x", "b"], [(1, 2)]), "same_column_names"),
    ("same_column_types", _result(["a", "b"], [(1, 2)], ["BIGINT", "INTEGER"]),
     "same_column_types"),
    ("same_row_count", _result(["a", "b"], [(1, 2), (1, 2)]), "same_row_count"),
])
def test_extra_checks(tmp_path: Path, check: str, rewrite: Result, why: str) -> None:
    base = _result(["a", "b"], [(1, 2)])
    without = _contract_case(tmp_path, row_order="bag")
    with_check = _contract_case(tmp_path, row_order="bag", checks=f"[{check}]")
    assert check_contract(with_check, base, base)[0]
    consistent, reason = check_contract(with_check, base, rewrite)
    assert not consistent and reason.startswith(why)
    if check != "same_row_count":  # a bag of other size is a mismatch anyway
        assert check_contract(without, base, rewrite)[0]


def test_failed_and_truncated_results_are_inconsistent(tmp_path: Path) -> None:
    case = _contract_case(tmp_path, row_order="bag")
    base = _result(["a"], [(1,)])
    assert not check_contract(case, base, Result.failed("runtime", "boom"))[0]
    cut = _result(["a"], [(1,)])
    cut.truncated = True
    consistent, reason = check_contract(case, base, cut)
    assert not consistent and "row cap" in reason


def test_contract_policy_is_exact_by_default() -> None:
    policy = contract_policy(Contract(row_order="bag"))
    assert policy["numeric_tolerance"] is False
    assert contract_policy(Contract("bag", relative=1e-6))["rel_tol"] == 1e-6
    assert contract_policy(Contract("bag", relative=1e-6))["numeric_tolerance"] is True


# --- classification ------------------------------------------------------------------------------

def test_classification_rule() -> None:
    params = CgoqParams(delta=0.05)
    assert classify(1.05, 0.0, params) == "performance_gain"
    assert classify(3.0, 1.0, params) == "performance_gain"
    assert classify(1 / 1.05, 1.0, params) == "regression"
    assert classify(0.5, 0.0, params) == "regression"
    assert classify(1.0, 0.5, params) == "simplification_gain"
    assert classify(1.04, 0.0, params) == "neutral"
    assert classify(0.96, 0.0, params) == "neutral"


# --- the timing protocol -------------------------------------------------------------------------

@pytest.fixture
def duckdb_case(tmp_path: Path) -> Iterator[Opened]:
    case = load_case(scaffold_case(tmp_path, "timing", engine="duckdb", pool="p"))
    with open_database(case, cache_dir=tmp_path / "cache") as database:
        yield Opened(case, database, input_caps([case]))


def test_runs_are_interleaved_and_all_stored(duckdb_case: Opened) -> None:
    log: list[TimedRun] = []
    timing = time_pair(duckdb_case.database.backend, "SELECT 1 AS x", "SELECT 2 AS x",
                       warmup=2, runs=4, log=log)
    assert [(r.query, r.phase, r.round) for r in log] == [
        ("input", "warmup", 0), ("rewrite", "warmup", 0),
        ("rewrite", "warmup", 1), ("input", "warmup", 1),
        ("input", "measured", 0), ("rewrite", "measured", 0),
        ("rewrite", "measured", 1), ("input", "measured", 1),
        ("input", "measured", 2), ("rewrite", "measured", 2),
        ("rewrite", "measured", 3), ("input", "measured", 3)]
    assert measured_order(log) == ["input", "rewrite", "rewrite", "input"] * 2
    assert timing.input_runs == [r.seconds for r in log
                                 if r.phase == "measured" and r.query == "input"]
    assert timing.rewrite_runs == [r.seconds for r in log
                                   if r.phase == "measured" and r.query == "rewrite"]
    assert timing.warmup == 2 and timing.timeouts == 0


def test_a_run_that_times_out_counts_as_the_timeout(duckdb_case: Opened) -> None:
    endless = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
    log: list[TimedRun] = []
    timing = time_pair(duckdb_case.database.backend, endless, "SELECT 1 AS x", warmup=0, runs=2,
                       timeout=0.2, log=log)
    assert timing.input_runs == [0.2, 0.2]
    assert timing.timeouts == 2
    assert [r.timed_out for r in log] == [True, False, False, True]
    assert timing.speedup == pytest.approx(0.2 / timing.rewrite_median)


def test_a_failure_while_timing_is_an_error(duckdb_case: Opened) -> None:
    with pytest.raises(TimingError) as caught:
        time_pair(duckdb_case.database.backend, "SELECT 1", "SELECT * FROM no_such_table",
                  warmup=0, runs=1)
    assert caught.value.query == "rewrite"
    assert caught.value.result.error is not None


def test_the_timing_protocol_is_configurable_per_run(duckdb_case: Opened) -> None:
    outcome = duckdb_case.run(_rewrite(REFERENCE), warmup=0, runs=3)
    assert outcome.timing is not None
    assert outcome.timing.warmup == 0
    assert len(outcome.timing.input_runs) == len(outcome.timing.rewrite_runs) == 3
    assert outcome.meta["timing_order"] == ["input", "rewrite", "rewrite", "input", "input",
                                            "rewrite"]


def test_the_input_is_run_with_its_tie_evidence(duckdb_case: Opened) -> None:
    runs = run_input(duckdb_case.case, duckdb_case.database.backend)
    assert runs.result.rows == [("apple", Decimal("1.50")), ("cherry", Decimal("4.00"))]


# --- a pool ------------------------------------------------------------------------------------

def _pool(tmp_path: Path) -> list[RewriteCase]:
    cases = []
    for number, engine_name in enumerate(["duckdb", "sqlite", "duckdb", "sqlite"]):
        cases.append(load_case(scaffold_case(tmp_path / "cases", f"case-{number}",
                                             engine=engine_name, pool="pool")))
    return cases


def test_run_pool_keeps_every_case_in_the_denominator(tmp_path: Path) -> None:
    cases = _pool(tmp_path)
    seen: list[tuple[RewriteCase, str]] = []

    def method(case: RewriteCase, schema: str) -> MethodAnswer:
        seen.append((case, schema))
        if case.id == "case-0":
            return _rewrite(REFERENCE)
        if case.id == "case-1":
            raise RuntimeError("the model crashed")
        if case.id == "case-2":
            return "SELECT 1"  # type: ignore[return-value]
        return MethodAnswer(kind="no_rewrite")

    progress: list[tuple[int, int, str]] = []
    outcomes = run_pool(cases, method, method_name="mixed", cache_dir=tmp_path / "cache",
                        progress=lambda done, total, o: progress.append((done, total, o.case_id)))
    assert [o.case_id for o in outcomes] == [c.id for c in cases]
    assert [o.outcome for o in outcomes][1:] == ["generation_failure", "generation_failure",
                                                 "no_rewrite"]
    assert outcomes[0].outcome in GATED_OUTCOMES
    assert "RuntimeError: the model crashed" in outcomes[1].reason
    assert "not a MethodAnswer" in outcomes[2].reason
    assert [o.engine for o in outcomes] == ["duckdb", "sqlite", "duckdb", "sqlite"]
    assert all(o.method == "mixed" for o in outcomes)
    assert progress == [(1, 4, "case-0"), (2, 4, "case-1"), (3, 4, "case-2"), (4, 4, "case-3")]
    # methods see the input and the schema, never the reference or the opportunity
    for case, schema in seen:
        assert case.references == () and case.opportunity == ""
        assert case.input_sql == cases[0].input_sql
        assert "CREATE TABLE items" in schema and "INSERT" not in schema
    # SCS caps are fitted on every input of the pool
    caps = fit_caps([features(c.input_sql, c.dialect) for c in cases])
    for case, outcome in zip(cases, outcomes, strict=True):
        expected = scs(case.input_sql, case.dialect, caps).scs
        assert outcome.scs_input is not None and math.isclose(outcome.scs_input, expected)


def test_run_pool_stops_on_a_broken_case(tmp_path: Path) -> None:
    cases = _pool(tmp_path)
    broken = _write(cases[1], "sql/benchmark_input.sql", "SELECT name FROM gone ORDER BY name")
    asked: list[str] = []

    def method(case: RewriteCase, schema: str) -> MethodAnswer:
        asked.append(case.id)
        return MethodAnswer(kind="no_rewrite")

    with pytest.raises(DatasetError, match="case case-1 is broken"):
        run_pool([cases[0], broken], method, cache_dir=tmp_path / "cache")
    assert asked == ["case-0"]  # the broken case's method was never asked


def test_blinded_case_keeps_what_a_method_needs(tmp_path: Path) -> None:
    case = _pool(tmp_path)[0]
    seen = blinded(case)
    assert (seen.id, seen.input_sql, seen.dialect, seen.engine) == \
        (case.id, case.input_sql, case.dialect, case.engine)
    assert seen.references == () and seen.opportunity == "" and seen.description == ""
