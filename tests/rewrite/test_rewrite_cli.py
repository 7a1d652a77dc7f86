"""`polysql rewrite new-case | validate | run` through the CLI, on real DuckDB and SQLite."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from polysql.cli.main import EXIT_CONFIG, EXIT_DATA, main


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.output


@pytest.fixture
def cases(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("POLYSQL_CACHE", str(tmp_path / "cache"))
    root = tmp_path / "cases"
    for engine in ("duckdb", "sqlite"):
        code, output = _run("rewrite", "new-case", f"demo-{engine}", "--engine", engine,
                            "--pool", f"{engine}-scratch", "--root", str(root))
        assert code == 0, output
    return root


def test_scaffolded_cases_validate(cases: Path) -> None:
    code, output = _run("rewrite", "validate", "--cases", str(cases), "--runs", "2", "--json")
    assert code == 0, output
    reports = json.loads(output[output.index("["):output.rindex("]") + 1])
    assert {r["case_id"] for r in reports} == {"demo-duckdb", "demo-sqlite"}
    assert all(r["certified"] for r in reports)


def test_a_broken_reference_is_not_certified(cases: Path) -> None:
    reference = cases / "duckdb-scratch" / "demo-duckdb" / "sql" / "reference_rewrite_01.sql"
    reference.write_text("SELECT name, price FROM items WHERE price > 100 ORDER BY name\n")
    code, output = _run("rewrite", "validate", "--cases", str(cases), "--pool", "duckdb-scratch",
                        "--runs", "1")
    assert code == EXIT_DATA and "not certified" in output


def test_method_mode_keeps_every_case_in_the_denominator(cases: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    code, output = _run("rewrite", "run", "--cases", str(cases), "--runs", "2", "--out", str(out),
                        "-m", "identity", "-m", "no-rewrite", "-m", "sqlglot-optimize")
    assert code == 0, output
    ledger = json.loads((out / "ledger.json").read_text())
    rows = ledger["rows"]
    assert len(rows) == 2 * 3  # cases x methods, whatever happened
    by_method = {(r["method"], r["case_id"]): r["outcome"] for r in rows}
    assert {by_method[("identity", c)] for c in ("demo-duckdb", "demo-sqlite")} == {"no_op"}
    assert {by_method[("no-rewrite", c)] for c in ("demo-duckdb", "demo-sqlite")} == {"no_rewrite"}
    assert (out / "rewrite_report.md").is_file()
    assert any(p.suffix == ".png" for p in out.iterdir())


def test_unknown_pool_is_a_clear_error(cases: Path) -> None:
    code, output = _run("rewrite", "validate", "--cases", str(cases), "--pool", "nope")
    assert code == EXIT_CONFIG and "duckdb-scratch" in output
