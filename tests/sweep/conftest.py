"""Shared by the sweep tests: a cache folder of the test's own."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """POLYSQL_CACHE in the test's temporary folder: nothing loaded or cached by another test
    is seen, and nothing is left behind. Modules opt in with ``usefixtures``."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("POLYSQL_CACHE", str(cache))
    return cache
