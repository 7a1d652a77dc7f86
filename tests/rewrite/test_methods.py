"""polysql.rewrite.methods: every adapter answers exactly one MethodAnswer kind.

External commands are real subprocesses (small Python scripts written per test), sqlglot's
optimizer output is executed on DuckDB next to the input to check it returns the same rows, and
the specs build the methods the CLI would.
"""

from __future__ import annotations

import json
import shlex
import sys
import textwrap
import time
from pathlib import Path

import duckdb
import pytest
import sqlglot
from sqlglot import exp

from polysql.analysis.rewrite.model import ANSWER_KINDS, MethodAnswer
from polysql.backends import catalog
from polysql.backends.base import EngineInfo
from polysql.core.errors import ConfigError
from polysql.datasets.rewrite.cases import Contract, DatabaseRef, RewriteCase
from polysql.llm.client import ModelConfig
from polysql.rewrite.methods import (
    CallableMethod,
    CommandMethod,
    LLMRewriteMethod,
    MethodRequest,
    engine_display_name,
    identity_method,
    make_method,
    no_rewrite_method,
    schema_mapping,
    sqlglot_optimize_method,
)

SCHEMA = """\
CREATE TABLE customers (
  id INTEGER NOT NULL,
  name VARCHAR,
  city VARCHAR,
  PRIMARY KEY (id)
);

CREATE TABLE orders (
  id INTEGER NOT NULL,
  customer_id INTEGER,
  total DECIMAL(10, 2),
  PRIMARY KEY (id)
);
CREATE INDEX orders_customer ON orders (customer_id);
"""
ROWS = """\
INSERT INTO customers VALUES (1, 'Ann', 'Oslo'), (2, 'Bob', 'Rome'), (3, 'Cy', NULL),
  (4, 'Dee', 'Oslo');
INSERT INTO orders VALUES (10, 1, 5.50), (11, 1, 4.50), (12, 2, 7.00), (13, 4, NULL),
  (14, NULL, 3.00);
"""
CORRELATED = (
    "SELECT c.name, (SELECT SUM(o.total) FROM orders o WHERE o.customer_id = c.id) AS spent "
    "FROM customers c WHERE c.city IN (SELECT city FROM customers WHERE name LIKE 'A%')"
)
UNQUALIFIED_JOIN = (
    "SELECT name, total FROM customers JOIN orders ON customers.id = orders.customer_id "
    "WHERE total > 4 AND 1 = 1"
)


def make_case(sql: str = "SELECT 1", *, dialect: str = "duckdb", engine: str = "duckdb",
              case_id: str = "c-001") -> RewriteCase:
    return RewriteCase(
        id=case_id, pool="unit", dialect=dialect, engine=engine, path=Path("/nonexistent"),
        input_sql=sql, references=("SELECT 'the reference, never shown'",),
        database=DatabaseRef(kind="setup_sql", path=None), contract=Contract(row_order="bag"),
        provenance={}, tags=(), description="", timeout=10.0, opportunity="")


def write_script(folder: Path, name: str, body: str) -> list[str]:
    path = folder / name
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return [sys.executable, str(path)]


# -- the external command ---------------------------------------------------------------------


ECHO_REWRITER = """\
import json, sys
request = json.load(sys.stdin)
# answer with the request it saw, so the test can check what a method is shown
print(json.dumps({"status": "rewrite", "sql": request["sql"].replace("1 = 1 AND ", ""),
                  "message": "dropped a tautology", "meta": {"seen": request}}))
"""


def test_command_gets_the_request_and_its_rewrite_is_read(tmp_path: Path) -> None:
    argv = write_script(tmp_path, "rewriter.py", ECHO_REWRITER)
    case = make_case("SELECT a FROM t WHERE 1 = 1 AND a > 2", dialect="postgres",
                     engine="postgres", case_id="pg-007")
    answer = CommandMethod(argv, timeout=60)(case, SCHEMA)
    assert answer.kind == "rewrite"
    assert answer.sql == "SELECT a FROM t WHERE a > 2"
    assert answer.message == "dropped a tautology"
    seen = answer.meta["seen"]
    # exactly the protocol's keys: the reference rewrites are never sent
    assert seen == {"id": "pg-007", "dialect": "postgres", "engine": "postgres",
                    "sql": case.input_sql, "schema": SCHEMA}
    assert answer.meta["returncode"] == 0


@pytest.mark.parametrize(("reply", "kind", "message"), [
    ({"status": "no_rewrite", "message": "already optimal"}, "no_rewrite", "already optimal"),
    ({"status": "no_rewrite", "sql": None}, "no_rewrite", None),
    ({"status": "source_acceptance_failure", "message": "cannot parse PIVOT"},
     "source_acceptance_failure", "cannot parse PIVOT"),
    ({"status": "error", "message": "out of credits"}, "method_error",
     "the method reported an error: out of credits"),
])
def test_command_statuses_map_to_answer_kinds(tmp_path: Path, reply: dict[str, object],
                                              kind: str, message: str | None) -> None:
    argv = write_script(tmp_path, "answer.py", f"""\
        import json, sys
        sys.stdin.read()
        print(json.dumps({reply!r}))
    """)
    answer = CommandMethod(argv, timeout=60)(make_case(), SCHEMA)
    assert (answer.kind, answer.message, answer.sql) == (kind, message, None)


@pytest.mark.parametrize(("body", "expected"), [
    ("print('SELECT 2')", "command output is not JSON"),
    ("print('{\"status\": \"rewrite\"')", "command output is not JSON"),
    ("pass", "command printed nothing on stdout"),
    ("print(json.dumps(['rewrite', 'SELECT 2']))", "expected a JSON object, got list"),
    ("print(json.dumps({'status': 'done', 'sql': 'SELECT 2'}))", "'status' must be one of"),
    ("print(json.dumps({'status': 'rewrite'}))", "status 'rewrite' needs a non-empty string"),
    ("print(json.dumps({'status': 'rewrite', 'sql': '  '}))", "needs a non-empty string 'sql'"),
    ("print(json.dumps({'status': 'no_rewrite', 'sql': 'SELECT 2'}))",
     "status 'no_rewrite' must not carry 'sql'"),
    ("print(json.dumps({'status': 'rewrite', 'query': 'SELECT 2'}))", "unknown key(s) 'query'"),
    ("print(json.dumps({'status': 'no_rewrite', 'message': 7}))", "'message' must be a string"),
    ("print(json.dumps({'status': 'no_rewrite', 'meta': [1]}))", "'meta' must be an object"),
])
def test_command_output_off_protocol_is_a_method_error(tmp_path: Path, body: str,
                                                       expected: str) -> None:
    argv = write_script(tmp_path, "bad.py", f"import json, sys\nsys.stdin.read()\n{body}\n")
    answer = CommandMethod(argv, timeout=60)(make_case(), SCHEMA)
    assert answer.kind == "method_error"
    assert expected in (answer.message or "")


def test_command_exit_code_and_stderr_tail_are_reported(tmp_path: Path) -> None:
    argv = write_script(tmp_path, "crash.py", """\
        import json, sys
        sys.stdin.read()
        print(json.dumps({"status": "rewrite", "sql": "SELECT 2"}))  # ignored: the exit code wins
        print("x" * 5000, file=sys.stderr)
        print("Traceback: the model server is down", file=sys.stderr)
        sys.exit(3)
    """)
    answer = CommandMethod(argv, timeout=60)(make_case(), SCHEMA)
    assert answer.kind == "method_error"
    assert answer.message is not None
    assert answer.message.startswith("command exited with code 3; stderr ends with: ...")
    assert answer.message.endswith("Traceback: the model server is down")
    assert len(answer.meta["stderr"]) < 1000  # a tail, not the whole stream


def test_command_timeout_ends_the_whole_process_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    argv = write_script(tmp_path, "slow.py", f"""\
        import subprocess, sys
        sys.stdin.read()
        print("thinking hard", file=sys.stderr, flush=True)
        # a child of its own, as a wrapper script would start: it must not outlive the timeout
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        open({str(pid_file)!r}, "w").write(str(child.pid))
        child.wait()
    """)
    answer = CommandMethod(argv, timeout=1.5)(make_case(), SCHEMA)
    assert answer.kind == "method_error"
    assert answer.message == "command timed out after 1.5s; stderr ends with: thinking hard"
    grandchild = int(pid_file.read_text())
    assert _ends(grandchild), "the command's own child survived the timeout"


def _ends(pid: int) -> bool:
    """Whether process ``pid`` is gone (or a zombie waiting for its reaper), polling briefly."""
    for _ in range(100):
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return True
        if state == "Z":
            return True
        time.sleep(0.05)
    return False


def test_command_that_cannot_start_is_a_method_error(tmp_path: Path) -> None:
    answer = CommandMethod([str(tmp_path / "no-such-rewriter")], timeout=5)(make_case(), SCHEMA)
    assert answer.kind == "method_error"
    assert "could not be started" in (answer.message or "")


def test_command_that_ignores_stdin_still_answers(tmp_path: Path) -> None:
    # exits before reading a large request: the broken pipe is not an error of the method
    argv = write_script(tmp_path, "deaf.py",
                        "import json\nprint(json.dumps({'status': 'no_rewrite'}))\n")
    answer = CommandMethod(argv, timeout=60)(make_case(), SCHEMA * 5000)
    assert answer.kind == "no_rewrite"


@pytest.mark.parametrize("argv", [[], "python rewriter.py", ["python", 3]])
def test_command_needs_an_argument_list(argv: object) -> None:
    with pytest.raises(ConfigError, match="non-empty list of arguments"):
        CommandMethod(argv)  # type: ignore[arg-type]


@pytest.mark.parametrize("timeout", [0, -1, float("nan"), float("inf")])
def test_command_needs_a_positive_timeout(timeout: float) -> None:
    with pytest.raises(ConfigError, match="timeout must be positive"):
        CommandMethod(["true"], timeout)


# -- the Python callable ------------------------------------------------------------------------


def test_callable_sees_only_the_request() -> None:
    seen: list[MethodRequest] = []

    def rewriter(request: MethodRequest) -> str:
        seen.append(request)
        return request.sql.upper()

    case = make_case("select a from t", dialect="mysql", engine="mariadb", case_id="my-3")
    answer = CallableMethod(rewriter)(case, SCHEMA)
    assert answer.kind == "rewrite" and answer.sql == "SELECT A FROM T"
    assert seen == [MethodRequest(id="my-3", dialect="mysql", engine="mariadb",
                                  sql="select a from t", schema=SCHEMA)]
    assert not hasattr(seen[0], "references")


def test_callable_return_values() -> None:
    case = make_case()
    assert CallableMethod(lambda request: None)(case, SCHEMA).kind == "no_rewrite"
    given = MethodAnswer("source_acceptance_failure", message="no PIVOT support")
    assert CallableMethod(lambda request: given)(case, SCHEMA) is given
    empty = CallableMethod(lambda request: "   ", name="blank")(case, SCHEMA)
    assert (empty.kind, empty.message) == ("method_error", "blank returned an empty query")
    wrong = CallableMethod(lambda request: 42, name="answer")(case, SCHEMA)
    assert wrong.kind == "method_error"
    assert wrong.message is not None and wrong.message.startswith("answer returned int")


def test_callable_exception_is_a_method_error() -> None:
    def broken(request: MethodRequest) -> str:
        raise KeyError("schema")

    answer = CallableMethod(broken)(make_case(), SCHEMA)
    assert answer.kind == "method_error"
    assert answer.message is not None
    assert "broken raised KeyError" in answer.message and "'schema'" in answer.message


# -- baselines ----------------------------------------------------------------------------------


def test_identity_and_no_rewrite() -> None:
    case = make_case(CORRELATED)
    assert identity_method(case, SCHEMA) == MethodAnswer("rewrite", sql=CORRELATED)
    declined = no_rewrite_method(case, SCHEMA)
    assert declined.kind == "no_rewrite" and declined.sql is None


def test_schema_mapping_reads_create_tables() -> None:
    tables, skipped = schema_mapping(SCHEMA + "\nCREATE TABLE bad (id INTEGER CHECK (;\n", "duckdb")
    assert tables == {"customers": {"id": "INT", "name": "TEXT", "city": "TEXT"},
                      "orders": {"id": "INT", "customer_id": "INT", "total": "DECIMAL(10, 2)"}}
    assert skipped == ["CREATE TABLE bad (id INTEGER CHECK ("]
    untyped, _ = schema_mapping("CREATE TABLE t (a, b TEXT);", "sqlite")
    assert untyped == {"t": {"a": "UNKNOWN", "b": "TEXT"}}


@pytest.fixture(scope="module")
def shop() -> duckdb.DuckDBPyConnection:
    connection = duckdb.connect()
    connection.execute(SCHEMA + ROWS)
    return connection


def _bag(connection: duckdb.DuckDBPyConnection, sql: str) -> list[tuple[object, ...]]:
    return sorted(connection.execute(sql).fetchall(), key=repr)


@pytest.mark.parametrize("sql", [CORRELATED, UNQUALIFIED_JOIN])
def test_sqlglot_optimize_returns_an_equivalent_qualified_query(
        shop: duckdb.DuckDBPyConnection, sql: str) -> None:
    answer = sqlglot_optimize_method(make_case(sql), SCHEMA)
    assert answer.kind == "rewrite" and answer.sql is not None
    assert answer.meta["schema_used"] is True
    assert answer.sql != sql
    parsed = sqlglot.parse_one(answer.sql, read="duckdb")
    # every column is qualified by its table or alias now (the optimizer's qualify step)
    columns = list(parsed.find_all(exp.Column))
    assert columns and all(column.table for column in columns)
    # and it returns the input's rows on a real database
    assert _bag(shop, answer.sql) == _bag(shop, sql)


def test_sqlglot_optimize_writes_the_cases_dialect() -> None:
    answer = sqlglot_optimize_method(make_case(UNQUALIFIED_JOIN, dialect="mysql",
                                               engine="mysql"), SCHEMA)
    assert answer.kind == "rewrite" and answer.sql is not None
    assert "`orders`.`total`" in answer.sql
    sqlglot.parse_one(answer.sql, read="mysql")


def test_sqlglot_optimize_without_a_covering_schema() -> None:
    # no CREATE TABLE for t: the optimizer runs schema-less, which works for qualified columns...
    qualified = sqlglot_optimize_method(make_case("SELECT t.a FROM t WHERE NOT NOT t.a > 1"), "")
    assert qualified.kind == "rewrite" and qualified.meta["schema_used"] is False
    assert qualified.sql is not None and "NOT" not in qualified.sql.upper()
    # ...and fails as a method error when a column cannot be placed without one
    ambiguous = sqlglot_optimize_method(make_case("SELECT a FROM t JOIN u ON t.k = u.k"), "")
    assert ambiguous.kind == "method_error"
    assert ambiguous.message is not None
    assert ambiguous.message.startswith("sqlglot's optimizer failed: OptimizeError")


@pytest.mark.parametrize(("sql", "why"), [
    ("SELEC name FROM WHERE", "sqlglot cannot parse the input as duckdb"),
    ("SELECT * FROM (", "sqlglot cannot parse the input as duckdb"),
    ("SELECT 1; SELECT 2", "the input holds 2 statements"),
    ("INSERT INTO t VALUES (1)", "reads the input as a INSERT, not a query"),
    ("", "the input holds 0 statements"),
])
def test_sqlglot_optimize_refuses_what_it_cannot_read(sql: str, why: str) -> None:
    answer = sqlglot_optimize_method(make_case(sql), SCHEMA)
    assert answer.kind == "source_acceptance_failure"
    assert why in (answer.message or "")


# -- specs --------------------------------------------------------------------------------------


def test_make_method_baselines() -> None:
    assert make_method("identity") == ("identity", identity_method)
    assert make_method(" no-rewrite ") == ("no-rewrite", no_rewrite_method)
    assert make_method("sqlglot-optimize") == ("sqlglot-optimize", sqlglot_optimize_method)


def test_make_method_command(tmp_path: Path) -> None:
    script = tmp_path / "my rewriter.py"
    script.write_text(ECHO_REWRITER, encoding="utf-8")
    spec = f"cmd:{shlex.quote(sys.executable)} {shlex.quote(str(script))}"
    name, method = make_method(spec, command_timeout=30)
    assert name == f"cmd:{shlex.join([sys.executable, str(script)])}"
    assert isinstance(method, CommandMethod) and method.timeout == 30
    assert method(make_case("SELECT x FROM t WHERE 1 = 1 AND x"), SCHEMA).sql == \
        "SELECT x FROM t WHERE x"


def test_make_method_python(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "unit_rewriters.py").write_text(textwrap.dedent("""\
        def lower(request):
            return request.sql.lower()

        class Holder:
            @staticmethod
            def decline(request):
                return None

        NOT_CALLABLE = 3
    """), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    name, method = make_method("python:unit_rewriters:lower")
    assert name == "python:unit_rewriters:lower"
    assert method(make_case("SELECT A FROM T"), SCHEMA).sql == "select a from t"
    _, nested = make_method("python:unit_rewriters:Holder.decline")
    assert nested(make_case(), SCHEMA).kind == "no_rewrite"
    with pytest.raises(ConfigError, match="has no 'missing'"):
        make_method("python:unit_rewriters:missing")
    with pytest.raises(ConfigError, match="is not callable"):
        make_method("python:unit_rewriters:NOT_CALLABLE")
    with pytest.raises(ConfigError, match="cannot import module 'no_such_module_xyz'"):
        make_method("python:no_such_module_xyz:f")
    with pytest.raises(ConfigError, match="needs <module>:<function>"):
        make_method("python:unit_rewriters")


def test_make_method_llm_configs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = ModelConfig(name="local", base_url="http://127.0.0.1:9/v1", model="m")
    name, method = make_method("llm:local", model_config=config)
    assert name == "llm:local" and isinstance(method, LLMRewriteMethod)
    assert method.client.config is config
    assert make_method("llm:local", model_config={"local": config})[1].client.config is config
    toml = tmp_path / "polysql.toml"
    toml.write_text('[models.local]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\n'
                    '[models.hosted]\nbase_url = "https://api.example.com/v1"\nmodel = "big"\n'
                    'api_key_env = "POLYSQL_TEST_UNSET_KEY"\n', encoding="utf-8")
    assert make_method("llm:local", model_config=toml)[1].client.config.model == "m"
    with pytest.raises(ConfigError, match="unknown model 'other': the model config declares "
                                          "hosted, local"):
        make_method("llm:other", model_config=toml)
    monkeypatch.delenv("POLYSQL_TEST_UNSET_KEY", raising=False)
    with pytest.raises(ConfigError, match=r"\$POLYSQL_TEST_UNSET_KEY, which is not set"):
        make_method("llm:hosted", model_config=toml)
    with pytest.raises(ConfigError, match="was given the config of model 'local'"):
        make_method("llm:other", model_config=config)
    with pytest.raises(ConfigError, match="needs a model name"):
        make_method("llm:", model_config=config)
    monkeypatch.chdir(tmp_path)  # the default config file is ./polysql.toml
    assert make_method("llm:local")[1].client.config.base_url == "http://127.0.0.1:9/v1"


@pytest.mark.parametrize("spec", ["sqlglot", "gold", "cmd:", "cmd:'unclosed", "file:x.jsonl",
                                  ""])
def test_make_method_rejects_unknown_specs(spec: str) -> None:
    with pytest.raises(ConfigError) as raised:
        make_method(spec)
    message = str(raised.value)
    if spec in ("cmd:", "cmd:'unclosed"):
        assert "cmd" in message
    else:
        for form in ("identity", "no-rewrite", "sqlglot-optimize", "cmd:<", "llm:<", "python:<"):
            assert form in message


def test_every_adapter_answers_a_known_kind(tmp_path: Path) -> None:
    argv = write_script(tmp_path, "ok.py", ECHO_REWRITER)
    case = make_case(UNQUALIFIED_JOIN)
    for method in (identity_method, no_rewrite_method, sqlglot_optimize_method,
                   CommandMethod(argv, 60), CallableMethod(lambda r: r.sql)):
        assert method(case, SCHEMA).kind in ANSWER_KINDS


def test_request_json_is_what_commands_read() -> None:
    request = MethodRequest.of(make_case("SELECT 1"), "CREATE TABLE t (a INT);")
    assert json.loads(json.dumps(request.to_dict())) == {
        "id": "c-001", "dialect": "duckdb", "engine": "duckdb", "sql": "SELECT 1",
        "schema": "CREATE TABLE t (a INT);"}


@pytest.mark.parametrize("info", catalog.infos(), ids=lambda info: info.name)
def test_a_case_engine_is_named_as_its_engine_declares(info: EngineInfo) -> None:
    for alias in info.aliases:
        assert engine_display_name(alias, info.dialect) == info.display(alias)
        assert engine_display_name(alias.upper(), info.dialect) == info.display(alias)
    for scheme in info.schemes:
        assert engine_display_name(f"{scheme}+driver://user@host/db", "ansi") == info.display(scheme)
    assert engine_display_name("mariadb", "mysql") == "MariaDB"
    # an engine polysql does not know is named after the case's dialect
    assert engine_display_name("warehouse://host/db", info.dialect) == info.display_name
