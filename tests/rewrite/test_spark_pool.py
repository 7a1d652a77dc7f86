"""The spark-core rewrite pool on an embedded Spark session, and the Spark setup-script runner
that builds its databases.

Every spark-core case builds from its schema/setup.sql into a Parquet + manifest database of the
warehouse (its certification runs with the other pools in test_bundled_certification.py). The
runner itself is checked on a scaffolded case: it builds once per script text,
rebuilds when the text changes, keeps the script's views, and refuses statements that would
reach files or other databases. Spark runs in this process (``spark://local[2]``); without
pyspark or a Java runtime the tests skip, unless POLYSQL_REQUIRE lists spark.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import NoReturn

import pytest
from polysql_testkit import availability

from polysql.backends.base import Backend
from polysql.core.errors import EngineUnavailableError, LoadError
from polysql.datasets.rewrite.cases import RewriteCase
from polysql.engines.copies import EvaluationCopy
from polysql.engines.registry import backend_class
from polysql.rewrite.cases import BUNDLED_ROOT, load_case, load_pool
from polysql.rewrite.databases import open_database
from polysql.rewrite.harness import input_caps
from polysql.rewrite.scaffold import scaffold_case

pytestmark = pytest.mark.spark

POOL = "spark-core"
ALL_CASES = load_pool(BUNDLED_ROOT)
CASES = [case for case in ALL_CASES if case.pool == POOL]
CAPS = input_caps(ALL_CASES)  # the frozen input corpus: every bundled case's input
PROVENANCE = {"author": "polysql maintainers", "source": "authored", "license": "MIT",
              "created": "2026-12-03"}
# The scaffolded case's rows, written out independently of its setup script.
SCAFFOLD_ROWS = [(1, "apple", Decimal("1.50")), (2, "banana", Decimal("0.25")),
                 (3, "cherry", Decimal("4.00"))]


def _unavailable(reason: str) -> NoReturn:
    availability.unavailable("spark", reason)


def _missing_runtime() -> str | None:
    problem = availability.client_problem("spark")
    if problem is not None:
        return problem
    java_home = os.environ.get("JAVA_HOME")
    bundled_java = java_home is not None and (Path(java_home) / "bin" / "java").exists()
    if shutil.which("java") is None and not bundled_java:
        return "no Java runtime (java on PATH or JAVA_HOME)"
    return None


@pytest.fixture(autouse=True)
def _spark_runtime() -> None:
    missing = _missing_runtime()
    if missing is not None:
        _unavailable(missing)


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # The folder test_bundled_certification points POLYSQL_CACHE at: a case built by either
    # module is reused by the other.
    return tmp_path_factory.getbasetemp() / "rewrite-cache"


def _open(case: RewriteCase, cache_dir: Path) -> EvaluationCopy:
    try:
        return open_database(case, cache_dir=cache_dir)
    except EngineUnavailableError as exc:
        _unavailable(str(exc))


def _manifest_fingerprint(database: EvaluationCopy) -> str | None:
    """The fingerprint the warehouse's manifest records, read from the manifest file itself."""
    import json

    warehouse = Path(str(database.url.query["warehouse"]))
    manifest = warehouse / str(database.url.database) / "_polysql.json"
    return json.loads(manifest.read_text(encoding="utf-8")).get("fingerprint")


def _setup_text(case: RewriteCase) -> str:
    assert case.database.path is not None
    return case.database.path.read_text(encoding="utf-8")


# --- the pool ------------------------------------------------------------------------------------

def test_the_pool_has_eight_native_spark_cases() -> None:
    assert len(CASES) >= 8
    for case in CASES:
        assert (case.engine, case.dialect) == ("spark", "spark"), case.id
        assert case.database.kind == "setup_sql", case.id
        assert {key: case.provenance.get(key) for key in PROVENANCE} == PROVENANCE, case.id
        assert case.opportunity.startswith(f"# {case.id}\n"), case.id
    assert load_pool(BUNDLED_ROOT, strict=True)  # no TODO left anywhere


# Certification of every case runs in test_bundled_certification.py with the other pools.


@pytest.fixture()
def scaffolded(tmp_path: Path) -> Iterator[RewriteCase]:
    yield load_case(scaffold_case(tmp_path / "cases", "runner", engine="spark", pool="spark-t"))


def _items(database: EvaluationCopy) -> list[tuple[object, ...]]:
    result = database.backend.execute("SELECT id, name, price FROM items ORDER BY id")
    assert result.ok, result.error
    return list(result.rows)


def test_spark_builds_from_setup_scripts() -> None:
    hook = backend_class("spark://local[1]").build_from_script
    assert hook.__func__ is not Backend.build_from_script.__func__


def test_setup_builds_once_and_rebuilds_when_the_script_changes(scaffolded: RewriteCase,
                                                                tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    with _open(scaffolded, cache) as first:
        assert not first.report.skipped
        assert first.report.tables == {"items": 3}
        assert _items(first) == SCAFFOLD_ROWS
        assert first.backend.version().startswith("Spark ")
    with _open(scaffolded, cache) as second:
        assert second.report.skipped
        assert second.report.fingerprint == first.report.fingerprint
        assert _items(second) == SCAFFOLD_ROWS

    setup = scaffolded.path / "schema" / "setup.sql"
    setup.write_text(_setup_text(scaffolded) + """
INSERT INTO items VALUES (4, 'date 50% off', 9.99);
CREATE TABLE stores (location STRING, opened TIMESTAMP) USING parquet;
INSERT INTO stores VALUES ('Lyon', TIMESTAMP '2026-03-01 09:30:00');
CREATE VIEW cheap_items AS SELECT name FROM items WHERE price < 2;
""", encoding="utf-8")
    changed = load_case(scaffolded.path)
    with _open(changed, cache) as third:
        assert not third.report.skipped
        assert third.report.fingerprint != first.report.fingerprint
        assert third.report.tables == {"items": 4, "stores": 1}
        assert _items(third) == [*SCAFFOLD_ROWS, (4, "date 50% off", Decimal("9.99"))]
        view = third.backend.execute("SELECT name FROM cheap_items ORDER BY name")
        assert view.ok and view.rows == [("apple",), ("banana",)], view.error
        stores = third.backend.execute("SELECT location, opened FROM stores")
        assert stores.ok and stores.types == ["string", "timestamp"], stores.error
        assert [(row[0], row[1].isoformat()) for row in stores.rows] == \
            [("Lyon", "2026-03-01T09:30:00+00:00")]
        # the evaluation connection is the backend's read-only one
        for statement in ("DROP TABLE items", "INSERT INTO items VALUES (9, 'x', 1)",
                          "CREATE TABLE other (x INT)"):
            assert not third.backend.execute(statement).ok, statement
        assert len(_items(third)) == 4


REFUSED = [
    ("CREATE TABLE elsewhere (x INT) USING parquet LOCATION '/tmp/elsewhere'",
     "LOCATION names files"),
    ("INSERT INTO default.items SELECT * FROM items", "names a table of another database"),
    ("CREATE DATABASE other", "creates tables and views only"),
    ("SET spark.sql.runSQLOnFiles = true", "SET statements"),
]


def test_statements_reaching_outside_the_database_are_refused(scaffolded: RewriteCase,
                                                              tmp_path: Path) -> None:
    setup = scaffolded.path / "schema" / "setup.sql"
    good = _setup_text(scaffolded)
    for statement, refusal in REFUSED:
        setup.write_text(f"{good}\n{statement};\n", encoding="utf-8")
        with pytest.raises(LoadError, match=rf"(?s)case runner: statement 3 of 3 .*{refusal}"):
            _open(load_case(scaffolded.path), tmp_path / "cache")
    setup.write_text(good, encoding="utf-8")
    with _open(load_case(scaffolded.path), tmp_path / "cache") as database:
        assert not database.report.skipped
        assert _items(database) == SCAFFOLD_ROWS
