"""The deterministic taxonomy pass, fed by the errors real engines raise.

Each case runs a broken query on every engine of the conformance fixture (real SQLite, DuckDB,
PostgreSQL and MySQL/MariaDB) and checks that the label read off the engine's own error class,
SQLSTATE and message is the same everywhere: the first pass must not depend on which engine
happened to fail.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from polysql.analysis import signals
from polysql.analysis.signals import FAMILY_OF, SIGNALS, error_signal, mismatch_signal, signal
from polysql.backends import catalog
from polysql.backends.base import Backend, EngineInfo
from polysql.core.errors import ConfigError

BROKEN = {
    # unquoted: SQLite reads an unknown "double-quoted" name as a string literal
    "unknown_column": 'SELECT no_such_column FROM "Customers"',
    "unknown_table": 'SELECT * FROM "NoSuchTable"',
    "unknown_function": 'SELECT no_such_function_xyz("Name") FROM "Customers"',
    # (a bare trailing WHERE is legal Spark: it reads as a table alias)
    "syntax_error": 'SELECT "Name" FROM "Customers" WHERE "Name" =',
}


def _quoted(backend: Backend, sql: str) -> str:
    # MySQL and Spark read "x" as a string; the fixture's identifiers need backticks there.
    return sql.replace('"', "`") if backend.dialect in ("mysql", "spark") else sql


@pytest.mark.parametrize("expected", sorted(BROKEN))
def test_engine_errors_get_the_same_label_on_every_engine(backend: Backend, expected: str) -> None:
    result = backend.execute(_quoted(backend, BROKEN[expected]))
    assert result.error is not None, f"{backend.dialect} accepted {BROKEN[expected]!r}"
    label = error_signal(result.error.kind, result.error.message, result.error.sqlstate)
    assert label == expected, (backend.dialect, result.error)


def test_every_signal_has_a_family() -> None:
    assert set(FAMILY_OF) == set(SIGNALS)
    assert len(SIGNALS) == len(set(SIGNALS))


@pytest.mark.parametrize(("kind", "label"), [("timeout", "timeout"), ("too_large", "too_large"),
                                             ("forbidden", "forbidden"),
                                             ("unavailable", "engine_unavailable")])
def test_error_kinds_that_decide_alone(kind: str, label: str) -> None:
    assert error_signal(kind, "anything at all", None) == label


def test_mysql_catch_all_state_defers_to_the_message() -> None:
    message = "FUNCTION test.julianday does not exist"
    assert error_signal("syntax", message, "42000") == "unknown_function"
    assert error_signal("syntax", "You have an error in your SQL syntax near 'x'", "42000") == "syntax_error"


def _record(status: str, **extra: Any) -> dict[str, Any]:
    return {"dataset": "d", "question_id": "1", "predictor": "p", "engine": "e", "status": status,
            **extra}


def test_mismatch_labels_come_from_the_recorded_shape() -> None:
    assert mismatch_signal(_record("mismatch", details={"mismatch": "order"})) == "same_rows_different_order"
    assert mismatch_signal(_record("mismatch", details={"mismatch": "numeric_drift"})) == "numeric_drift"


def test_old_records_without_a_shape_still_get_a_label() -> None:
    assert mismatch_signal(_record("mismatch", details={"rule": "columns"})) == "wrong_columns"
    assert mismatch_signal(_record("mismatch", details={"gold_rows": 3, "pred_rows": 2})) == "wrong_row_count"
    reason = "same rows but in a different order; row 1 differs at column 'x'"
    assert mismatch_signal(_record("mismatch", reason=reason,
                                   details={"gold_rows": 2, "pred_rows": 2})) == "same_rows_different_order"


def test_signal_of_each_status() -> None:
    assert signal(_record("match")) is None
    assert signal(_record("invalid_gold")) is None
    assert signal(_record("generation_failure")) == "no_sql"
    error = {"kind": "syntax", "message": "no such column: x", "sqlstate": None}
    assert signal(_record("exec_error", pred={"error": error})) == "unknown_column"


# --- the engines' own wording (EngineInfo.error_vocabulary) ------------------------------------

ROUTINE_DENIED = ("execute command denied to user 'reader'@'%' for routine "
                  "'polysql_eval.julianday'")


@pytest.fixture
def engines(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[list[EngineInfo]], None]]:
    """Replace the installed engines for one test (the label tables are rebuilt either side)."""
    def clear() -> None:
        for cached in (signals._vocabularies, signals._messages, signals._engine_messages):
            cached.cache_clear()

    def use(infos: list[EngineInfo]) -> None:
        monkeypatch.setattr(catalog, "infos", lambda: infos)
        clear()

    clear()
    yield use
    monkeypatch.undo()
    clear()


def test_a_refusal_an_engine_words_as_a_mistake_takes_its_label() -> None:
    # results recorded before the MySQL backend looked the routine up hold it as a refusal
    assert error_signal("forbidden", ROUTINE_DENIED, "42000") == "unknown_function"
    assert error_signal("runtime", ROUTINE_DENIED + " (FUNCTION polysql_eval.julianday does not "
                        "exist)", "42000") == "unknown_function"
    assert error_signal("forbidden", "SELECT command denied to user 'reader'@'%' for table 't'",
                        "42000") == "forbidden"


def test_engine_wording_comes_from_the_engines_that_declare_it(
        engines: Callable[[list[EngineInfo]], None]) -> None:
    sqlite = catalog.find("sqlite")
    mysql = catalog.find("mysql")
    assert sqlite is not None and mysql is not None
    assert error_signal("runtime", "no such table: t", None) == "unknown_table"
    engines([info for info in catalog.infos() if info.name not in ("sqlite", "mysql")])
    assert error_signal("runtime", "no such table: t", None) == "runtime_error"
    assert error_signal("forbidden", ROUTINE_DENIED, "42000") == "forbidden"
    # the shared wording stays whatever engines are installed
    assert error_signal("runtime", "Table 'db.t' doesn't exist", None) == "unknown_table"
    engines([*catalog.infos(), sqlite, mysql])
    assert error_signal("runtime", "no such table: t", None) == "unknown_table"
    assert error_signal("forbidden", ROUTINE_DENIED, "42000") == "unknown_function"


@pytest.mark.parametrize(("vocabulary", "problem"), [
    ((("no_such_label", r"oops"),), "error_vocabulary names the signal 'no_such_label'"),
    ((("syntax_error", r"unbalanced ("),), "is not a regular expression"),
])
def test_a_bad_vocabulary_is_a_clear_error(engines: Callable[[list[EngineInfo]], None],
                                           vocabulary: tuple[tuple[str, str], ...],
                                           problem: str) -> None:
    toy = EngineInfo(name="toy", dialect="sqlite", display_name="Toy", schemes=("toy",),
                     aliases={"toy": "toy://"}, error_vocabulary=vocabulary)
    engines([*catalog.infos(), toy])
    with pytest.raises(ConfigError, match=f"engine 'toy': .*{problem}"):
        error_signal("runtime", "anything", None)


def test_every_engines_vocabulary_uses_known_labels_and_valid_patterns() -> None:
    labels = {label for label, _ in signals._SHARED_MESSAGES}
    for info in catalog.infos():
        for label, pattern in info.error_vocabulary:
            assert label in labels, (info.name, label)
            re.compile(pattern)
