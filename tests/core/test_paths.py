"""polysql's cache folder: created when missing; a path that cannot be a folder is a clear
configuration error, not an internal one."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from polysql.cli.main import EXIT_CONFIG, main
from polysql.core.errors import ConfigError
from polysql.core.paths import CACHE_ENV, cache_dir


def test_the_cache_folder_is_created_where_the_variable_points(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "a" / "b"))
    assert cache_dir() == tmp_path / "a" / "b" and (tmp_path / "a" / "b").is_dir()


@pytest.mark.parametrize("inside", ["", "sub"])
def test_a_file_in_the_cache_path_is_a_config_error(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   inside: str) -> None:
    blocker = tmp_path / "cache.txt"
    blocker.write_text("not a folder", encoding="utf-8")
    monkeypatch.setenv(CACHE_ENV, str(blocker / inside) if inside else str(blocker))
    with pytest.raises(ConfigError, match=f"a file stands in its path.*set {CACHE_ENV}"):
        cache_dir()
    assert blocker.read_text(encoding="utf-8") == "not a folder"


def test_a_sweep_with_an_unusable_cache_folder_exits_with_the_config_code(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "cache.txt"
    blocker.write_text("", encoding="utf-8")
    monkeypatch.setenv(CACHE_ENV, str(blocker))
    result = CliRunner().invoke(main, ["sweep", "--out", str(tmp_path / "run")])
    assert result.exit_code == EXIT_CONFIG, result.output
    assert "cannot create polysql's cache folder" in result.output
    assert "internal error" not in result.output
