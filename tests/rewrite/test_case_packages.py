"""Rewrite case packages: loading, validation messages, pools and the scaffolder.

Valid cases are written here by hand (not by the scaffolder) so the loader is checked against an
independent description of the format; the scaffolded skeleton is then run on real engines to show
its example rewrite returns the input's rows.
"""

from __future__ import annotations

import os
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
import yaml
from polysql_testkit.availability import require_client

from polysql.backends import catalog
from polysql.core.errors import ConfigError, DatasetError
from polysql.datasets.rewrite import cases as packages
from polysql.datasets.rewrite.cases import (
    KNOWN_CHECKS,
    ROW_ORDERS,
    CaseEngines,
    CaseValidationError,
    Contract,
    DatabaseRef,
    RewriteCase,
    has_outer_order_by,
    split_statements,
)
from polysql.rewrite.cases import installed_engines, load_case, load_pool
from polysql.rewrite.scaffold import scaffold_case

INPUT_SQL = """\
SELECT c.name, SUM(o.amount) AS total
FROM customers AS c
JOIN orders AS o ON o.customer_id = c.id
WHERE c.id IN (SELECT customer_id FROM orders)
GROUP BY c.name
ORDER BY c.name
"""
REFERENCE_SQL = """\
SELECT c.name, SUM(o.amount) AS total
FROM customers AS c
JOIN orders AS o ON o.customer_id = c.id
GROUP BY c.name
ORDER BY c.name
"""
REFERENCE_SQL_2 = """\
SELECT name, total
FROM customers AS c
JOIN (SELECT customer_id, SUM(amount) AS total FROM orders GROUP BY customer_id) AS t
  ON t.customer_id = c.id
ORDER BY name
"""
SETUP_SQL = """\
CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL, amount NUMERIC(8, 2));
INSERT INTO customers VALUES (1, 'ada'), (2, 'bob');
INSERT INTO orders VALUES (1, 1, 10.50), (2, 1, 2.25), (3, 2, 7.00);
"""
OPPORTUNITY = "The IN filter is implied by the inner join on orders, so it can be dropped.\n"


def case_yaml(case_id: str = "drop-implied-in", **overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": case_id,
        "pool": "postgres-core",
        "dialect": "postgres",
        "engine": "postgres",
        "description": "a semi-join implied by an inner join",
        "database": {"setup_sql": "schema/setup.sql"},
        "contract": {
            "row_order": "auto",
            "numeric_tolerance": {"relative": 1e-9, "absolute": 0.005},
            "extra_checks": ["same_column_names", "same_row_count"],
        },
        "provenance": {
            "author": "Jane Doe",
            "source": "https://example.org/q/42",
            "license": "CC-BY-4.0",
            "created": "2025-03-14",
        },
        "tags": ["semi-join", "redundant-filter"],
        "timeout": 12.5,
    }
    data.update(overrides)
    return data


def write_case(
    folder: Path, data: dict[str, Any] | None = None, *, files: dict[str, str | None] | None = None
) -> Path:
    """A valid case in ``folder`` (its name is the id); ``files`` replaces (or, with None, omits)
    files by relative path."""
    folder.mkdir(parents=True)
    contents: dict[str, str | None] = {
        "case.yaml": yaml.safe_dump(
            data if data is not None else case_yaml(folder.name), sort_keys=False
        ),
        "sql/benchmark_input.sql": INPUT_SQL,
        "sql/reference_rewrite_01.sql": REFERENCE_SQL,
        "schema/setup.sql": SETUP_SQL,
        "rewrite_opportunity.md": OPPORTUNITY,
    }
    contents.update(files or {})
    for relative, text in contents.items():
        if text is None:
            continue
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return folder


def problems_of(case_dir: Path) -> list[str]:
    with pytest.raises(CaseValidationError) as caught:
        load_case(case_dir)
    assert isinstance(caught.value, DatasetError)
    rendered = [problem.render() for problem in caught.value.problems]
    for line in rendered:  # the message lists every problem it carries
        assert line in str(caught.value)
    return rendered


# --- valid cases ---------------------------------------------------------------------------------


def test_a_valid_case_round_trips(tmp_path: Path) -> None:
    folder = write_case(
        tmp_path / "postgres-core" / "drop-implied-in",
        files={"sql/reference_rewrite_02.sql": REFERENCE_SQL_2},
    )
    case = load_case(folder)
    assert case == RewriteCase(
        id="drop-implied-in",
        pool="postgres-core",
        dialect="postgres",
        engine="postgres",
        path=folder,
        input_sql=INPUT_SQL,
        references=(REFERENCE_SQL, REFERENCE_SQL_2),
        database=DatabaseRef(kind="setup_sql", path=folder / "schema" / "setup.sql"),
        contract=Contract(
            row_order="auto",
            relative=1e-9,
            absolute=0.005,
            extra_checks=("same_column_names", "same_row_count"),
        ),
        provenance={
            "author": "Jane Doe",
            "source": "https://example.org/q/42",
            "license": "CC-BY-4.0",
            "created": "2025-03-14",
        },
        tags=("semi-join", "redundant-filter"),
        description="a semi-join implied by an inner join",
        timeout=12.5,
        opportunity=OPPORTUNITY,
        rows_ordered=True,
    )
    assert case.setup_statements() == tuple(line.rstrip(";") for line in SETUP_SQL.splitlines())


def test_optional_fields_take_their_defaults(tmp_path: Path) -> None:
    data = case_yaml("minimal", contract={"row_order": "bag"})
    for key in ("tags", "description", "timeout"):
        del data[key]
    data["provenance"]["created"] = "2024-01-02"
    case = load_case(write_case(tmp_path / "minimal", data))
    assert case.contract == Contract(row_order="bag", relative=0.0, absolute=0.0, extra_checks=())
    assert (case.tags, case.description, case.timeout, case.rows_ordered) == ((), "", 60.0, False)


def test_an_unquoted_yaml_date_is_kept_as_iso_text(tmp_path: Path) -> None:
    folder = write_case(tmp_path / "dated")
    text = (folder / "case.yaml").read_text().replace("'2025-03-14'", "2025-03-14")
    (folder / "case.yaml").write_text(text)
    assert "created: 2025-03-14\n" in text
    assert load_case(folder).provenance["created"] == "2025-03-14"


@pytest.mark.parametrize(
    ("input_sql", "row_order", "ordered"),
    [
        ("SELECT a FROM t ORDER BY a", "auto", True),
        ("SELECT a FROM (SELECT a FROM t ORDER BY a) AS s", "auto", False),
        ("SELECT a FROM t ORDER BY a", "bag", False),
    ],
)
def test_auto_row_order_follows_the_outermost_order_by(
    tmp_path: Path, input_sql: str, row_order: str, ordered: bool
) -> None:
    data = case_yaml("ordering", contract={"row_order": row_order})
    reference = "SELECT a FROM t ORDER BY a DESC" if ordered else "SELECT DISTINCT a FROM t"
    case = load_case(
        write_case(
            tmp_path / "ordering",
            data,
            files={"sql/benchmark_input.sql": input_sql, "sql/reference_rewrite_01.sql": reference},
        )
    )
    assert case.rows_ordered is ordered


def test_a_sqlite_file_and_a_dataset_are_database_references(tmp_path: Path) -> None:
    folder = write_case(
        tmp_path / "from-sqlite",
        case_yaml(
            "from-sqlite",
            dialect="sqlite",
            engine="sqlite",
            database={"sqlite": "schema/source.sqlite"},
        ),
        files={"schema/setup.sql": None},
    )
    (folder / "schema").mkdir()
    connection = sqlite3.connect(folder / "schema" / "source.sqlite")
    connection.executescript(SETUP_SQL)
    connection.close()
    assert load_case(folder).database == DatabaseRef(
        kind="sqlite", path=folder / "schema" / "source.sqlite"
    )
    assert load_case(folder).setup_statements() == ()

    demo = write_case(
        tmp_path / "from-demo",
        case_yaml(
            "from-demo",
            dialect="duckdb",
            engine="duckdb",
            database={"dataset": "demo", "db_id": "retail"},
        ),
        files={"schema/setup.sql": None},
    )
    assert load_case(demo).database == DatabaseRef(kind="dataset", dataset="demo", db_id="retail")


def test_an_engine_url_is_accepted_and_checked_against_the_dialect(tmp_path: Path) -> None:
    folder = write_case(
        tmp_path / "by-url", case_yaml("by-url", engine="postgresql://reader@db.example:5432/cases")
    )
    assert load_case(folder).engine == "postgresql://reader@db.example:5432/cases"
    wrong = write_case(
        tmp_path / "by-url-mysql", case_yaml("by-url-mysql", engine="mysql://root@127.0.0.1:3306/")
    )
    assert problems_of(wrong) == [
        "case.yaml: engine 'mysql://root@127.0.0.1:3306/' speaks the mysql dialect but dialect is "
        "'postgres'"
    ]


def test_datasets_check_a_case_only_against_the_engines_they_are_given(tmp_path: Path) -> None:
    # A made-up engine: the case format itself knows none, so any engine the caller names works.
    engines = CaseEngines(dialects=("tsql",), names=("warehouse",),
                          dialect_of=lambda engine: "tsql" if engine == "warehouse" else None)
    folder = write_case(tmp_path / "on-warehouse",
                        case_yaml("on-warehouse", engine="warehouse", dialect="tsql"))
    case = packages.load_case(folder, engines=engines)
    assert (case.engine, case.dialect) == ("warehouse", "tsql")
    postgres = write_case(tmp_path / "on-postgres", case_yaml("on-postgres"))
    with pytest.raises(CaseValidationError) as caught:
        packages.load_case(postgres, engines=engines)
    assert [problem.render() for problem in caught.value.problems] == [
        "case.yaml: dialect must be one of tsql, got 'postgres'",
        "case.yaml: engine 'postgres' is unknown (use one of warehouse, or an engine URL)",
    ]


def test_the_installed_engines_come_from_each_engines_info() -> None:
    engines = installed_engines()
    infos = catalog.infos()
    assert engines.dialects == tuple(sorted({info.dialect for info in infos}))
    for info in infos:
        for alias in info.aliases:
            assert alias in engines.names and engines.dialect_of(alias) == info.dialect
            assert engines.dialect_of(alias.upper()) == info.dialect
        for scheme in info.schemes:
            assert engines.dialect_of(f"{scheme}://user@host/db") == info.dialect
    assert engines.dialect_of("oracle") is None
    assert engines.dialect_of("oracle://user@host/db") is None
    assert engines.dialect_of("not a url ://") is None


# --- broken cases: one specific message each -----------------------------------------------------


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(data: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target = data
        for key in parents:
            target = target[key]
        if value is _DELETE:
            del target[last]
        else:
            target[last] = value

    return mutate


_DELETE = object()

YAML_CASES: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    (
        "bad row_order",
        _set("contract.row_order", "sorted"),
        "case.yaml: contract.row_order must be one of bag, ordered, auto, got 'sorted'",
    ),
    (
        "unknown top-level key",
        _set("contrat", {"row_order": "bag"}),
        "case.yaml: unknown key contrat; did you mean 'contract'?",
    ),
    (
        "unknown nested key",
        _set("contract.row_ordr", "bag"),
        "case.yaml: unknown key contract.row_ordr; did you mean 'row_order'?",
    ),
    (
        "unknown tolerance key",
        _set("contract.numeric_tolerance.relativ", 0.1),
        "case.yaml: unknown key contract.numeric_tolerance.relativ; did you mean 'relative'?",
    ),
    ("missing required key", _set("engine", _DELETE), "case.yaml: missing required key engine"),
    (
        "missing provenance key",
        _set("provenance.license", _DELETE),
        "case.yaml: missing required key provenance.license",
    ),
    (
        "negative tolerance",
        _set("contract.numeric_tolerance.absolute", -0.5),
        "case.yaml: contract.numeric_tolerance.absolute must not be negative, got -0.5",
    ),
    (
        "tolerance not a number",
        _set("contract.numeric_tolerance.relative", "tiny"),
        "case.yaml: contract.numeric_tolerance.relative must be a number, got 'tiny'",
    ),
    (
        "unknown check",
        _set("contract.extra_checks", ["same_column_name"]),
        "case.yaml: contract.extra_checks: unknown check 'same_column_name'; did you mean "
        "'same_column_names'?",
    ),
    (
        "unknown dialect",
        _set("dialect", "postgresql"),
        "case.yaml: dialect must be one of bigquery, clickhouse, duckdb, mysql, postgres, "
        "snowflake, spark, sqlite, got 'postgresql'; did you mean 'postgres'?",
    ),
    (
        "unknown engine",
        _set("engine", "postgers"),
        "case.yaml: engine 'postgers' is unknown; did you mean 'postgres'?",
    ),
    (
        "engine speaks another dialect",
        _set("engine", "mysql"),
        "case.yaml: engine 'mysql' speaks the mysql dialect but dialect is 'postgres'",
    ),
    (
        "id not matching the folder",
        _set("id", "drop-implied"),
        "case.yaml: id 'drop-implied' does not match the case folder name 'drop-implied-in'",
    ),
    (
        "id with capitals",
        _set("id", "Drop-Implied-In"),
        "case.yaml: id must use only a-z, 0-9, '_' and '-', got 'Drop-Implied-In'",
    ),
    (
        "two database kinds",
        _set("database.sqlite", "schema/source.sqlite"),
        "case.yaml: database must name exactly one of setup_sql, sqlite, dataset (given: setup_sql, "
        "sqlite)",
    ),
    (
        "database outside the case",
        _set("database.setup_sql", "../setup.sql"),
        "case.yaml: database.setup_sql must stay inside the case folder, got '../setup.sql'",
    ),
    (
        "missing database file",
        _set("database.setup_sql", "schema/seed.sql"),
        "schema/seed.sql: missing (named by case.yaml database.setup_sql)",
    ),
    (
        "unknown dataset",
        _set("database", {"dataset": "demoo", "db_id": "retail"}),
        "case.yaml: database.dataset 'demoo' is not a known dataset; did you mean 'demo'?",
    ),
    (
        "demo database that does not exist",
        _set("database", {"dataset": "demo", "db_id": "shop"}),
        "case.yaml: database.db_id: the demo dataset has one database, 'retail'; got 'shop'",
    ),
    (
        "source neither URL nor authored",
        _set("provenance.source", "stack overflow"),
        "case.yaml: provenance.source must be a URL (http/https) or 'authored', got 'stack overflow'",
    ),
    (
        "created not a date",
        _set("provenance.created", "last spring"),
        "case.yaml: provenance.created must be a date (YYYY-MM-DD), got 'last spring'",
    ),
    (
        "zero timeout",
        _set("timeout", 0),
        "case.yaml: timeout must be a positive number of seconds, got 0",
    ),
]


@pytest.mark.parametrize(
    ("mutate", "expected"), [pytest.param(m, e, id=name) for name, m, e in YAML_CASES]
)
def test_a_broken_field_gives_its_specific_message(
    tmp_path: Path, mutate: Callable[[dict[str, Any]], None], expected: str
) -> None:
    data = case_yaml()
    mutate(data)
    problems = problems_of(write_case(tmp_path / "drop-implied-in", data))
    assert any(problem.startswith(expected) for problem in problems), problems
    assert len(problems) == 1, problems


DUPLICATE_KEY_YAML = yaml.safe_dump(case_yaml(), sort_keys=False) + "pool: again\n"


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        pytest.param(
            {"sql/benchmark_input.sql": None},
            "sql/benchmark_input.sql: missing (the query to rewrite, one statement)",
            id="missing input",
        ),
        pytest.param(
            {"sql/reference_rewrite_01.sql": None},
            "sql/reference_rewrite_01.sql: missing (every case needs at least one reference "
            "rewrite)",
            id="missing reference",
        ),
        pytest.param(
            {"rewrite_opportunity.md": None},
            "rewrite_opportunity.md: missing (what the rewrite exploits, in a few sentences)",
            id="missing opportunity",
        ),
        pytest.param(
            {"case.yaml": None},
            "case.yaml: missing (every case needs its case.yaml)",
            id="missing case.yaml",
        ),
        pytest.param(
            {"rewrite_opportunity.md": "  \n"},
            "rewrite_opportunity.md: is empty",
            id="empty opportunity",
        ),
        pytest.param({"schema/setup.sql": ""}, "schema/setup.sql: is empty", id="empty setup"),
        pytest.param(
            {"sql/benchmark_input.sql": "SELECT 1;\nSELECT 2;\n"},
            "sql/benchmark_input.sql: must hold exactly one SQL statement, found 2",
            id="two statements in input",
        ),
        pytest.param(
            {"sql/benchmark_input.sql": "-- only a comment\n"},
            "sql/benchmark_input.sql: must hold exactly one SQL statement, found 0",
            id="no statement in input",
        ),
        pytest.param(
            {"sql/reference_rewrite_01.sql": "SELECT name\nFROM customers WHERE\n"},
            "sql/reference_rewrite_01.sql: does not parse as postgres: line 2, col 20: "
            "Required keyword: 'this' missing",
            id="unparseable reference",
        ),
        pytest.param(
            {"sql/reference_rewrite_01.sql": "SELECT 'unterminated\n"},
            "sql/reference_rewrite_01.sql: does not parse as postgres: Error tokenizing",
            id="untokenizable reference",
        ),
        pytest.param(
            {"schema/setup.sql": "CREATE TABLE t (a INT;\n"},
            "schema/setup.sql: does not parse as postgres: line 1, col 21: Expecting )",
            id="unparseable setup",
        ),
        pytest.param(
            {"sql/benchmark_input.sql": "DELETE FROM orders WHERE amount < 0"},
            "sql/benchmark_input.sql: must be a query (SELECT, WITH ... SELECT, UNION, ...), "
            "but sqlglot reads it as a DELETE statement",
            id="input not a query",
        ),
        pytest.param(
            {"sql/reference_rewrite_01.sql": INPUT_SQL},
            "sql/reference_rewrite_01.sql: is byte-identical to sql/benchmark_input.sql",
            id="reference identical to input",
        ),
        pytest.param(
            {"sql/reference_rewrite_01.sql": "-- same thing\n" + INPUT_SQL.lower()},
            "sql/reference_rewrite_01.sql: is the same query as sql/benchmark_input.sql once "
            "parsed",
            id="reference differing only in formatting",
        ),
        pytest.param(
            {"sql/reference_rewrite_02.sql": REFERENCE_SQL + "\n"},
            "sql/reference_rewrite_02.sql: is the same query as sql/reference_rewrite_01.sql",
            id="two identical references",
        ),
        pytest.param(
            {"sql/reference_rewrite_03.sql": REFERENCE_SQL_2},
            "sql/reference_rewrite_02.sql: missing: reference rewrites are numbered from 01 "
            "without gaps (found 01, 03)",
            id="gap in reference numbers",
        ),
        pytest.param(
            {"sql/referense_rewrite_02.sql": REFERENCE_SQL_2},
            "sql/referense_rewrite_02.sql: unexpected file in sql/; did you mean "
            "'reference_rewrite_01.sql'?",
            id="misspelt reference file",
        ),
        pytest.param(
            {"sql/reference_rewrite_01.sql": "SELECT c.name FROM customers AS c"},
            "sql/reference_rewrite_01.sql: has no outermost ORDER BY, but the contract "
            "compares rows in order",
            id="unordered reference of an ordered input",
        ),
        pytest.param(
            {"case.yaml": "id: drop-implied-in\npool: [unclosed\n"},
            "case.yaml: invalid YAML: line 3, column 1:",
            id="bad YAML",
        ),
        pytest.param(
            {"case.yaml": DUPLICATE_KEY_YAML},
            f"case.yaml: invalid YAML: line {DUPLICATE_KEY_YAML.count(chr(10))}, column 1: "
            "duplicate key 'pool' (first given on line 2)",
            id="duplicate YAML key",
        ),
        pytest.param(
            {"case.yaml": "- a list\n- not a mapping\n"},
            "case.yaml: must be a mapping of keys to values, got list",
            id="YAML not a mapping",
        ),
    ],
)
def test_a_broken_file_gives_its_specific_message(
    tmp_path: Path, files: dict[str, str | None], expected: str
) -> None:
    problems = problems_of(write_case(tmp_path / "drop-implied-in", files=files))
    assert any(problem.startswith(expected) for problem in problems), problems


def test_ordered_needs_an_order_by_in_the_input(tmp_path: Path) -> None:
    data = case_yaml(contract={"row_order": "ordered"})
    folder = write_case(
        tmp_path / "drop-implied-in",
        data,
        files={
            "sql/benchmark_input.sql": "SELECT name FROM customers WHERE id IN (SELECT 1)",
            "sql/reference_rewrite_01.sql": "SELECT name FROM customers WHERE id = 1",
        },
    )
    assert problems_of(folder) == [
        "case.yaml: contract.row_order is 'ordered' but the input has no outermost ORDER BY, so "
        "its row order is not defined; use bag or auto, or add ORDER BY to the input"
    ]


def test_every_problem_of_a_case_is_reported_at_once(tmp_path: Path) -> None:
    data = case_yaml(contract={"row_order": "sorted", "numeric_tolerance": {"relative": -1}})
    data["tgas"] = ["typo"]
    folder = write_case(
        tmp_path / "drop-implied-in",
        data,
        files={"sql/benchmark_input.sql": "SELECT 1; SELECT 2", "rewrite_opportunity.md": None},
    )
    assert sorted(problems_of(folder)) == sorted(
        [
            "case.yaml: unknown key tgas; did you mean 'tags'? (known: id, pool, dialect, engine, "
            "database, contract, provenance, tags, description, timeout)",
            "case.yaml: contract.row_order must be one of bag, ordered, auto, got 'sorted'; did you "
            "mean 'ordered'?",
            "case.yaml: contract.numeric_tolerance.relative must not be negative, got -1",
            "sql/benchmark_input.sql: must hold exactly one SQL statement, found 2",
            "rewrite_opportunity.md: missing (what the rewrite exploits, in a few sentences)",
        ]
    )


def test_without_a_readable_case_yaml_the_files_are_still_checked(tmp_path: Path) -> None:
    folder = write_case(
        tmp_path / "drop-implied-in",
        files={"case.yaml": "id: [\n", "sql/reference_rewrite_01.sql": None},
    )
    problems = problems_of(folder)
    assert [p.split(":")[0] for p in problems] == ["case.yaml", "sql/reference_rewrite_01.sql"]


def test_a_missing_folder_is_a_dataset_error(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="rewrite case folder not found"):
        load_case(tmp_path / "nowhere")


def test_strict_mode_rejects_todo_markers(tmp_path: Path) -> None:
    folder = write_case(
        tmp_path / "drop-implied-in", files={"rewrite_opportunity.md": "Intro.\nTODO: explain\n"}
    )
    assert load_case(folder).opportunity == "Intro.\nTODO: explain\n"
    with pytest.raises(CaseValidationError) as caught:
        load_case(folder, strict=True)
    assert [p.render() for p in caught.value.problems] == [
        "rewrite_opportunity.md: still has TODO markers (line 2)"
    ]


# --- pools ---------------------------------------------------------------------------------------


def test_load_pool_finds_every_case_sorted(tmp_path: Path) -> None:
    for pool, case_id in [
        ("postgres-core", "b-case"),
        ("duckdb-core", "z-case"),
        ("postgres-core", "a-case"),
    ]:
        write_case(
            tmp_path / pool / case_id,
            case_yaml(
                case_id,
                pool=pool,
                dialect="duckdb" if pool == "duckdb-core" else "postgres",
                engine=pool.split("-")[0],
            ),
        )
    cases = load_pool(tmp_path)
    assert [(case.pool, case.id) for case in cases] == [
        ("duckdb-core", "z-case"),
        ("postgres-core", "a-case"),
        ("postgres-core", "b-case"),
    ]


def test_load_pool_gathers_the_problems_of_every_broken_case(tmp_path: Path) -> None:
    write_case(tmp_path / "postgres-core" / "fine")
    write_case(
        tmp_path / "postgres-core" / "bad-order",
        case_yaml("bad-order", contract={"row_order": "sorted"}),
    )
    write_case(
        tmp_path / "postgres-core" / "two-inputs",
        files={"sql/benchmark_input.sql": "SELECT 1; SELECT 2"},
    )
    with pytest.raises(DatasetError) as caught:
        load_pool(tmp_path)
    error = caught.value
    assert isinstance(error, CaseValidationError)
    assert str(error).splitlines() == [
        f"2 problem(s) in 2 of 3 rewrite case(s) under {tmp_path}:",
        "  - postgres-core/bad-order/case.yaml: contract.row_order must be one of bag, ordered, "
        "auto, got 'sorted'; did you mean 'ordered'?",
        "  - postgres-core/two-inputs/sql/benchmark_input.sql: must hold exactly one SQL "
        "statement, found 2",
    ]
    assert {problem.case_dir.name for problem in error.problems} == {"bad-order", "two-inputs"}


def test_load_pool_checks_pool_folders_and_unique_ids(tmp_path: Path) -> None:
    write_case(tmp_path / "postgres-core" / "same", case_yaml("same"))
    write_case(tmp_path / "postgres-extra" / "same", case_yaml("same", pool="postgres-extra"))
    write_case(tmp_path / "postgres-extra" / "elsewhere", case_yaml("elsewhere"))
    with pytest.raises(CaseValidationError) as caught:
        load_pool(tmp_path)
    assert [problem.render(tmp_path) for problem in caught.value.problems] == [
        "postgres-extra/elsewhere/case.yaml: pool 'postgres-core' does not match the pool folder "
        "'postgres-extra'",
        "postgres-extra/same/case.yaml: id 'same' is also used by postgres-core/same; ids must "
        "be unique",
    ]


def test_load_pool_reports_a_case_folder_without_case_yaml(tmp_path: Path) -> None:
    write_case(tmp_path / "postgres-core" / "orphan", files={"case.yaml": None})
    with pytest.raises(CaseValidationError, match=r"postgres-core/orphan/case.yaml: missing"):
        load_pool(tmp_path)


def test_load_pool_of_an_empty_or_missing_root(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="no rewrite cases under"):
        load_pool(tmp_path)
    with pytest.raises(DatasetError, match="rewrite case root not found"):
        load_pool(tmp_path / "missing")


# --- scaffolding ---------------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ["postgres", "mysql", "duckdb", "spark"])
def test_a_scaffolded_case_loads(tmp_path: Path, engine: str) -> None:
    folder = scaffold_case(tmp_path, "my-case", engine=engine, dialect=None, pool=f"{engine}-core")
    assert folder == tmp_path / f"{engine}-core" / "my-case"
    case = load_case(folder)
    expected_dialect = "postgres" if engine == "postgres" else engine
    assert (case.id, case.pool, case.engine, case.dialect) == (
        "my-case",
        f"{engine}-core",
        engine,
        expected_dialect,
    )
    assert case.database.kind == "setup_sql" and case.rows_ordered
    assert case.contract.row_order in ROW_ORDERS
    assert set(case.contract.extra_checks) <= set(KNOWN_CHECKS)
    assert len(case.setup_statements()) == 2 and len(case.references) == 1
    assert "TODO" in case.opportunity
    assert load_pool(tmp_path) == [case]
    with pytest.raises(CaseValidationError) as caught:
        load_case(folder, strict=True)
    assert {problem.file for problem in caught.value.problems} == {
        "case.yaml",
        "rewrite_opportunity.md",
        "schema/setup.sql",
        "sql/benchmark_input.sql",
        "sql/reference_rewrite_01.sql",
    }


@pytest.mark.parametrize("info", catalog.infos(), ids=lambda info: info.name)
def test_every_engine_scaffolds_a_case_in_its_own_ddl(tmp_path: Path, info: Any) -> None:
    folder = scaffold_case(tmp_path, "c", engine=info.name, pool="p")
    setup = (folder / "schema" / "setup.sql").read_text(encoding="utf-8")
    assert info.setup_template in setup
    case = load_case(folder)  # parses as the engine's dialect
    assert (case.engine, case.dialect) == (info.name, info.dialect)
    (table,) = split_statements(info.setup_template, info.dialect)
    assert len(case.setup_statements()) == 2 and case.setup_statements()[0].endswith(table)


def test_scaffold_refuses_bad_arguments_and_existing_cases(tmp_path: Path) -> None:
    scaffold_case(tmp_path, "taken", engine="duckdb", dialect="duckdb", pool="duckdb-core")
    with pytest.raises(ConfigError, match="already exists"):
        scaffold_case(tmp_path, "taken", engine="duckdb", dialect="duckdb", pool="duckdb-core")
    with pytest.raises(ConfigError, match="case id must use only"):
        scaffold_case(tmp_path, "Bad Id", engine="duckdb", dialect="duckdb", pool="duckdb-core")
    with pytest.raises(ConfigError, match="speaks the duckdb dialect, not 'mysql'"):
        scaffold_case(tmp_path, "mixed", engine="duckdb", dialect="mysql", pool="duckdb-core")
    with pytest.raises(ConfigError, match="unknown engine 'oracle'"):
        scaffold_case(tmp_path, "other", engine="oracle", dialect="postgres", pool="core")
    assert sorted(p.name for p in (tmp_path / "duckdb-core").iterdir()) == ["taken"]


def _rows_in_process(engine: str, case: RewriteCase) -> list[list[tuple[Any, ...]]]:
    """Run the setup, then the input and each reference, on an in-process engine."""
    connection: Any = duckdb.connect() if engine == "duckdb" else sqlite3.connect(":memory:")
    try:
        for statement in case.setup_statements():
            connection.execute(statement)
        return [connection.execute(sql).fetchall() for sql in (case.input_sql, *case.references)]
    finally:
        connection.close()


def _required(engine: str) -> bool:
    wanted = os.environ.get("POLYSQL_REQUIRE", "")
    return engine in {name.strip().lower() for name in wanted.split(",")}


def _unreachable(engine: str, error: Exception) -> None:
    if _required(engine):
        raise error
    pytest.skip(f"{engine} server not reachable: {error}")


@pytest.fixture
def postgres_rows() -> Iterator[Callable[[RewriteCase], list[list[tuple[Any, ...]]]]]:
    require_client("postgres")
    import psycopg
    from sqlalchemy.engine import make_url

    url = make_url(os.environ.get("POLYSQL_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/"))
    try:
        connection = psycopg.connect(
            host=url.host or "127.0.0.1",
            port=url.port or 5432,
            user=url.username or "postgres",
            password=url.password,
            dbname=url.database or "postgres",
            autocommit=True,
            connect_timeout=5,
        )
    except psycopg.OperationalError as error:
        _unreachable("postgres", error)
    schema = f"rewrite_case_{uuid.uuid4().hex[:12]}"

    def run(case: RewriteCase) -> list[list[tuple[Any, ...]]]:
        connection.execute(f"CREATE SCHEMA {schema}")
        connection.execute(f"SET search_path TO {schema}")
        for statement in case.setup_statements():
            connection.execute(statement)
        return [connection.execute(sql).fetchall() for sql in (case.input_sql, *case.references)]

    try:
        yield run
    finally:
        connection.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        connection.close()


@pytest.fixture
def mysql_rows() -> Iterator[Callable[[RewriteCase], list[list[tuple[Any, ...]]]]]:
    require_client("mysql")
    import pymysql
    from sqlalchemy.engine import make_url

    url = make_url(os.environ.get("POLYSQL_MYSQL_URL", "mysql://root@127.0.0.1:3306/"))
    try:
        connection = pymysql.connect(
            host=url.host or "127.0.0.1",
            port=url.port or 3306,
            user=url.username or "root",
            password=url.password or "",
            autocommit=True,
            connect_timeout=5,
        )
    except pymysql.err.OperationalError as error:
        _unreachable("mysql", error)
    database = f"rewrite_case_{uuid.uuid4().hex[:12]}"

    def run(case: RewriteCase) -> list[list[tuple[Any, ...]]]:
        with connection.cursor() as cursor:
            cursor.execute(f"CREATE DATABASE {database}")
            cursor.execute(f"USE {database}")
            for statement in case.setup_statements():
                cursor.execute(statement)
            results = []
            for sql in (case.input_sql, *case.references):
                cursor.execute(sql)
                results.append(list(cursor.fetchall()))
            return results

    try:
        yield run
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS {database}")
        connection.close()


@pytest.mark.parametrize("engine", ["duckdb", "sqlite"])
def test_the_scaffolded_example_rewrite_returns_the_input_rows(tmp_path: Path, engine: str) -> None:
    case = load_case(scaffold_case(tmp_path, "example", engine=engine, pool="core"))
    input_rows, reference_rows = _rows_in_process(engine, case)
    assert [(name, float(price)) for name, price in input_rows] == [("apple", 1.5), ("cherry", 4.0)]
    assert reference_rows == input_rows


def test_the_scaffolded_example_runs_on_postgres(
    tmp_path: Path, postgres_rows: Callable[[RewriteCase], list[list[tuple[Any, ...]]]]
) -> None:
    case = load_case(scaffold_case(tmp_path, "example", engine="postgres", pool="core"))
    input_rows, reference_rows = postgres_rows(case)
    assert [(name, float(price)) for name, price in input_rows] == [("apple", 1.5), ("cherry", 4.0)]
    assert reference_rows == input_rows


def test_the_scaffolded_example_runs_on_mysql(
    tmp_path: Path, mysql_rows: Callable[[RewriteCase], list[list[tuple[Any, ...]]]]
) -> None:
    case = load_case(scaffold_case(tmp_path, "example", engine="mysql", pool="core"))
    input_rows, reference_rows = mysql_rows(case)
    assert [(name, float(price)) for name, price in input_rows] == [("apple", 1.5), ("cherry", 4.0)]
    assert reference_rows == input_rows


# --- SQL helpers ---------------------------------------------------------------------------------


def test_split_statements_keeps_the_text_and_respects_quotes() -> None:
    script = (
        '-- header\nCREATE TABLE "a;b" (x TEXT);\n'
        "INSERT INTO \"a;b\" VALUES ('1;2');;\n-- trailing comment\n"
    )
    assert split_statements(script, "postgres") == (
        '-- header\nCREATE TABLE "a;b" (x TEXT)',
        "INSERT INTO \"a;b\" VALUES ('1;2')",
    )
    # Each piece is run as written by sqlite3 and holds what the script put in
    connection = sqlite3.connect(":memory:")
    for statement in split_statements(script, "sqlite"):
        connection.execute(statement)
    assert connection.execute('SELECT x FROM "a;b"').fetchall() == [("1;2",)]
    connection.close()


@pytest.mark.parametrize(
    ("sql", "ordered"),
    [
        ("SELECT a FROM t ORDER BY a", True),
        ("WITH s AS (SELECT a FROM t ORDER BY a) SELECT a FROM s", False),
        ("SELECT a FROM t UNION ALL SELECT b FROM u ORDER BY 1", True),
        ("(SELECT a FROM t) ORDER BY a", True),
        ("(SELECT a FROM t ORDER BY a)", True),
        ("SELECT a FROM (SELECT a FROM t ORDER BY a) AS s", False),
        ("SELECT a FROM t", False),
    ],
)
def test_has_outer_order_by(sql: str, ordered: bool) -> None:
    assert has_outer_order_by(sql, "postgres") is ordered
