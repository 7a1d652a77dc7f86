"""Adding an engine is one folder: a toy engine installed from outside the repository works
everywhere an engine is named, with no file of polysql edited.

``toylite`` is a second SQLite-backed engine under another name, written the way
docs/engines.md ("Adding an engine") says: one package declaring ``INFO`` with a lazily imported
backend class, and one ``polysql.backends`` entry point. It lives in a temporary folder, with a
``.dist-info`` beside it (``METADATA`` and ``entry_points.txt``, what ``pip install`` would write)
so ``importlib.metadata`` finds the entry point when the folder is on ``sys.path``. Everything
runs in a fresh interpreter, since the entry points are read once per process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

TOY_INIT = '''\
"""A toy engine: SQLite under another name, as a third party would ship one."""

from __future__ import annotations

from typing import Any

from polysql.backends.base import EngineInfo

INFO = EngineInfo(
    name="toylite",
    dialect="sqlite",
    display_name="ToyLite",
    schemes=("toylite",),
    aliases={"toylite": "toylite://"},
    text_names=("toylite",),
)


def __getattr__(name: str) -> Any:
    if name == "ToyliteBackend":
        from polysql_toylite.backend import ToyliteBackend

        return ToyliteBackend
    raise AttributeError(name)
'''

TOY_BACKEND = '''\
"""The toy engine's backend: SQLite's, answering under the toy's name."""

from __future__ import annotations

from typing import ClassVar

from polysql.backends.base import EngineInfo
from polysql.backends.sqlite.backend import SQLiteBackend
from polysql_toylite import INFO


class ToyliteBackend(SQLiteBackend):
    info: ClassVar[EngineInfo] = INFO
    name: ClassVar[str] = INFO.name
    dialect: ClassVar[str] = INFO.dialect
'''

ENTRY_POINTS = """\
[polysql.backends]
toylite = polysql_toylite:ToyliteBackend
"""

METADATA = """\
Metadata-Version: 2.1
Name: polysql-toylite
Version: 0.1
"""


@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment of a process in which ``toylite`` is installed (and nothing else
    changed): its folder on PYTHONPATH, and caches of its own."""
    root = tmp_path_factory.mktemp("toy")
    site = root / "site"
    package = site / "polysql_toylite"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(TOY_INIT)
    (package / "backend.py").write_text(TOY_BACKEND)
    dist_info = site / "polysql_toylite-0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(METADATA)
    (dist_info / "entry_points.txt").write_text(ENTRY_POINTS)
    env = dict(os.environ)
    # the toy's folder, and the tests' own modules for the checks that use them
    tests = Path(__file__).resolve().parent
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(site), str(tests), str(tests / "_lib"), env.get("PYTHONPATH")) if p)
    env["POLYSQL_CACHE"] = str(root / "cache")
    env["COLUMNS"] = "200"  # rich tables are not wrapped
    env.pop("POLYSQL_REQUIRE", None)
    env["ROOT"] = str(root)
    return env


def polysql(env: dict[str, str], *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "polysql.cli", *args], env=env, cwd=env["ROOT"],
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"polysql {' '.join(args)} exited {done.returncode}:\n" \
                                 f"{done.stdout}\n{done.stderr}"
    return done


def python(env: dict[str, str], code: str) -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                          cwd=env["ROOT"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    return done.stdout


def test_engines_lists_the_toy_as_ready(toy: dict[str, str]) -> None:
    rows = [line for line in polysql(toy, "engines").stdout.splitlines() if "toylite" in line]
    assert len(rows) == 1, rows
    cells = [cell.strip() for cell in rows[0].strip("│|┃ ").replace("┃", "│").split("│")]
    assert cells == ["toylite", "toylite", "sqlite", "ready"], cells


@pytest.fixture(scope="module")
def gold_run(toy: dict[str, str]) -> Path:
    """A sweep of the demo's first three questions with the gold predictor on SQLite and on the
    toy, asked for by their short names."""
    out = Path(toy["ROOT"]) / "gold-run"
    polysql(toy, "sweep", "--engines", "sqlite,toylite", "--limit", "3", "--predictor", "gold",
            "--out", str(out))
    return out


def records(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]


def test_a_sweep_runs_and_records_the_toy_by_its_short_name(toy: dict[str, str],
                                                            gold_run: Path) -> None:
    by_engine: dict[str, list[str]] = {}
    for record in records(gold_run):
        by_engine.setdefault(record["engine"], []).append(record["status"])
    assert sorted(by_engine) == ["sqlite", "toylite"]
    # the gold SQL answers itself on a faithful copy: every toy verdict is a match
    assert by_engine["toylite"] == ["match"] * 3
    assert {r["dialect"] for r in records(gold_run) if r["engine"] == "toylite"} == {"sqlite"}
    # its evaluation copy is its own, under the engine's name in the cache
    copies = list((Path(toy["POLYSQL_CACHE"]) / "engines" / "toylite").rglob("*.sqlite"))
    assert copies, "the toy engine got no evaluation copy of its own"
    run = json.loads((gold_run / "run.json").read_text())
    assert "toylite" in json.dumps(run["engines"])
    assert "toylite" in (gold_run / "summary.csv").read_text()


def test_a_predictions_file_answers_for_the_toy_by_its_name(toy: dict[str, str],
                                                            gold_run: Path) -> None:
    """Predictions files name the engine a line is for: the toy's name is one of them."""
    gold = {r["question_id"]: r["sql"] for r in records(gold_run) if r["engine"] == "sqlite"}
    predictions = Path(toy["ROOT"]) / "toy-predictions.jsonl"
    predictions.write_text("".join(
        json.dumps({"question_id": qid, "dialect": "toylite", "sql": sql}) + "\n"
        for qid, sql in sorted(gold.items())))
    out = Path(toy["ROOT"]) / "file-run"
    polysql(toy, "sweep", "--engines", "toylite", "--limit", "3",
            "--predictor", f"mine={predictions}", "--out", str(out))
    assert [(r["engine"], r["predictor"], r["status"]) for r in records(out)] == [
        ("toylite", "mine", "match")] * 3


def test_the_toy_is_found_by_name_scheme_and_url(toy: dict[str, str]) -> None:
    printed = python(toy, """
        import polysql
        from polysql.backends import catalog
        from polysql.engines import registry

        info = catalog.find("toylite")
        assert info is not None and info.name == "toylite", info
        assert catalog.info_for_scheme("toylite") is info
        assert "toylite" in [i.name for i in catalog.infos()]
        assert "toylite" in registry.alias_names()
        with polysql.connect("toylite://") as backend:
            result = backend.execute("SELECT 1 AS one")
        assert result.error is None and result.rows == [(1,)], result
        assert result.engine == "toylite", result.engine

        # the engines a rewrite case may name
        from polysql.rewrite.cases import installed_engines
        assert "toylite" in installed_engines().names

        # the names the structure rule looks for: a new engine is covered without editing it
        import test_structure
        terms = test_structure.engine_terms(catalog.infos())
        assert terms["toylite"] == "toylite"
        assert test_structure.scan_source('URL = "toylite:///x"', "polysql/x.py", terms)
        print("found")
    """)
    assert printed.strip() == "found"
