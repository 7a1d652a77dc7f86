"""The demo's hand-written native golds run on the engines they are written for.

Each dialect key of ``native_gold`` in ``datasets/demo/questions.json`` is resolved to its engine
through the engine catalog, the demo database is loaded into that engine with polysql's own
loader (server engines through their ``polysql_testkit.engine_<name>`` hook, which drops the
database afterwards), and every native gold is run there through the native-gold predictor, the
way a sweep runs it. Only running is checked here: whether a native gold *agrees* with the SQLite
gold is what the audit (``polysql sweep --predictor native-gold``) measures, and some disagree on
purpose (collations, Unicode case folding, group_concat order; datasets/demo/README.md).
"""

from __future__ import annotations

import contextlib
import importlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from polysql_testkit import availability

import polysql
from polysql.backends import catalog
from polysql.backends.base import Backend, EngineInfo
from polysql.core.paths import CACHE_ENV
from polysql.core.predictor import TargetEngine
from polysql.datasets.base import Question
from polysql.datasets.demo.dataset import load_demo_questions
from polysql.sweep.predictors import NativeGoldPredictor

#: how many questions must carry a native gold for every dialect (the issue asks for 40)
MIN_FULLY_COVERED = 40

#: the dialect keys the demo's native golds use (each must name an installed engine)
NATIVE_GOLD_DIALECTS = tuple(sorted({name for question in load_demo_questions()
                                     for name, _sql in question.native_golds}))

#: the tag naming this module's databases on the server engines (distinct per process)
SERVER_TAG = f"demogolds{os.getpid()}"


def engine_of(dialect: str) -> EngineInfo:
    info = catalog.find(dialect)
    assert info is not None, f"native_gold key {dialect!r} names no installed engine"
    return info


@contextlib.contextmanager
def loaded_demo(info: EngineInfo, demo_db: Path, workdir: Path) -> Iterator[Backend]:
    """A read-only evaluation connection to ``info``'s copy of the demo database; skips (or fails
    under POLYSQL_REQUIRE) when the engine's client or server is missing."""
    availability.require_client(info.name)
    if info.name == "duckdb":  # a file engine: polysql.load straight into a file of our own
        url = f"duckdb:///{workdir / 'demo.duckdb'}"
        polysql.load(f"sqlite:///{demo_db}", url)
        with polysql.connect(url) as backend:
            yield backend
        return
    hook = importlib.import_module(f"polysql_testkit.engine_{info.name}")
    try:
        backend = hook.provision(demo_db, SERVER_TAG)
    except hook.ServerUnavailable as exc:
        availability.unavailable(info.name, str(exc))
    try:
        yield backend
    finally:
        backend.close()
        with contextlib.suppress(hook.ServerUnavailable):
            hook.cleanup(SERVER_TAG)


@pytest.fixture(scope="module", params=NATIVE_GOLD_DIALECTS)
def dialect_engine(request: pytest.FixtureRequest, demo_db: Path, session_cache: Path,
                   tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Backend]]:
    """(dialect key, evaluation backend of its engine holding the demo database)."""
    dialect: str = request.param
    info = engine_of(dialect)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(CACHE_ENV, str(session_cache))  # loads record fingerprints in the cache
        with loaded_demo(info, demo_db, tmp_path_factory.mktemp(dialect)) as backend:
            yield dialect, backend


def test_enough_questions_have_a_native_gold_for_every_dialect(
        demo_questions: list[Question]) -> None:
    covered = [q.id for q in demo_questions
               if all(q.native_gold(dialect) for dialect in NATIVE_GOLD_DIALECTS)]
    partial = [q.id for q in demo_questions
               if q.native_golds and q.id not in covered]
    assert len(NATIVE_GOLD_DIALECTS) >= 3, NATIVE_GOLD_DIALECTS  # a file engine and two servers
    assert len(covered) >= MIN_FULLY_COVERED, covered
    assert partial == []  # the demo writes all three or none, so every audit row is complete


def test_native_golds_favour_the_hazard_questions(demo_questions: list[Question]) -> None:
    with_golds = [q for q in demo_questions if q.native_golds]
    assert sum("portable" not in q.tags for q in with_golds) >= MIN_FULLY_COVERED


def test_every_native_gold_runs_on_its_engine(
        dialect_engine: tuple[str, Backend], demo_questions: list[Question]) -> None:
    dialect, backend = dialect_engine
    info = engine_of(dialect)
    target = TargetEngine(name=info.name, dialect=info.dialect)
    predictor = NativeGoldPredictor()
    failures: list[str] = []
    ran = 0
    for question in demo_questions:
        written = question.native_gold(dialect)
        if written is None:
            continue
        # the predictor finds the gold under the engine's own names, as a sweep would
        prediction = predictor.predict(question, target)
        assert prediction.sql == written, question.id
        result = backend.execute(written, timeout=60, max_rows=10_000)
        ran += 1
        if not result.ok:
            assert result.error is not None
            failures.append(f"{question.id}: {result.error.kind}: {result.error.message[:200]}")
        elif not result.columns:
            failures.append(f"{question.id}: returned no columns")
    assert ran >= MIN_FULLY_COVERED
    assert failures == []

