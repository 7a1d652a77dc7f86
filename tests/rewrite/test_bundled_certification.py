"""Every bundled rewrite case is certified in reference-pair mode on its declared engine, and the
baselines produce the full-denominator table over them."""

from __future__ import annotations

from pathlib import Path

import pytest
from polysql_testkit import availability

from polysql.analysis.rewrite.ledger import full_denominator_table
from polysql.analysis.rewrite.model import OUTCOMES
from polysql.core.errors import EngineUnavailableError
from polysql.datasets.rewrite.cases import BUNDLED_ROOT
from polysql.rewrite.cases import load_pool
from polysql.rewrite.databases import open_database
from polysql.rewrite.harness import input_caps, run_pool, validate_reference_pair
from polysql.rewrite.methods import make_method

CASES = load_pool(BUNDLED_ROOT)
CAPS = input_caps(CASES)


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POLYSQL_CACHE", str(tmp_path_factory.getbasetemp() / "rewrite-cache"))


def _engine_marks(engine: str) -> list[pytest.MarkDecorator]:
    name = {"mariadb": "mysql", "postgresql": "postgres"}.get(engine, engine)
    return [getattr(pytest.mark, name)]


def _open(case):  # type: ignore[no-untyped-def]
    """The case's database; an engine that cannot be reached skips, unless POLYSQL_REQUIRE
    lists it."""
    try:
        return open_database(case)
    except EngineUnavailableError as exc:
        availability.unavailable(_engine_marks(case.engine)[0].name, str(exc))


@pytest.mark.parametrize("case", [pytest.param(c, id=f"{c.pool}/{c.id}", marks=_engine_marks(c.engine))
                                  for c in CASES])
def test_bundled_case_is_certified(case) -> None:  # type: ignore[no-untyped-def]
    with _open(case) as database:
        report = validate_reference_pair(case, database.backend, caps=CAPS, warmup=0, runs=2)
    assert report.certified, report.problems


def test_every_pool_has_at_least_eight_cases() -> None:
    per_engine: dict[str, int] = {}
    for case in CASES:
        per_engine[case.engine] = per_engine.get(case.engine, 0) + 1
    assert all(count >= 8 for count in per_engine.values()), per_engine


@pytest.mark.duckdb
def test_baselines_fill_the_full_denominator_table(tmp_path: Path) -> None:
    cases = [c for c in CASES if c.engine == "duckdb"]
    outcomes = []
    for spec in ("identity", "no-rewrite", "sqlglot-optimize"):
        name, method = make_method(spec)
        outcomes += run_pool(cases, method, method_name=name, caps=CAPS, warmup=0, runs=1)
    assert len(outcomes) == 3 * len(cases)
    assert {o.outcome for o in outcomes} <= set(OUTCOMES)
    rows = {r.method: r for r in full_denominator_table(outcomes) if r.scope == "all"}
    assert rows["identity"].n == rows["no-rewrite"].n == len(cases)
    assert rows["identity"].result_consistency == 0.0  # every identity answer is a no-op
    assert rows["no-rewrite"].no_rewrite_rate == 1.0
    assert rows["sqlglot-optimize"].cgoq_at_n == pytest.approx(
        (rows["sqlglot-optimize"].cgoq_at_valid or 0) * rows["sqlglot-optimize"].valid / len(cases))
