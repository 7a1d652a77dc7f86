"""Every ``polysql ...`` command of README.md and docs/*.md is either run or, when it cannot run
here, at least parsed by click -- so a renamed option, a removed command or a changed exit code
breaks the suite instead of the reader's first try.

How an example is read (prompts, comments, continuations, ``&&`` chains, synopses) is said in
:mod:`polysql_testkit.doc_examples`. Two tables below cover the examples, keyed by file and
command text:

* ``RUN``: run through click's test runner (``leaderboard serve`` as a real process) in a fresh
  folder holding the files the example names (``PLACE``: copies of what the session fixtures of
  conftest.py built once, or small files written here). Placeholders (``RUN_DIR``, ``BUNDLE``,
  ``"SELECT ..."``) are replaced per example, and the arguments a test adds to keep the suite
  fast (``--limit``, ``--pool``) are listed per example with the reason. The documented exit
  code (0 unless the doc says otherwise) and something the doc promises about the output or the
  files written are checked. The same command documented twice runs once.
* ``PARSE``: cannot run here (a hosted API key, a model server that is not running); parsed by
  click, with the reason.

``test_every_example_is_covered_once`` fails, naming file and line, for an example in neither
table (or both), and for a table entry no doc has any more. Engines whose client is not
installed or whose server cannot be reached skip their examples with the reason (or fail them,
when ``POLYSQL_REQUIRE`` names the engine).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import pytest
from polysql_testkit import (
    availability,
    engine_bigquery,
    engine_snowflake,
    mysql_fixtures,
    pg_fixtures,
)
from polysql_testkit.doc_examples import Example, arguments, command_examples, fenced_blocks, parse

from polysql.cli.main import EXIT_DATA, EXIT_MISMATCH, main
from polysql.datasets.reward.tasks import bundled_tasks_path as reward_tasks_path
from polysql.datasets.reward.tasks import load_tasks as load_reward_tasks
from polysql.debug.evaluate import bundled_tasks_path as debug_tasks_path
from polysql.llm.client import load_model_configs

ROOT = Path(__file__).resolve().parents[2]
DOC_FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
EXAMPLES = command_examples(DOC_FILES, ROOT)


# -- what a run is -------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Ran:
    """A documented command after it ran: the example, the arguments it ran with, its exit code
    and output, the folder it ran in, and ``again()`` to run the same arguments once more."""

    example: Example
    args: list[str]
    code: int
    output: str
    cwd: Path
    again: Callable[[], tuple[int, str]]


Check = Callable[[Ran], None]


@dataclass(frozen=True, slots=True)
class Run:
    """How one example runs here.

    ``needs``: names in ``PLACE`` (files or folders put in the working folder first, or a server
    database made ready). ``subs``: (placeholder text, value) replaced in the command, in order;
    ``{postgres_url}`` / ``{mysql_url}`` in a value stand for the local servers' admin URLs.
    ``extra``: arguments added to the documented ones, with ``why`` saying why. ``engines``: engines
    the example needs (skipped with the reason when unusable here). ``expect``: texts the output
    must contain; ``check``: a further check of output and files. ``serve``: the command serves
    until stopped, so it runs as a process that is stopped once it answers.
    """

    expect: tuple[str, ...] = ()
    check: Check | None = None
    needs: tuple[str, ...] = ()
    subs: tuple[tuple[str, str], ...] = ()
    extra: tuple[str, ...] = ()
    why: str = ""
    exit: int = 0
    engines: tuple[str, ...] = ()
    serve: bool = False
    slow: bool = False


@dataclass(frozen=True, slots=True)
class Parse:
    """An example that cannot run here: why, and the placeholders to fill before click parses
    it. ``models``: models it names, which must be declared in the ``polysql.toml`` shown in
    ``config_doc`` (so the example and the documented config agree)."""

    reason: str
    subs: tuple[tuple[str, str], ...] = ()
    models: tuple[str, ...] = ()
    config_doc: str = "README.md"


# -- checks ----------------------------------------------------------------------------------------

def files(*names: str) -> Check:
    """The run wrote these files (relative to the folder it ran in)."""

    def check(ran: Ran) -> None:
        missing = [name for name in names if not (ran.cwd / name).exists()]
        assert not missing, f"{ran.example}: expected {missing} to be written\n{ran.output}"

    return check


def all_of(*checks: Check) -> Check:
    def check(ran: Ran) -> None:
        for one in checks:
            one(ran)

    return check


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in re.split(r"[│┃]", line)[1:-1]]


def documented_output_table(ran: Ran) -> None:
    """The accuracy table shown after the example (the next fenced block) is what the command
    prints: the same columns, and every row shown is a row printed."""
    blocks = [b for b in fenced_blocks(ROOT / ran.example.file, ROOT)
              if b.line > ran.example.line]
    shown = [line for line in blocks[0].lines if line.startswith(("┃", "│"))]
    assert shown, f"{ran.example}: no sample output table follows it"
    printed = [_cells(line) for line in ran.output.splitlines() if line.startswith(("┃", "│"))]
    for line in shown:
        assert _cells(line) in printed, (
            f"{ran.example.file}:{blocks[0].line}: the sample output row\n  {line}\n"
            "is not printed; the command printed:\n"
            + "\n".join(" | ".join(row) for row in printed))


def resumes(ran: Ran) -> None:
    """Run again in the same folder: nothing is evaluated twice (the README's resume promise)."""
    code, output = ran.again()
    assert code == 0, output
    assert re.search(r"\b0 new records, \d+ resumed", output), output


def records(path: str) -> Callable[[Ran], list[dict[str, object]]]:
    def read(ran: Ran) -> list[dict[str, object]]:
        lines = (ran.cwd / path / "results.jsonl").read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    return read


def engines_recorded(run_dir: str, *expected: str) -> Check:
    def check(ran: Ran) -> None:
        seen = {str(r["engine"]) for r in records(run_dir)(ran)}
        assert seen == set(expected), f"{ran.example}: records of {sorted(seen)}"

    return check


def predictions_audited(ran: Ran) -> None:
    """Malformed lines are reported as file:line and skipped; a question without a prediction
    counts as wrong (missing_prediction), so the denominator stays 140 per engine."""
    assert "predictions.jsonl:3" in ran.output, ran.output
    mine = [r for r in records("runs/demo")(ran) if r["predictor"] == "mymodel"]
    assert len(mine) == 2 * 140
    missing = [r for r in mine if r.get("prediction_failure") == "missing_prediction"]
    assert len(missing) == 2 * 40 and not any(r["match"] for r in missing)
    assert any(r["status"] == "match" for r in mine)


def grade_json(ran: Ran) -> None:
    graded = json.loads(ran.output[ran.output.index("{"):ran.output.rindex("}") + 1])
    assert graded["task_id"] == "retail-correlated-count"
    assert graded["results_match"] is True and graded["scores"]["correctness"] == 1.0
    assert graded["scores"]["issues"] == 1.0


def validated_cases(ran: Ran) -> None:
    reports = json.loads(ran.output[ran.output.index("["):ran.output.rindex("]") + 1])
    assert [(r["case_id"], r["certified"]) for r in reports] == [("my-case", True)], reports


def methods_in_ledger(*methods: str) -> Check:
    def check(ran: Ran) -> None:
        ledger = json.loads((ran.cwd / "runs/rewrite/ledger.json").read_text(encoding="utf-8"))
        seen = {str(row["method"]) for row in ledger["rows"]}
        assert seen == set(methods), seen

    return check


def site_predictors(*names: str) -> Check:
    def check(ran: Ran) -> None:
        board = (ran.cwd / "site" / "leaderboard.json").read_text(encoding="utf-8")
        for name in names:
            assert f'"{name}"' in board, f"{name!r} not on the board: {board[:500]}"

    return check


# -- the files examples work on --------------------------------------------------------------------

Placer = Callable[[pytest.FixtureRequest, Path], None]


def _copy(fixture: str) -> Placer:
    def place(request: pytest.FixtureRequest, target: Path) -> None:
        source: Path = request.getfixturevalue(fixture)
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target)
            return
        shutil.copy2(source, target)
        for sidecar in source.parent.glob(source.name + ".*"):  # e.g. shop.duckdb.polysql.json
            shutil.copy2(sidecar, target.parent / (target.name + sidecar.name[len(source.name):]))

    return place


def _write(text: Callable[[], str]) -> Placer:
    def place(_request: pytest.FixtureRequest, target: Path) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text(), encoding="utf-8")

    return place


def _ready(fixture: str) -> Placer:
    def place(request: pytest.FixtureRequest, _target: Path) -> None:
        request.getfixturevalue(fixture)

    return place


def _predictions() -> str:
    """Predictions for the README's `--predictor mymodel=predictions.jsonl`: the gold SQL of the
    first 100 demo questions, one malformed line (line 3), and none for the rest."""
    from polysql.datasets.demo import load_demo_questions

    lines = [json.dumps({"question_id": q.id, "sql": q.gold_sql})
             for q in load_demo_questions()[:100]]
    lines.insert(2, '{"question_id": "demo-001", "sql": ')
    return "\n".join(lines) + "\n"


def _bird_folder(_request: pytest.FixtureRequest, target: Path) -> None:
    """A BIRD-layout folder at the README's `path/to/bird/dev`: dev.json and one database."""
    import sqlite3

    database = target / "dev_databases" / "shop" / "shop.sqlite"
    database.parent.mkdir(parents=True)
    with sqlite3.connect(database) as con:
        con.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, price REAL)")
        con.executemany("INSERT INTO items VALUES (?, ?, ?)",
                        [(1, "Pen", 1.5), (2, "pencil", 0.5), (3, "Paper", 4.0)])
    con.close()
    questions = [
        {"question_id": 0, "db_id": "shop", "question": "How many items?", "evidence": "",
         "SQL": "SELECT COUNT(*) FROM items", "difficulty": "simple"},
        {"question_id": 1, "db_id": "shop", "question": "Items whose name starts with p?",
         "evidence": "", "SQL": "SELECT name FROM items WHERE name LIKE 'p%'",
         "difficulty": "simple"},
    ]
    (target / "dev.json").write_text(json.dumps(questions), encoding="utf-8")


def _bird_predictions() -> str:
    return (json.dumps({"question_id": "0", "sql": "SELECT COUNT(*) FROM items"}) + "\n"
            + json.dumps({"question_id": "1", "sql": "SELECT name FROM items WHERE name LIKE 'p%'"})
            + "\n")


def _fast_sql() -> str:
    """The authored optimization of the README's reward task."""
    task = next(t for t in load_reward_tasks() if t.id == "retail-correlated-count")
    return task.reference_sql


def _fixes() -> str:
    """Fixes for `debug eval --predictor file:fixes.jsonl`: the first reference of two tasks."""
    import yaml

    tasks = yaml.safe_load(debug_tasks_path().read_text(encoding="utf-8"))["tasks"][:2]
    return "".join(json.dumps({"id": t["id"], "sql": t["references"][0]}) + "\n" for t in tasks)


MY_REWRITER = '''\
"""A rewriter speaking the cmd: protocol: a request on stdin, one answer on stdout."""
import json
import sys

request = json.load(sys.stdin)
print(json.dumps({"status": "rewrite", "sql": request["sql"]}))
'''

#: what an example may need in its folder, by the name it uses there
PLACE: dict[str, Placer] = {
    "runs/demo": _copy("demo_run"),
    "runs/a": _copy("demo_run"),
    "runs/b": _copy("mine_run"),
    "demo.zip": _copy("demo_bundle"),
    "a.zip": _copy("demo_bundle"),
    "b.zip": _copy("mine_bundle"),
    "tampered": _copy("tampered_bundle"),
    "site": _copy("demo_site"),
    "cases": _copy("rewrite_cases"),
    "runs/rewrite/ledger.json": _copy("rewrite_ledger"),
    "shop.sqlite": _copy("demo_database"),
    "shop.duckdb": _copy("shop_duckdb"),
    "predictions.jsonl": _write(_predictions),
    "path/to/bird/dev": _bird_folder,
    "bird_preds.jsonl": _write(_bird_predictions),
    "fast.sql": _write(_fast_sql),
    "fixes.jsonl": _write(_fixes),
    "my_rewriter.py": _write(lambda: MY_REWRITER),
    "tasks.yaml": _write(lambda: debug_tasks_path().read_text(encoding="utf-8")),
    "reward_tasks.yaml": _write(lambda: reward_tasks_path().read_text(encoding="utf-8")),
    "postgres:polysql_demo_retail": _ready("demo_on_postgres"),
}

# -- the examples that run -------------------------------------------------------------------------

FIRST_SWEEP = Run(
    expect=("140/140",),
    check=all_of(documented_output_table,
                 files(*(f"runs/demo/{name}" for name in ("results.jsonl", "summary.json",
                                                          "summary.csv", "report.md",
                                                          "report.html"))),
                 resumes))
SERVERS_SWEEP = Run(expect=("postgres", "mysql"), engines=("postgres", "mysql"),
                    extra=("--limit", "20"), why="--limit 20: the full demo on four engines is "
                    "tests/test_all_engines_sweep.py's job",
                    check=engines_recorded("runs/demo", "sqlite", "duckdb", "postgres", "mysql"))
REWRITE_VALIDATE = Run(expect=("9 case(s) certified",),
                       extra=("--pool", "duckdb-core", "--runs", "1", "--warmup", "0"),
                       why="one pool, timed once: certifying every bundled pool takes ~13 minutes "
                       "and is tests/rewrite/test_bundled_certification.py's job")
PACK = Run(needs=("runs/demo",), expect=("wrote demo.zip",), check=files("demo.zip"))
BUILD = Run(needs=("demo.zip",), check=files("site/index.html", "site/leaderboard.json"),
            expect=("open site/index.html",))
SERVE = Run(needs=("site",), serve=True, extra=("--port", "0"),
            why="--port 0: a free port, read back from the 'serving' line (8000 may be taken)")
REPORT = Run(needs=("runs/demo",), expect=("wrote",), check=files("runs/demo/analysis/report.md"))
NEW_CASE = Run(expect=("wrote",))
DEBUG_SYNOPSIS = Run(needs=("tasks.yaml", "shop.sqlite"),
                     subs=(("[--tasks FILE]", "[--tasks tasks.yaml]"),
                           ("--engine URL", "--engine sqlite:///shop.sqlite"),
                           ("--out DIR", "--out debug")),
                     expect=("debug eval: reference (24 tasks)",),
                     check=files("debug/debug_summary.json", "debug/debug_tasks.csv",
                                 "debug/debug_report.md"))

GOLD_AUDIT_WHY = "the local servers hold the demo's PostgreSQL and MySQL copies"
TRANSPILE_AUDIT = Run(needs=("runs/demo",), expect=("wrote",),
                      check=files("runs/demo/audit/transpile_audit.csv",
                                  "runs/demo/audit/transpile_audit.md"))

RUN: dict[tuple[str, str], Run | tuple[Run, ...]] = {
    # README.md
    ("README.md", "polysql sweep"): FIRST_SWEEP,
    ("README.md", "polysql sweep --dataset demo --engines sqlite,duckdb --predictor "
                  "mymodel=predictions.jsonl"):
        Run(needs=("predictions.jsonl",), expect=("mymodel",), check=predictions_audited),
    ("README.md", "polysql sweep --dataset bird:path/to/bird/dev --predictor "
                  "mymodel=bird_preds.jsonl --out runs/bird"):
        Run(needs=("path/to/bird/dev", "bird_preds.jsonl"), expect=("mymodel", "2/2"),
            check=engines_recorded("runs/bird", "sqlite", "duckdb")),
    ("docs/comparison.md", "polysql sweep --dataset bird:path/to/bird/dev --predictor "
                           "mymodel=bird_preds.jsonl --policy bird"):
        Run(needs=("path/to/bird/dev", "bird_preds.jsonl"),
            expect=("mymodel", "2/2", "Comparison policy changed from the contract's "
                                      "defaults: bird (")),
    ("README.md", "polysql sweep --engines sqlite,duckdb,postgres,mysql"): SERVERS_SWEEP,
    ("README.md", "polysql sweep --engines pg=postgresql://admin:pw@db.example:5432/,"
                  "my=mysql://root:pw@db.example:3306/"):
        Run(subs=(("postgresql://admin:pw@db.example:5432/", "{postgres_url}"),
                  ("mysql://root:pw@db.example:3306/", "{mysql_url}")),
            engines=("postgres", "mysql"), extra=("--limit", "10"),
            why="the local servers stand in for db.example; --limit 10 (the servers' full "
                "sweep is another example's)",
            expect=("pg", "my"), check=engines_recorded("runs/demo", "pg", "my")),
    ("README.md", "polysql audit golds demo --engines sqlite,duckdb,postgres,mysql"):
        Run(engines=("postgres", "mysql"), why=GOLD_AUDIT_WHY, expect=("gold audit",),
            check=files("audits/demo-golds/gold_audit.csv", "audits/demo-golds/gold_audit.md")),
    ("README.md", "polysql audit transpile runs/demo"): TRANSPILE_AUDIT,
    ("docs/audit.md", "polysql audit golds demo --engines sqlite,duckdb,postgres,mysql "
                      "--out audits/demo"):
        Run(engines=("postgres", "mysql"), why=GOLD_AUDIT_WHY, expect=("gold audit",),
            check=files("audits/demo/gold_audit.csv", "audits/demo/gold_audit.md")),
    ("docs/audit.md", "polysql audit transpile runs/demo"): TRANSPILE_AUDIT,
    ("docs/cli.md", "polysql audit golds DATASET [--engines sqlite,duckdb] [--out DIR] "
                    "[--timeout 30] [--max-rows 100000] [--question ID] [--limit N] "
                    "[--policy KEY=VALUE] [--no-cache] [--fresh]"):
        Run(subs=(("DATASET", "demo"), ("DIR", "audits/synopsis"), ("ID", "demo-063"),
                  ("N", "140"), ("KEY=VALUE", "null_order=either")),
            expect=("gold audit",), check=files("audits/synopsis/gold_audit.csv")),
    ("docs/cli.md", "polysql audit transpile RUN_DIR [--out DIR] [--dataset SPEC] "
                    "[--predictor NAME,...]"):
        Run(needs=("runs/demo",), subs=(("RUN_DIR", "runs/demo"), ("DIR", "audit-out"),
                                        ("SPEC", "demo"), ("NAME,...", "transpile")),
            expect=("wrote",), check=files("audit-out/transpile_audit.csv")),
    ("README.md", "polysql sweep --engines sqlite,duckdb,spark,clickhouse"):
        Run(engines=("spark", "clickhouse"), extra=("--limit", "5"), slow=True,
            why="--limit 5: loading the demo into a Spark session dominates, not the questions",
            check=engines_recorded("runs/demo", "sqlite", "duckdb", "spark", "clickhouse")),
    ("README.md", "polysql sweep --engines sqlite,snowflake,bigquery"):
        Run(engines=("snowflake", "bigquery"), extra=("--limit", "5"), slow=True,
            why="the fakesnow and bqemulator emulators stand in for the hosted services "
                "(POLYSQL_SNOWFLAKE_URL / POLYSQL_BIGQUERY_URL point at them); --limit 5",
            check=engines_recorded("runs/demo", "sqlite", "snowflake-emulated",
                                   "bigquery-emulated")),
    ("README.md", "polysql rewrite validate"): REWRITE_VALIDATE,
    ("README.md", 'polysql reward grade retail-correlated-count --sql-file fast.sql --issue '
                  'correlated_subquery --summary "..."'):
        Run(needs=("fast.sql",), check=grade_json),
    ("README.md", "polysql reward ablate --policy reference"):
        Run(expect=("policy=reference", "mean_reward", "only-correctness")),
    ("README.md", "polysql debug eval --predictor file:fixes.jsonl"):
        Run(needs=("fixes.jsonl",), expect=("debug eval: file:fixes.jsonl (24 tasks)",)),
    ("README.md", "polysql leaderboard pack runs/demo --out demo.zip"): PACK,
    ("README.md", "polysql leaderboard build demo.zip --out site/"): BUILD,
    ("README.md", "polysql leaderboard serve site/"): SERVE,
    ("README.md", "polysql report runs/demo"): REPORT,
    ("README.md", 'polysql compare --db sqlite:///shop.sqlite --gold "SELECT ..." '
                  '--pred "SELECT ..."'): (
        Run(needs=("shop.sqlite",), expect=("match",),
            subs=(('--gold "SELECT ..."', '--gold "SELECT COUNT(*) FROM customers"'),
                  ('--pred "SELECT ..."', '--pred "SELECT count(customer_id) FROM customers"'))),
        Run(needs=("shop.sqlite",), expect=("mismatch",), exit=EXIT_MISMATCH,
            subs=(('--gold "SELECT ..."', '--gold "SELECT COUNT(*) FROM customers"'),
                  ('--pred "SELECT ..."', '--pred "SELECT COUNT(*) FROM orders"')))),
    ("README.md", "polysql load sqlite:///shop.sqlite duckdb:///shop.duckdb"):
        Run(needs=("shop.sqlite",), expect=("customers",), check=files("shop.duckdb")),
    ("README.md", "polysql schema postgresql://postgres@localhost/polysql_demo_retail"):
        Run(needs=("postgres:polysql_demo_retail",), engines=("postgres",),
            expect=("CREATE TABLE", "customers")),
    ("README.md", "polysql engines"): Run(expect=("sqlite", "duckdb", "ready")),
    ("README.md", "polysql datasets"): Run(expect=("demo", "bird:PATH", "spider:PATH")),
    # docs/analysis.md
    ("docs/analysis.md", "polysql sweep --engines sqlite,duckdb,postgres,mysql --out runs/demo"):
        SERVERS_SWEEP,
    ("docs/analysis.md", "polysql report runs/demo"): REPORT,
    ("docs/analysis.md", "polysql report runs/a runs/b --out report/"):
        Run(needs=("runs/a", "runs/b"), expect=("wrote",), check=files("report/report.md")),
    # docs/cli.md (synopses: every optional part is given)
    ("docs/cli.md", "polysql leaderboard pack RUN_DIR --out BUNDLE[.zip|.tar.gz] "
                    "[--dataset SPEC]"):
        Run(needs=("runs/demo",), subs=(("RUN_DIR", "runs/demo"),
                                        ("BUNDLE[.zip|.tar.gz]", "demo.tar.gz"),
                                        ("SPEC", "demo")),
            check=files("demo.tar.gz")),
    ("docs/cli.md", "polysql leaderboard validate BUNDLE... [--no-dataset-check] [--as ...] "
                    "[--prefer ...]"): (
        Run(needs=("demo.zip",), expect=("demo.zip: valid",),
            subs=(("BUNDLE...", "demo.zip"), ("[--as ...]", "[--as demo.zip:gold=verbatim]"),
                  ("[--prefer ...]", "[--prefer demo.zip]"))),
        Run(needs=("tampered",), expect=("invalid", "aggregate_mismatch"), exit=EXIT_DATA,
            subs=(("BUNDLE...", "tampered"), ("[--as ...]", ""), ("[--prefer ...]", "")),
            why="'# exit 4 if invalid': a bundle with an edited aggregate")),
    ("docs/cli.md", "polysql leaderboard build BUNDLE... --out site/ [--no-dataset-check] "
                    "[--rewrite-ledger LEDGER] [--as BUNDLE:PREDICTOR=NEWNAME] [--prefer BUNDLE]"):
        Run(needs=("demo.zip", "runs/rewrite/ledger.json"),
            subs=(("BUNDLE...", "demo.zip"), ("LEDGER", "runs/rewrite/ledger.json"),
                  ("BUNDLE:PREDICTOR=NEWNAME", "demo.zip:transpile=sqlglot"),
                  ("[--prefer BUNDLE]", "[--prefer demo.zip]")),
            check=all_of(files("site/index.html", "site/rewrite.html"),
                         site_predictors("sqlglot", "gold"))),
    ("docs/cli.md", "polysql leaderboard serve [SITE] [--host 127.0.0.1] [--port 8000]"):
        Run(needs=("site",), serve=True, subs=(("[SITE]", "site"), ("8000", "0")),
            why="--port 0: a free port, read back from the 'serving' line"),
    ("docs/cli.md", "polysql rewrite new-case ID --engine ENGINE --pool POOL [--dialect D] "
                    "[--root cases]"):
        Run(subs=(("ID", "my-case"), ("ENGINE", "duckdb"), ("POOL", "duckdb-scratch"),
                  ("[--dialect D]", "[--dialect duckdb]")),
            expect=("wrote",), check=files("cases/duckdb-scratch/my-case")),
    ("docs/cli.md", "polysql rewrite validate [--cases DIR] [--pool P] [--case ID] "
                    "[--engine NAME=URL] [--runs 5] [--warmup 1] [--json] [--require-all]"):
        Run(needs=("cases",), subs=(("DIR", "cases"), ("[--pool P]", "[--pool duckdb-scratch]"),
                                    ("[--case ID]", "[--case my-case]"),
                                    ("NAME=URL", "duckdb=duckdb://")),
            check=validated_cases),
    ("docs/cli.md", "polysql rewrite run [same selection] -m METHOD ... [--config polysql.toml] "
                    "[--out runs/rewrite] [--sensitivity] [--require-all]"):
        Run(needs=("cases",), subs=(("[same selection]", "--cases cases --runs 1 --warmup 0"),
                                    ("METHOD", "sqlglot-optimize")),
            check=all_of(files("runs/rewrite/ledger.json", "runs/rewrite/rewrite_sensitivity.csv"),
                         methods_in_ledger("sqlglot-optimize"))),
    ("docs/cli.md", "polysql reward grade TASK_ID [--sql-file F] [--issue TYPE ...] "
                    "[--summary TEXT] [--engine URL] [--weights k=v,...]"):
        Run(needs=("fast.sql",),
            subs=(("TASK_ID", "retail-correlated-count"), ("--sql-file F", "--sql-file fast.sql"),
                  ("TYPE", "correlated_subquery"), ("TEXT", "'one pass: join and group'"),
                  ("URL", "duckdb"), ("k=v,...", "speedup=0.5,correctness=0.5")),
            check=grade_json),
    ("docs/cli.md", "polysql reward ablate [--policy original|reference|empty] [--output FILE.json]"):
        Run(expect=("policy=original",), subs=(("FILE.json", "ablation.json"),),
            check=files("ablation.json")),
    ("docs/cli.md", "polysql debug eval [--tasks FILE] [--predictor "
                    "reference|identity|file:PATH|llm:MODEL] [--engine URL] [--no-execution] "
                    "[--out DIR]"): DEBUG_SYNOPSIS,
    ("docs/cli.md", 'polysql compare --db sqlite:///shop.sqlite --gold "SELECT ..." '
                    '--pred "SELECT ..." [--pred-db duckdb:///shop.duckdb]'):
        Run(needs=("shop.sqlite", "shop.duckdb"), expect=("match",),
            subs=(('--gold "SELECT ..."', '--gold "SELECT COUNT(*) FROM customers"'),
                  ('--pred "SELECT ..."', '--pred "SELECT count(*) FROM customers"'))),
    # docs/debug.md
    ("docs/debug.md", "polysql debug eval [--tasks tasks.yaml] [--predictor "
                      "reference|identity|file:PATH|llm:MODEL] [--engine URL] [--no-execution] "
                      "[--out DIR]"):
        Run(needs=("tasks.yaml", "shop.sqlite"),
            subs=(("--engine URL", "--engine sqlite:///shop.sqlite"), ("--out DIR", "--out debug")),
            expect=("debug eval: reference (24 tasks)",),
            check=files("debug/debug_summary.json")),
    # docs/leaderboard.md
    ("docs/leaderboard.md", "polysql sweep --engines sqlite,duckdb,postgres,mysql --out runs/demo"):
        SERVERS_SWEEP,
    ("docs/leaderboard.md", "polysql leaderboard pack runs/demo --out demo.zip"): PACK,
    ("docs/leaderboard.md", "polysql leaderboard build demo.zip --out site/"): BUILD,
    ("docs/leaderboard.md", "polysql leaderboard serve site/"): SERVE,
    ("docs/leaderboard.md", "polysql leaderboard build a.zip b.zip --as b.zip:transpile=mine "
                            "--prefer a.zip --out site/"):
        Run(needs=("a.zip", "b.zip"), expect=("mine", "a.zip"),
            check=all_of(files("site/index.html"), site_predictors("transpile", "mine", "gold"))),
    # docs/reward.md
    ("docs/reward.md", "polysql reward grade TASK_ID [--sql-file F] [--issue TYPE ...] "
                       "[--summary TEXT] [--engine duckdb] [--runs 5] [--timeout 10] "
                       "[--weights ...] [--tasks FILE]"):
        Run(needs=("fast.sql", "reward_tasks.yaml"),
            subs=(("TASK_ID", "retail-correlated-count"), ("--sql-file F", "--sql-file fast.sql"),
                  ("TYPE", "correlated_subquery"), ("TEXT", "'one pass: join and group'"),
                  ("[--weights ...]", "[--weights issues=1]"), ("FILE", "reward_tasks.yaml")),
            check=grade_json),
    ("docs/reward.md", "polysql reward ablate [--policy original|reference|empty] "
                       "[--output table.json] [same options]"):
        Run(subs=(("[same options]", "--runs 1"),), expect=("policy=original",),
            check=files("table.json"), why="--runs 1 for [same options]"),
    # docs/rewrite.md
    ("docs/rewrite.md", "polysql rewrite validate"): REWRITE_VALIDATE,
    ("docs/rewrite.md", "polysql rewrite validate --require-all"): REWRITE_VALIDATE,
    ("docs/rewrite.md", "polysql rewrite run -m identity -m no-rewrite -m sqlglot-optimize "
                        "--out runs/rewrite"):
        Run(extra=("--pool", "duckdb-core", "--runs", "1", "--warmup", "0"),
            why="one pool, one timed run: the methods' outcomes, not their timings, are checked",
            expect=("rewrite methods — 9 cases",),
            check=methods_in_ledger("identity", "no-rewrite", "sqlglot-optimize")),
    ("docs/rewrite.md", 'polysql rewrite run -m "cmd:python my_rewriter.py" --engine '
                        "postgres=postgresql://me@db/ --sensitivity"):
        Run(needs=("my_rewriter.py",), engines=("postgres",),
            subs=(("postgresql://me@db/", "{postgres_url}"),),
            extra=("--pool", "postgres-core", "--runs", "1", "--warmup", "0"),
            why="the local server stands in for db; only the pool that runs on it, timed once",
            check=all_of(files("runs/rewrite/ledger.json", "runs/rewrite/rewrite_sensitivity.csv"),
                         methods_in_ledger("cmd:python my_rewriter.py"))),
    ("docs/rewrite.md", "polysql rewrite new-case my-case --engine mysql --pool mysql-core "
                        "--root cases/"):
        Run(expect=("wrote",), check=files("cases/mysql-core/my-case")),
}

# -- the examples that cannot run here -------------------------------------------------------------

HOSTED_API = "needs a hosted API (OpenAI) and its key"
MODEL_SERVERS = "needs local model servers (vLLM on :8000, llama.cpp on :8080) that do not run here"
SMOL = "needs the llama.cpp model server of `smol` (docs/llm.md), which does not run here"

READER_WHY = ("creates logins on a team's own server; tests/backends/postgres and "
              "tests/backends/mysql test_existing_database.py run it on databases they build")

PARSE: dict[tuple[str, str], Parse] = {
    ("README.md", "polysql sweep --dataset demo --engines sqlite,duckdb,postgres,mysql "
                  "--model gpt4o"): Parse(HOSTED_API, models=("gpt4o",)),
    ("README.md", "polysql sweep --model qwen,smol --prompt-level pitfalls --cot "
                  "--out runs/demo-pitfalls"): Parse(MODEL_SERVERS, models=("qwen", "smol")),
    ("README.md", "polysql rewrite run -m identity -m no-rewrite -m sqlglot-optimize -m llm:smol "
                  "--out runs/rewrite"):
        Parse(SMOL + "; the other methods run in docs/rewrite.md's example", models=("smol",)),
    ("docs/analysis.md", "polysql report runs/demo --classify smol"):
        Parse(SMOL, models=("smol",), config_doc="docs/llm.md"),
    ("docs/cli.md", "polysql report runs/demo [--out DIR] [--reference sqlite] [--alpha 0.05] "
                    "[--seed 0] [--resamples 10000] [--classify MODEL [--config polysql.toml] "
                    "[--attempts 3] [--no-llm-cache]]"):
        Parse(SMOL + " (--classify); `polysql report` itself runs in README.md's example",
              subs=(("DIR", "report"), ("MODEL", "smol"))),
    ("docs/llm.md", "polysql sweep --dataset demo --engines sqlite,duckdb,postgres,mysql "
                    "--model gpt4o"):
        Parse(HOSTED_API, models=("gpt4o",), config_doc="docs/llm.md"),
    ("docs/rewrite.md", "polysql rewrite run --pool duckdb-core -m llm:smol --config polysql.toml"):
        Parse(SMOL, models=("smol",), config_doc="docs/llm.md"),
    ("docs/cli.md", "polysql reader create ADMIN_URL --database DB [--database DB2 ...] "
                    "[--login polysql_ro]"):
        Parse(READER_WHY, subs=(("ADMIN_URL", "postgresql://postgres@127.0.0.1:5432/"),
                                ("DB2", "sales"), ("DB", "shop"), ("[--database sales ...]", ""))),
    ("docs/cli.md", "polysql reader drop ADMIN_URL [--login polysql_ro]"):
        Parse(READER_WHY, subs=(("ADMIN_URL", "postgresql://postgres@127.0.0.1:5432/"),)),
    ("docs/engines.md", "polysql sweep --dataset bird:path/to/dev --engines sqlite,"
                        "pg=postgresql://team_ro@db.example:5432/{db_id},"
                        "my=mysql://team_ro@db.example:3306/{db_id}"):
        Parse("needs a team's own databases on its servers; tests/sweep/"
              "test_existing_databases.py sweeps databases it builds on the local servers the "
              "same way"),
}

# -- the tests -------------------------------------------------------------------------------------


def _variants(entry: Run | tuple[Run, ...]) -> tuple[Run, ...]:
    return entry if isinstance(entry, tuple) else (entry,)


def test_every_example_is_covered_once() -> None:
    problems = []
    for example in EXAMPLES:
        tables = [name for name, table in (("RUN", RUN), ("PARSE", PARSE)) if example.key in table]
        if len(tables) != 1:
            what = "is in neither RUN nor PARSE" if not tables else "is in both RUN and PARSE"
            problems.append(f"{example.where}: `{example.command}` {what} of "
                            f"{Path(__file__).name}; run it there (or say why it cannot run)")
    documented = {example.key for example in EXAMPLES}
    for file, command in [*RUN, *PARSE]:
        if (file, command) not in documented:
            problems.append(f"{file}: no longer documents `{command}`; update or drop its entry")
    assert not problems, "\n".join(problems)


def test_added_arguments_say_why() -> None:
    """An example run with more arguments than documented says why, so the table shows where a
    run differs from what a reader types."""
    silent = [f"{file}: {command}" for (file, command), entry in RUN.items()
              for run in _variants(entry) if run.extra and not run.why]
    assert not silent, "arguments added without a reason:\n" + "\n".join(silent)


def test_the_docs_hold_examples() -> None:
    """Extraction still finds the examples (a broken reader would make the tables vacuous)."""
    files_with_examples = {example.file for example in EXAMPLES}
    assert {"README.md", "docs/cli.md", "docs/leaderboard.md", "docs/rewrite.md"} <= \
        files_with_examples
    assert len(EXAMPLES) >= 40


def _params(kind: str) -> list[object]:
    out = []
    for example in EXAMPLES:
        if kind == "parse" and example.key in PARSE:
            out.append(pytest.param(example, PARSE[example.key], id=example.where))
        if kind == "run" and example.key in RUN:
            variants = _variants(RUN[example.key])
            for number, run in enumerate(variants, 1):
                marks = [pytest.mark.slow] if run.slow else []
                suffix = f"#{number}" if len(variants) > 1 else ""
                out.append(pytest.param(example, run, id=example.where + suffix, marks=marks))
    return out


@pytest.mark.parametrize(("example", "entry"), _params("parse"))
def test_example_parses(example: Example, entry: Parse, tmp_path: Path) -> None:
    try:
        parse(main, arguments(example.command, entry.subs))
    except click.ClickException as exc:
        pytest.fail(f"{example}: {exc.format_message()}")
    if entry.models:
        blocks = [b for b in fenced_blocks(ROOT / entry.config_doc, ROOT) if b.language == "toml"]
        assert blocks, f"{entry.config_doc} shows no polysql.toml"
        config = tmp_path / "polysql.toml"
        config.write_text(blocks[0].text, encoding="utf-8")
        declared = load_model_configs(config)
        missing = [name for name in entry.models if name not in declared]
        assert not missing, (f"{example}: model(s) {missing} are not declared in the polysql.toml "
                             f"of {entry.config_doc} ({sorted(declared)})")


DUMMY_URLS = {"{postgres_url}": "postgresql://postgres@127.0.0.1:5432/",
              "{mysql_url}": "mysql://root@127.0.0.1:3306/"}


def _with_values(args: list[str], values: dict[str, str]) -> list[str]:
    out = []
    for arg in args:
        for name, value in values.items():
            arg = arg.replace(name, value)
        out.append(arg)
    return out


def _engine_values(engines: tuple[str, ...], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Make sure each engine can be used here (skip, or fail when required, if not) and return
    the URLs examples put in for placeholders."""
    for engine in engines:
        availability.require_client(engine)  # before any server or emulator is started
    values: dict[str, str] = {}
    for engine in engines:
        if engine == "postgres":
            values["{postgres_url}"] = pg_fixtures.server_url().render_as_string(
                hide_password=False)
        elif engine == "mysql":
            values["{mysql_url}"] = mysql_fixtures.server_url().render_as_string(
                hide_password=False)
        elif engine in ("snowflake", "bigquery"):
            kit = engine_snowflake if engine == "snowflake" else engine_bigquery
            try:
                url = kit.base_url().render_as_string(hide_password=False)
            except kit.ServerUnavailable as exc:
                availability.unavailable(engine, str(exc))
            monkeypatch.setenv(f"POLYSQL_{engine.upper()}_URL", url)
    return values


#: (arguments, files placed, served) -> (exit code, output, folder) of commands run this session:
#: a command documented twice (README.md and docs/rewrite.md both show `polysql rewrite validate`)
#: runs once, and each example's own checks are applied to that run
_ALREADY_RAN: dict[tuple[tuple[str, ...], tuple[str, ...], bool], tuple[int, str, Path]] = {}


@pytest.mark.parametrize(("example", "run"), _params("run"))
def test_example_runs(example: Example, run: Run, request: pytest.FixtureRequest,
                      tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                      cli: Callable[[list[str], Path], Any]) -> None:
    args = [*arguments(example.command, run.subs), *run.extra]
    try:  # the names first, so a renamed option fails even where the engine is missing
        parse(main, _with_values(args, DUMMY_URLS), strict=False)
    except click.ClickException as exc:
        pytest.fail(f"{example}: {exc.format_message()}")
    args = _with_values(args, _engine_values(run.engines, monkeypatch))
    same = (tuple(args), run.needs, run.serve)
    if same in _ALREADY_RAN:  # the same command on the same files, documented twice
        code, output, folder = _ALREADY_RAN[same]
    else:
        folder = tmp_path
        for name in run.needs:
            PLACE[name](request, folder / name)
        if run.serve:
            code, output = _serve(args, folder)
        else:
            result = cli(args, folder)
            code, output = result.code, result.output
        _ALREADY_RAN[same] = (code, output, folder)

    def again() -> tuple[int, str]:
        repeat = cli(args, folder)
        return repeat.code, repeat.output

    shown = f"polysql {' '.join(args)}"
    assert code == run.exit, (f"{example}\nran: {shown}\nexit {code}, documented {run.exit}:\n"
                              f"{output}")
    for text in run.expect:
        assert text in output, f"{example}\nran: {shown}\n{text!r} not in the output:\n{output}"
    if run.check is not None:
        run.check(Ran(example, args, code, output, folder, again))


def _serve(args: list[str], folder: Path) -> tuple[int, str]:
    """Start a serving command as a process, fetch its index page once it says where it serves,
    then stop it: exit 0 when the page came back."""
    process = subprocess.Popen([sys.executable, "-m", "polysql.cli", *args], cwd=folder,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env={**os.environ, "COLUMNS": "220"})
    lines: list[str] = []
    try:
        assert process.stdout is not None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            lines.append(line)
            found = re.search(r"http://([\d.]+):(\d+)/", line)
            if found:
                page = urllib.request.urlopen(f"http://{found[1]}:{found[2]}/index.html",
                                              timeout=10).read().decode("utf-8")
                assert "<html" in page.lower() and "gold" in page, page[:500]
                return 0, "".join(lines)
        return process.poll() or 1, "".join(lines)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
