"""The bundled rewrite pools (datasets/rewrite/pools): every case loads strictly, and on its
declared engine, in a fresh scratch database built from its schema/setup.sql, the input and every
reference rewrite return consistent results under the case's contract.

Each engine is driven through its native driver (duckdb, psycopg, PyMySQL, pyspark) and results
are compared twice: with ``polysql.compare`` under the case's contract, and with a plain row-by-row
check written here, which is stricter (same values of the same Python types, as a multiset, or in
exact order where the input orders its rows, whose ORDER BY keys are unique in every bundled case)
so a lenient comparison rule cannot hide a wrong reference. PostgreSQL and MariaDB/MySQL
are the local servers of tests/_lib/polysql_testkit, Spark an embedded session in this process;
when one is unreachable its cases skip, unless POLYSQL_REQUIRE names the engine.
"""

from __future__ import annotations

import math
import tempfile
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import Any

import duckdb
import pytest
import sqlglot
import yaml

import polysql
from polysql.analysis.rewrite.noop import is_noop
from polysql.datasets.rewrite.cases import BUNDLED_ROOT, CASE_FILE, RewriteCase
from polysql.rewrite.cases import load_pool

POOLS_ROOT = BUNDLED_ROOT  # datasets/rewrite/pools, what `polysql rewrite` uses by default
# pool -> (engine, dialect) every case of the pool declares
POOLS: dict[str, tuple[str, str]] = {
    "postgres-core": ("postgres", "postgres"),
    "mysql-core": ("mysql", "mysql"),
    "duckdb-core": ("duckdb", "duckdb"),
    "spark-core": ("spark", "spark"),
}
MIN_CASES_PER_POOL = 8
# the engines this test builds scratch databases on
ENGINES = ("duckdb", "postgres", "mysql", "spark")
PROVENANCE = {"author": "polysql maintainers", "source": "authored", "license": "MIT",
              "created": "2026-12-03"}

# Runs one SQL statement in the case's scratch database and returns what it produced.
Runner = Callable[[str], polysql.Result]


def _case_dirs() -> list[Path]:
    return sorted(path.parent for path in POOLS_ROOT.glob(f"*/*/{CASE_FILE}"))


def _declared_engine(case_dir: Path) -> str:
    """The engine case.yaml names, read without validation, to mark the test at collection."""
    data = yaml.safe_load((case_dir / CASE_FILE).read_text(encoding="utf-8"))
    return str(data.get("engine", "unknown")) if isinstance(data, dict) else "unknown"


def _case_params(*, engine_marks: bool) -> list[Any]:
    """One param per case folder, ``pool/case`` as its id; with ``engine_marks``, marked with its
    engine (``pytest -m postgres`` runs the PostgreSQL cases)."""
    params = []
    for case_dir in _case_dirs():
        engine = _declared_engine(case_dir)
        marks = [getattr(pytest.mark, engine)] if engine_marks and engine in ENGINES else []
        params.append(pytest.param(case_dir, marks=marks,
                                   id=f"{case_dir.parent.name}/{case_dir.name}"))
    return params


@cache
def _cases() -> dict[Path, RewriteCase]:
    return {case.path: case for case in load_pool(POOLS_ROOT, strict=True)}


def _case(case_dir: Path) -> RewriteCase:
    return _cases()[case_dir.absolute()]


# --- the pools as a whole ------------------------------------------------------------------------

def test_every_bundled_case_loads_strictly() -> None:
    cases = load_pool(POOLS_ROOT, strict=True)  # raises listing every problem, TODOs included
    assert len(cases) == len(_case_dirs())


def test_each_pool_has_enough_cases_on_its_engine() -> None:
    by_pool: dict[str, list[RewriteCase]] = {}
    for case in _cases().values():
        by_pool.setdefault(case.pool, []).append(case)
    assert set(POOLS) <= set(by_pool), f"missing pools: {set(POOLS) - set(by_pool)}"
    for pool, (engine, dialect) in POOLS.items():
        assert len(by_pool[pool]) >= MIN_CASES_PER_POOL, pool
        assert {(case.engine, case.dialect) for case in by_pool[pool]} == {(engine, dialect)}, pool


def test_bundled_cases_are_authored_and_self_contained() -> None:
    for case in _cases().values():
        assert {key: case.provenance.get(key) for key in PROVENANCE} == PROVENANCE, case.id
        assert case.database.kind == "setup_sql", case.id
        assert case.opportunity.startswith(f"# {case.id}\n"), case.id


# --- each case: not a no-op, and consistent on its engine ---------------------------------------

@pytest.mark.parametrize("case_dir", _case_params(engine_marks=False))
def test_each_reference_really_rewrites_the_input(case_dir: Path) -> None:
    case = _case(case_dir)
    canonical = sqlglot.parse_one(case.input_sql, read=case.dialect).sql(
        dialect=case.dialect, comments=False)
    for number, reference in enumerate(case.references, 1):
        assert not is_noop(case.input_sql, reference, case.dialect), f"reference {number:02d}"
        assert sqlglot.parse_one(reference, read=case.dialect).sql(
            dialect=case.dialect, comments=False) != canonical, f"reference {number:02d}"


@pytest.mark.parametrize("case_dir", _case_params(engine_marks=True))
def test_references_match_the_input_on_the_declared_engine(case_dir: Path) -> None:
    case = _case(case_dir)
    assert case.engine in ENGINES, f"no scratch database for engine {case.engine!r} here"
    with SCRATCH[case.engine](case) as run:
        for statement in case.setup_statements():
            run(statement)
        expected = run(case.input_sql)
        assert expected.rows, "the input returns no rows: the case proves nothing"
        for number, reference in enumerate(case.references, 1):
            got = run(reference)
            label = f"reference {number:02d}"
            verdict = polysql.compare(expected, got, gold_sql=case.input_sql,
                                      ordered=case.rows_ordered or None, dialect=case.dialect,
                                      **_tolerance(case))
            assert verdict.match, f"{label}: {verdict.reason}"
            if "same_column_names" in case.contract.extra_checks:
                assert got.columns == expected.columns, label
            assert len(got.rows) == len(expected.rows), label
            _assert_same_rows(expected.rows, got.rows, ordered=case.rows_ordered,
                              relative=case.contract.relative, absolute=case.contract.absolute,
                              label=label)


def _tolerance(case: RewriteCase) -> dict[str, Any]:
    """The contract's numeric tolerance as compare() options: exact unless one is declared."""
    contract = case.contract
    if contract.relative == 0 and contract.absolute == 0:
        return {"numeric_tolerance": False}
    return {"rel_tol": contract.relative, "abs_tol": contract.absolute}


# --- an independent, strict row comparison -------------------------------------------------------

def _is_number(value: Any) -> bool:
    return isinstance(value, int | float | Decimal) and not isinstance(value, bool)


def _sort_key(row: Sequence[Any], tolerant: bool) -> tuple[tuple[int, str], ...]:
    """Equal rows get equal keys (1.50 and 1.5 alike); floats compared with a tolerance are left
    out of the key, so such rows must differ in another column to line up."""
    parts = []
    for value in row:
        if value is None:
            parts.append((0, ""))
        elif isinstance(value, float) and tolerant:
            parts.append((1, ""))
        elif _is_number(value):
            parts.append((2, format(Decimal(value).normalize(), "f")))
        else:
            parts.append((3, f"{type(value).__name__}:{value!r}"))
    return tuple(parts)


def _values_equal(left: Any, right: Any, relative: float, absolute: float) -> bool:
    if (relative or absolute) and _is_number(left) and _is_number(right) \
            and (isinstance(left, float) or isinstance(right, float)):
        return math.isclose(float(left), float(right), rel_tol=relative, abs_tol=absolute)
    return left == right and type(left) is type(right)


def _assert_same_rows(expected: list[tuple[Any, ...]], got: list[tuple[Any, ...]], *,
                      ordered: bool, relative: float, absolute: float, label: str) -> None:
    tolerant = bool(relative or absolute)
    if not ordered:
        expected = sorted(expected, key=lambda row: _sort_key(row, tolerant))
        got = sorted(got, key=lambda row: _sort_key(row, tolerant))
    for index, (want, have) in enumerate(zip(expected, got, strict=True)):
        assert len(want) == len(have) and all(
            _values_equal(a, b, relative, absolute) for a, b in zip(want, have, strict=True)
        ), f"{label}: row {index} differs: {want!r} != {have!r}"


def test_the_strict_row_check_catches_what_it_should() -> None:
    rows = [(1, Decimal("1.50"), "a"), (2, None, "b")]
    _assert_same_rows(rows, [(2, None, "b"), (1, Decimal("1.5"), "a")], ordered=False,
                      relative=0, absolute=0, label="bag")
    with pytest.raises(AssertionError, match="row 0 differs"):
        _assert_same_rows(rows, rows[::-1], ordered=True, relative=0, absolute=0, label="order")
    with pytest.raises(AssertionError, match="differs"):
        _assert_same_rows([(1, 2.0)], [(1, 2.0 + 1e-6)], ordered=True, relative=1e-9,
                          absolute=0, label="tolerance")
    _assert_same_rows([(1, 2.0)], [(1, 2.0 + 1e-12)], ordered=True, relative=1e-9, absolute=0,
                      label="tolerance")
    with pytest.raises(AssertionError, match="differs"):  # 1 and 1.0 are not the same value type
        _assert_same_rows([(1,)], [(1.0,)], ordered=True, relative=0, absolute=0, label="type")


# --- scratch databases, one per case -------------------------------------------------------------

def _result(description: Sequence[Any] | None, rows: Sequence[Sequence[Any]]) -> polysql.Result:
    columns = [str(column[0]) for column in description or ()]
    return polysql.Result(columns=columns, rows=[tuple(row) for row in rows])


@contextmanager
def _duckdb_scratch(case: RewriteCase) -> Iterator[Runner]:
    """A fresh in-memory DuckDB database, discarded on exit."""
    connection = duckdb.connect()
    connection.execute("SET enable_progress_bar = false")  # long inputs would draw one

    def run(sql: str) -> polysql.Result:
        cursor = connection.execute(sql)
        return _result(cursor.description, cursor.fetchall() if cursor.description else [])

    try:
        yield run
    finally:
        connection.close()


@contextmanager
def _postgres_scratch(case: RewriteCase) -> Iterator[Runner]:
    """A fresh database on the local PostgreSQL server, dropped on exit."""
    from polysql_testkit import pg_fixtures

    url = pg_fixtures.server_url()  # skips (or fails under POLYSQL_REQUIRE) when unreachable
    name = pg_fixtures.unique("polysql_rewrite_pool")
    with pg_fixtures.admin_connection(url, url.database or "postgres") as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        try:
            with pg_fixtures.admin_connection(url, name) as connection:
                connection.execute(f"SET statement_timeout = {int(case.timeout * 1000)}")

                def run(sql: str) -> polysql.Result:
                    cursor = connection.execute(sql)
                    rows = cursor.fetchall() if cursor.description else []
                    return _result(cursor.description, rows)

                yield run
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def _mysql_scratch(case: RewriteCase) -> Iterator[Runner]:
    """A fresh database on the local MariaDB/MySQL server, dropped on exit."""
    import pymysql
    from polysql_testkit import mysql_fixtures

    url = mysql_fixtures.server_url()  # skips (or fails under POLYSQL_REQUIRE) when unreachable
    name = mysql_fixtures.unique("polysql_rewrite_pool")
    admin = mysql_fixtures.admin_connection(url)
    try:
        with admin.cursor() as admin_cursor:
            admin_cursor.execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4")
        try:
            connection = mysql_fixtures.admin_connection(url, name)
            try:
                with connection.cursor() as cursor:
                    try:  # MariaDB bounds every statement, in seconds; MySQL SELECTs, in ms
                        cursor.execute(f"SET SESSION max_statement_time = {case.timeout:g}")
                    except pymysql.MySQLError:
                        cursor.execute(
                            f"SET SESSION max_execution_time = {int(case.timeout * 1000)}")

                    def run(sql: str) -> polysql.Result:
                        cursor.execute(sql)
                        rows = cursor.fetchall() if cursor.description else []
                        return _result(cursor.description, rows)

                    yield run
            finally:
                connection.close()
        finally:
            with admin.cursor() as admin_cursor:
                admin_cursor.execute(f"DROP DATABASE IF EXISTS `{name}`")
    finally:
        admin.close()


@cache
def _spark_warehouse() -> Path:
    """One folder for the process: the Spark driver keeps its scratch space under the first
    warehouse it is started with, so that folder must outlive every case."""
    return Path(tempfile.mkdtemp(prefix="polysql-rewrite-pool-spark-"))


@contextmanager
def _spark_scratch(case: RewriteCase) -> Iterator[Runner]:
    """A fresh database in the process's embedded Spark session, dropped (with its tables'
    files) on exit."""
    from polysql_testkit import availability

    from polysql.core.errors import EngineUnavailableError

    spark_backend = availability.require_client("spark")
    warehouse = _spark_warehouse()
    try:
        backend = spark_backend.connect(f"spark://local[2]/?warehouse={warehouse}",
                                        read_only=False)
    except EngineUnavailableError as exc:
        availability.unavailable("spark", f"no embedded Spark session: {exc}")
    session = backend.session
    name = f"polysql_rewrite_pool_{uuid.uuid4().hex[:12]}"
    session.sql(f"CREATE DATABASE {name} LOCATION '{warehouse / name}.db'")
    try:
        session.catalog.setCurrentDatabase(name)

        def run(sql: str) -> polysql.Result:
            frame = session.sql(sql)
            return _result([(column,) for column in frame.columns], frame.collect())

        yield run
    finally:
        session.sql(f"DROP DATABASE IF EXISTS {name} CASCADE")
        backend.close()


SCRATCH: dict[str, Callable[[RewriteCase], AbstractContextManager[Runner]]] = {
    "duckdb": _duckdb_scratch, "postgres": _postgres_scratch, "mysql": _mysql_scratch,
    "spark": _spark_scratch,
}


def test_every_pool_engine_has_a_scratch_database() -> None:
    assert {engine for engine, _ in POOLS.values()} <= set(SCRATCH) == set(ENGINES)
