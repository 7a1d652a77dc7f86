"""An engine whose client library is not installed is refused up front, with the extra to install.

Backends import their client libraries lazily, so loading a backend class proves nothing about
them: each engine's ``EngineInfo`` names its ``client_modules`` and ``extra``, and
``polysql.engines.registry`` checks them
for ``polysql engines``, every connect and every sweep. Missing clients are real here: a backend
class defined below names a module that exists nowhere, and a subprocess puts ``None`` into
``sys.modules`` for a client, which makes Python's own import of it fail.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner
from polysql_testkit.availability import ENGINE_NAMES, require_client, required_names

import polysql
from polysql.backends.base import EngineInfo
from polysql.cli import main
from polysql.core.errors import EngineUnavailableError
from polysql.engines.registry import (
    EngineStatus,
    available_schemes,
    engine_status,
    missing_clients,
    module_installed,
)

ABSENT = "polysql_no_such_client"


ABSENT_INFO = EngineInfo(name="absent", dialect="sqlite", display_name="Absent", schemes=("absent",),
                         aliases={}, extra="spark", client_modules=("sqlite3", ABSENT))


def _run(code: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh interpreter (wide terminal: rich must not wrap the hints)."""
    env = {**os.environ, "COLUMNS": "300", "POLYSQL_CACHE": str(cwd / "cache")}
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=300)


def _blocked(module: str, call: str) -> str:
    """Python source that makes ``import module`` fail, then runs ``call``."""
    return f"import sys\nsys.modules[{module!r}] = None\n{call}\n"


# -- the check -----------------------------------------------------------------------------------

def test_a_missing_client_module_makes_the_engine_not_ready() -> None:
    assert missing_clients(ABSENT_INFO) == (ABSENT,)  # sqlite3 is there
    status = EngineStatus("absent", None, missing_clients(ABSENT_INFO), ABSENT_INFO.extra)
    assert not status.ready
    assert status.problem == (f"{ABSENT} is not installed; install it with "
                              "pip install 'polysql[spark]'")


def test_a_module_whose_parent_package_is_missing_is_missing() -> None:
    info = replace(ABSENT_INFO, client_modules=(f"{ABSENT}_package.client",))
    assert missing_clients(info) == (f"{ABSENT}_package.client",)


def test_an_engine_with_its_clients_is_ready() -> None:
    status = engine_status("sqlite")
    assert status.ready and status.problem == ""


def test_module_installed_locates_without_importing(tmp_path: Path) -> None:
    assert module_installed("json.decoder") and not module_installed(ABSENT)
    # a fresh interpreter: the submodule is located, only its parent package is imported
    done = _run("import sys\nfrom polysql.engines.registry import module_installed\n"
                "print(module_installed('xml.dom.pulldom'), 'xml.dom.pulldom' in sys.modules)",
                cwd=tmp_path)
    assert done.stdout.split() == ["True", "False"], done.stderr


@pytest.mark.parametrize("scheme", available_schemes())
def test_ready_means_the_client_really_imports(scheme: str) -> None:
    """The check agrees with Python's import for every installed backend, whatever is installed
    here; and an engine POLYSQL_REQUIRE lists must be ready."""
    status = engine_status(scheme)
    if status.backend is None:
        assert not status.ready and status.missing
        return
    imports = True
    for module in status.backend.info.client_modules:
        try:
            importlib.import_module(module)
        except ImportError:
            imports = False
    assert status.ready is imports, status.problem
    if status.backend.name in required_names():
        assert status.ready, status.problem


# -- polysql engines -----------------------------------------------------------------------------

def test_engines_lists_each_scheme_as_the_check_sees_it() -> None:
    result = CliRunner(env={"COLUMNS": "300"}).invoke(main, ["engines"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    rows = {line.split("│")[1].strip(): line for line in result.output.splitlines()
            if line.count("│") >= 5}
    assert set(available_schemes()) <= set(rows)
    for scheme in available_schemes():
        status = engine_status(scheme)
        if status.ready:
            assert rows[scheme].rstrip(" │").endswith("ready"), rows[scheme]
        else:
            assert status.install_hint in rows[scheme], rows[scheme]
    for engine in required_names() & ENGINE_NAMES:
        assert "ready" in rows[engine], rows[engine]


def test_engines_shows_a_missing_client_with_the_extra(tmp_path: Path) -> None:
    done = _run(_blocked("pyspark", "from polysql.cli import main\nmain(['engines'])"),
                cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if "│" in line]
    for scheme in ("spark", "sc"):
        row = next(r for r in rows if r.split("│")[1].strip() == scheme)
        assert "client missing" in row and "pyspark is not installed" in row, row
        # the extra survives rich's markup (unescaped, "[spark]" would vanish as a style tag)
        assert "pip install 'polysql[spark]'" in row, row
    sqlite_row = next(r for r in rows if r.split("│")[1].strip() == "sqlite")
    assert "ready" in sqlite_row


def test_engines_shows_a_backend_whose_module_cannot_import(tmp_path: Path) -> None:
    # the PostgreSQL backend imports psycopg at module level, unlike Spark
    done = _run(_blocked("psycopg", "from polysql.cli import main\nmain(['engines'])"),
                cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    row = next(r for r in done.stdout.splitlines()
               if "│" in r and r.split("│")[1].strip() == "postgresql")
    assert "psycopg" in row and "pip install 'polysql[postgres]'" in row, row


# -- connecting and sweeping -----------------------------------------------------------------------

def test_connect_refuses_an_engine_without_its_client(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyspark", None)  # Python's own "cannot import" mark
    with pytest.raises(EngineUnavailableError) as caught:
        polysql.connect("spark://local[2]")
    assert str(caught.value) == ("engine 'spark' unavailable: pyspark is not installed; "
                                 "install it with pip install 'polysql[spark]'")


def test_connect_refuses_an_engine_whose_client_import_is_blocked(tmp_path: Path) -> None:
    code = _blocked("psycopg", "import polysql\ntry:\n"
                    "    polysql.connect('postgresql://u@127.0.0.1:1/db')\n"
                    "except polysql.core.errors.EngineUnavailableError as exc:\n    print(exc)")
    done = _run(code, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    # the engine's INFO names psycopg: it is found missing before the backend module is imported
    assert done.stdout.strip() == ("engine 'postgresql' unavailable: psycopg is not installed; "
                                   "install it with pip install 'polysql[postgres]'"), done.stdout


def test_sweep_without_the_client_exits_3_before_any_work(tmp_path: Path) -> None:
    run = tmp_path / "run"
    done = _run(_blocked("pyspark", "from polysql.cli import main\nmain(sys.argv[1:])"),
                "sweep", "--engines", "sqlite,spark", "--predictor", "gold",
                "--out", str(run), cwd=tmp_path)
    assert done.returncode == 3, (done.returncode, done.stdout, done.stderr)
    assert "engine 'spark' unavailable: pyspark is not installed" in done.stderr
    assert "pip install 'polysql[spark]'" in done.stderr
    assert "internal error" not in done.stderr
    # refused before any work: nothing loaded, nothing written
    assert not (run / "results.jsonl").exists()
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").rglob("*.sqlite"))


# -- the tests' own skip rule ----------------------------------------------------------------------

def test_tests_skip_an_engine_without_its_client_naming_the_extra(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyspark", None)
    monkeypatch.setenv("POLYSQL_REQUIRE", "sqlite,duckdb")
    with pytest.raises(pytest.skip.Exception) as skipped:
        require_client("spark")
    assert str(skipped.value) == ("engine 'spark' unavailable: pyspark is not installed; "
                                  "install it with pip install 'polysql[spark]'")


def test_polysql_require_turns_that_skip_into_a_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyspark", None)
    monkeypatch.setenv("POLYSQL_REQUIRE", "sqlite, spark")
    with pytest.raises(pytest.fail.Exception) as failed:
        require_client("spark")
    assert str(failed.value) == ("engine 'spark' is required by POLYSQL_REQUIRE but unavailable: "
                                 "pyspark is not installed; install it with "
                                 "pip install 'polysql[spark]'")
