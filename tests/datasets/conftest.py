"""Fixtures for the datasets tests: an isolated cache, the built demo database, fixture folders.

Every test here runs with ``POLYSQL_CACHE`` pointing at one temporary folder per session, so the
demo database is generated once per run and never into the user's real cache.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from polysql.core.paths import CACHE_ENV
from polysql.datasets.base import Question
from polysql.datasets.demo import ensure_demo_database, load_demo_questions


@pytest.fixture(scope="session")
def session_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("polysql-cache")


@pytest.fixture(autouse=True)
def isolated_cache(session_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(CACHE_ENV, str(session_cache))
    return session_cache


@pytest.fixture(scope="session")
def demo_db(session_cache: Path) -> Path:
    return ensure_demo_database(session_cache)


@pytest.fixture(scope="session")
def demo_questions() -> list[Question]:
    return load_demo_questions()


def make_sqlite(path: Path, ddl: str = "CREATE TABLE t (x INTEGER)",
                rows: tuple[tuple[Any, ...], ...] = ((1,), (2,))) -> Path:
    """A tiny real SQLite database with one table ``t``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as con:
        con.execute(ddl)
        con.executemany(f"INSERT INTO t VALUES ({', '.join('?' * len(rows[0]))})", rows)
    con.close()
    return path


def write_json(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


@pytest.fixture
def bird_folder(tmp_path: Path) -> Callable[..., Path]:
    """Build a BIRD-layout folder: ``bird_folder(entries, split="dev", dbs=("shop",))``."""

    def build(entries: list[Any], split: str = "dev", dbs: tuple[str, ...] = ("shop",)) -> Path:
        root = tmp_path / "bird"
        write_json(root / f"{split}.json", entries)
        for db in dbs:
            make_sqlite(root / f"{split}_databases" / db / f"{db}.sqlite")
        return root

    return build


@pytest.fixture
def spider_folder(tmp_path: Path) -> Callable[..., Path]:
    """Build a Spider-layout folder: ``spider_folder({"dev.json": entries}, dbs=("shop",))``."""

    def build(files: dict[str, Any], dbs: tuple[str, ...] = ("shop",),
              database_dir: str = "database") -> Path:
        root = tmp_path / "spider"
        for name, entries in files.items():
            write_json(root / name, entries)
        for db in dbs:
            make_sqlite(root / database_dir / db / f"{db}.sqlite")
        return root

    return build


@pytest.fixture
def make_db() -> Callable[..., Path]:
    return make_sqlite


@pytest.fixture
def json_file() -> Callable[[Path, Any], Path]:
    return write_json
