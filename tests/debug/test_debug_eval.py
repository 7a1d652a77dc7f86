from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from polysql.cli.debug import debug_group
from polysql.core.errors import ConfigError, DatasetError, EngineUnavailableError
from polysql.debug.evaluate import (
    DemoBackends,
    evaluate,
    load_tasks,
    make_predictor,
    score_task,
    summarize,
    validate_on_database,
)
from polysql.debug.metrics import (
    exact_match,
    graph_match,
    levenshtein,
    modify_better,
    normalize_sql,
)

SCHEMA = {"orders": {"order_id": "INT", "customer_id": "INT", "status": "TEXT",
                     "channel": "TEXT"},
          "customers": {"customer_id": "INT", "city": "TEXT"}}


def _run_eval(tmp_path: Path, predictor: str) -> dict:
    out = tmp_path / predictor
    result = CliRunner().invoke(debug_group, ["eval", "--predictor", predictor, "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "exact_match" in result.output and "by taxonomy level 2" in result.output
    return json.loads((out / "debug_summary.json").read_text())


def test_reference_predictor_scores_everything(tmp_path: Path) -> None:
    summary = _run_eval(tmp_path, "reference")
    overall = summary["overall"]
    assert overall["tasks"] >= 20
    for metric in ("exact_match", "graph_match", "modify_better", "execution_match"):
        assert overall[metric] == 1.0, metric


def test_identity_predictor_scores_nothing(tmp_path: Path) -> None:
    summary = _run_eval(tmp_path, "identity")
    overall = summary["overall"]
    assert overall["exact_match"] == 0.0
    assert overall["modify_better"] == 0.0
    assert overall["execution_match"] == 0.0
    # sqlglot's parser repairs two of the bundled syntax bugs (a comma before FROM, WHERE after
    # LIMIT), so the unchanged buggy script graph-matches on exactly those tasks.
    graph_hits = [row["id"] for row in summary["tasks"] if row["graph_match"]]
    assert graph_hits == ["debug-007", "debug-008"]


def test_graph_match_accepts_reordered_fix_that_exact_match_rejects() -> None:
    reference = ["SELECT c.city FROM orders AS o JOIN customers AS c "
                 "ON o.customer_id = c.customer_id WHERE o.status = 'cancelled' "
                 "AND o.channel = 'online'"]
    reordered = ("select c.city from orders as o join customers as c "
                 "on c.customer_id = o.customer_id where o.channel = 'online' "
                 "and o.status = 'cancelled'")
    assert not exact_match(reordered, reference, "sqlite")
    assert graph_match(reordered, reference, "sqlite", SCHEMA)
    # a genuinely different predicate is still told apart
    different = reordered.replace("'online'", "'in-store'")
    assert not graph_match(different, reference, "sqlite", SCHEMA)


def test_graph_match_rejects_unparseable() -> None:
    assert not graph_match("SELECT (1", ["SELECT 1"], "sqlite")
    assert not graph_match(None, ["SELECT 1"], "sqlite")


@pytest.mark.parametrize(("left", "right", "same"), [
    ("select  count(*)\nfrom customers;", "SELECT COUNT(*) FROM customers", True),
    ("SELECT a -- note\nFROM t /* block */", "SELECT a FROM t", True),
    ("SELECT a FROM t;;", "SELECT a FROM t", True),
    ("SELECT a FROM t WHERE x = 'Abc'", "SELECT a FROM t WHERE x = 'abc'", False),
    ("SELECT a FROM T", "SELECT a FROM t", False),
    ('SELECT "x" FROM t', "SELECT 'x' FROM t", False),
])
def test_exact_match_normalization(left: str, right: str, same: bool) -> None:
    assert exact_match(left, [right], "sqlite") is same
    assert (normalize_sql(left, "sqlite") == normalize_sql(right, "sqlite")) is same


def test_levenshtein_against_known_values() -> None:
    assert levenshtein(list("kitten"), list("sitting")) == 3
    assert levenshtein([], ["a", "b"]) == 2
    assert levenshtein(["a"], ["a"]) == 0


def test_modify_better_edge_cases() -> None:
    buggy = "SELECT COUNT(*) FORM customers"
    refs = ["SELECT COUNT(*) FROM customers"]
    assert modify_better(refs[0], buggy, refs, "sqlite")
    assert not modify_better(buggy, buggy, refs, "sqlite")  # equal distance is not better
    assert not modify_better("SELECT 1", buggy, refs, "sqlite")  # further away
    assert not modify_better(None, buggy, refs, "sqlite")
    # the nearest of several references counts
    assert modify_better("SELECT 2", "SELECT 1 FROM t", ["SELECT 2 FROM t", "SELECT 2"], "sqlite")


def _write_tasks(tmp_path: Path, task: dict) -> Path:
    path = tmp_path / "tasks.yaml"
    path.write_text(yaml.safe_dump({"tasks": [task]}))
    return path


BASE = {"id": "t1", "kind": "semantic", "dialect": "sqlite", "buggy_sql": "SELECT 1",
        "issue_report": "wrong", "references": ["SELECT 2"],
        "taxonomy": ["semantic", "filter", "x"], "db": {"dataset": "demo", "db_id": "retail"}}


@pytest.mark.parametrize(("change", "message"), [
    ({"references": None}, "misses references"),
    ({"references": []}, "non-empty list"),
    ({"taxonomy": ["semantic", "filter"]}, "three non-empty"),
    ({"kind": "logic"}, "syntax or semantic"),
    ({"issue_report": ""}, "needs an issue_report"),
    ({"kind": "syntax"}, "needs an error_message"),
])
def test_task_validation_errors(tmp_path: Path, change: dict, message: str) -> None:
    task = {**BASE, **change}
    task = {key: value for key, value in task.items() if value is not None}
    with pytest.raises(DatasetError, match=message):
        load_tasks(_write_tasks(tmp_path, task))


def test_database_validation_flags_running_syntax_bug_and_failing_reference(
        tmp_path: Path) -> None:
    task = {**BASE, "kind": "syntax", "error_message": "boom", "buggy_sql": "SELECT 1",
            "references": ["SELECT 1", "SELECT nope FROM customers"]}
    (loaded,) = load_tasks(_write_tasks(tmp_path, task))
    with DemoBackends() as backends:
        problems = validate_on_database(loaded, backends("demo", "retail", "sqlite"))
    assert any("buggy SQL runs" in problem for problem in problems)
    assert any("reference 2 fails" in problem and "nope" in problem for problem in problems)


def test_tasks_run_on_a_copy_on_their_dialects_engine_or_on_the_one_given(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POLYSQL_CACHE", str(tmp_path))
    with DemoBackends() as backends:
        by_dialect = backends("demo", "retail", "sqlite"), backends("demo", "retail", "duckdb")
        assert [backend.name for backend in by_dialect] == ["sqlite", "duckdb"]
        assert backends("demo", "retail", "sqlite") is by_dialect[0]  # opened once
        for backend in by_dialect:  # an evaluation copy in polysql's cache, never the source
            assert backend.url.database is not None
            assert Path(backend.url.database).is_relative_to(tmp_path)
            assert not backend.execute("DELETE FROM customers").ok
        with pytest.raises(ConfigError, match="no engine installed here speaks the 'tsql'"):
            backends("demo", "retail", "tsql")
    with DemoBackends("duckdb") as backends:
        assert backends("demo", "retail", "sqlite").name == "duckdb"


def test_bundled_tasks_are_sound() -> None:
    tasks = load_tasks()
    assert len(tasks) >= 20
    assert {task.kind for task in tasks} == {"syntax", "semantic"}
    with DemoBackends() as backends:
        for task in tasks:
            backend = backends(task.dataset, task.db_id, task.dialect)
            assert validate_on_database(task, backend) == []
            if task.kind == "syntax":
                error = backend.execute(task.buggy_sql).error
                assert error is not None and error.message == task.error_message


def test_taxonomy_breakdown_counts() -> None:
    tasks = load_tasks()
    results = evaluate(tasks, make_predictor("identity"))
    level1 = {row["group"]: row["tasks"] for row in summarize(results, 1)}
    assert level1 == dict(Counter(task.taxonomy[0] for task in tasks))
    level2 = {row["group"]: row["tasks"] for row in summarize(results, 2)}
    assert level2 == dict(Counter("/".join(task.taxonomy[:2]) for task in tasks))
    assert sum(level2.values()) == len(tasks)
    # without a database execution match is not run
    assert all(row["execution_match"] is None for row in summarize(results))


def test_file_predictor_reads_jsonl(tmp_path: Path) -> None:
    tasks = load_tasks()
    path = tmp_path / "preds.jsonl"
    path.write_text("\n".join(json.dumps({"id": t.id, "sql": t.references[-1]}) for t in tasks))
    results = evaluate(tasks, make_predictor(f"file:{path}"))
    assert all(result.scores["graph_match"] for result in results)


def test_an_engine_that_went_away_scores_nothing_and_names_the_task() -> None:
    """A real outage: the task's database backend closed under the evaluation answers every
    statement "unavailable". That is nobody's wrong answer: no score, an error naming the task."""
    task = load_tasks()[0]
    with DemoBackends() as backends:
        backend = backends(task.dataset, task.db_id, task.dialect)
        assert score_task(task, task.references[0], backend, None).scores["execution_match"]
        backend.close()
        with pytest.raises(EngineUnavailableError) as raised:
            score_task(task, task.references[0], backend, None)
    assert str(raised.value).startswith(f"debug task {task.id}: the prediction could not run")
