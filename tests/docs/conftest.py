"""Fixtures of the documentation tests: one cache for the session, a way to run the command line
in a folder, and the things documented commands work on -- a finished demo sweep, bundles, a
built site, rewrite cases, the demo database as ``shop.sqlite`` -- each made once per session by
the command line itself, so an example that reuses one does not pay for a second sweep.

Every example runs in a fresh folder of its own into which the artefacts it names are copied
(see ``PLACE`` in test_cli_examples.py), so examples cannot disturb each other.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner
from polysql_testkit import availability, pg_fixtures

import polysql
from polysql.cli import main
from polysql.core.paths import CACHE_ENV
from polysql.datasets.demo import ensure_demo_database, load_demo_questions

#: wide enough that no table cell is cut short ("predict…"), so output can be compared with the docs
COLUMNS = "220"


@dataclass(frozen=True, slots=True)
class CliResult:
    code: int
    output: str  # stdout and stderr, interleaved as a terminal shows them


Cli = Callable[[Sequence[str], Path], CliResult]


@pytest.fixture(scope="session")
def docs_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``POLYSQL_CACHE`` of every command these tests run: the demo database and the engine copies
    are built once, and nothing is written to the user's own cache."""
    return tmp_path_factory.mktemp("docs-cache")


@pytest.fixture(autouse=True)
def _isolated_cache(docs_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_ENV, str(docs_cache))


@pytest.fixture(scope="session")
def cli(docs_cache: Path) -> Cli:
    """``cli(args, folder)``: ``polysql ARGS`` run in ``folder`` through click's test runner."""

    def run(args: Sequence[str], folder: Path) -> CliResult:
        with pytest.MonkeyPatch.context() as patch:
            patch.chdir(folder)
            result = CliRunner().invoke(main, list(args), catch_exceptions=False,
                                        env={CACHE_ENV: str(docs_cache), "COLUMNS": COLUMNS})
        return CliResult(result.exit_code, result.output)

    return run


def _made(cli: Cli, args: Sequence[str], folder: Path) -> None:
    """Run a command that builds an artefact; it must succeed."""
    folder.mkdir(parents=True, exist_ok=True)
    result = cli(args, folder)
    assert result.code == 0, f"polysql {' '.join(args)} exited {result.code}:\n{result.output}"


# -- sweeps, bundles, a site -----------------------------------------------------------------------

@pytest.fixture(scope="session")
def demo_run(cli: Cli, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The README's first command: the demo on SQLite and DuckDB, gold and transpile."""
    folder = tmp_path_factory.mktemp("demo-run")
    _made(cli, ["sweep", "--out", "runs/demo"], folder)
    return folder / "runs" / "demo"


def mine_predictions() -> str:
    """A system's predictions submitted as ``transpile`` (docs/leaderboard.md): the gold SQL of
    every demo question, the same text for every engine."""
    return "".join(json.dumps({"question_id": q.id, "sql": q.gold_sql}) + "\n"
                   for q in load_demo_questions())


@pytest.fixture(scope="session")
def mine_run(cli: Cli, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``polysql sweep -p gold,transpile=mine.jsonl``: a second demo sweep whose ``transpile`` is
    someone else's system."""
    folder = tmp_path_factory.mktemp("mine-run")
    (folder / "mine.jsonl").write_text(mine_predictions(), encoding="utf-8")
    _made(cli, ["sweep", "-p", "gold,transpile=mine.jsonl", "--out", "runs/mine"], folder)
    return folder / "runs" / "mine"


@pytest.fixture(scope="session")
def demo_bundle(cli: Cli, demo_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("demo-bundle")
    _made(cli, ["leaderboard", "pack", str(demo_run), "--out", "demo.zip"], folder)
    return folder / "demo.zip"


@pytest.fixture(scope="session")
def mine_bundle(cli: Cli, mine_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("mine-bundle")
    _made(cli, ["leaderboard", "pack", str(mine_run), "--out", "b.zip"], folder)
    return folder / "b.zip"


@pytest.fixture(scope="session")
def tampered_bundle(cli: Cli, demo_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo bundle (as a folder) with one aggregate edited: `leaderboard validate` must
    reject it."""
    folder = tmp_path_factory.mktemp("tampered-bundle")
    _made(cli, ["leaderboard", "pack", str(demo_run), "--out", "tampered"], folder)
    manifest_path = folder / "tampered" / "manifest.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    manifest["aggregates"][0]["correct"] += 5
    manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
    return folder / "tampered"


@pytest.fixture(scope="session")
def demo_site(cli: Cli, demo_bundle: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("demo-site")
    _made(cli, ["leaderboard", "build", str(demo_bundle), "--out", "site"], folder)
    return folder / "site"


# -- rewrite cases ---------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def rewrite_cases(cli: Cli, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A case root holding one scaffolded DuckDB case, ``duckdb-scratch/my-case`` (it validates
    as scaffolded)."""
    folder = tmp_path_factory.mktemp("rewrite-cases")
    _made(cli, ["rewrite", "new-case", "my-case", "--engine", "duckdb", "--pool", "duckdb-scratch",
                "--root", "cases"], folder)
    return folder / "cases"


@pytest.fixture(scope="session")
def rewrite_ledger(cli: Cli, rewrite_cases: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``ledger.json`` of a rewrite run over the scaffolded case, for `build --rewrite-ledger`."""
    folder = tmp_path_factory.mktemp("rewrite-ledger")
    _made(cli, ["rewrite", "run", "--cases", str(rewrite_cases), "-m", "sqlglot-optimize",
                "--runs", "1", "--warmup", "0", "--out", "rewrite"], folder)
    return folder / "rewrite" / "ledger.json"


# -- databases -------------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def demo_database(docs_cache: Path) -> Path:
    """The demo's retail SQLite database (what the README calls ``shop.sqlite``)."""
    return ensure_demo_database(docs_cache)


@pytest.fixture(scope="session")
def shop_duckdb(demo_database: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A DuckDB copy of the demo database, made by ``polysql.load``."""
    target = tmp_path_factory.mktemp("shop-duckdb") / "shop.duckdb"
    polysql.load(f"sqlite:///{demo_database}", f"duckdb:///{target}")
    return target


@pytest.fixture(scope="session")
def demo_on_postgres(cli: Cli, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The demo loaded into the local PostgreSQL server as ``polysql_demo_retail`` (what a sweep
    with ``--engines postgres`` leaves there); its admin URL."""
    availability.require_client("postgres")
    url = pg_fixtures.server_url()
    _made(cli, ["sweep", "--engines", "postgres", "--predictor", "gold", "--limit", "1",
                "--out", "runs/pg"], tmp_path_factory.mktemp("demo-on-postgres"))
    return url.render_as_string(hide_password=False)


def copy_into(source: Path, target: Path) -> None:
    """Copy a file (with the sidecars polysql keeps next to it) or a folder to ``target``."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if source.is_dir():
        shutil.copytree(source, target)
        return
    shutil.copy2(source, target)
    for sidecar in source.parent.glob(source.name + ".*"):
        shutil.copy2(sidecar, target.parent / (target.name + sidecar.name[len(source.name):]))
