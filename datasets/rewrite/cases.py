"""Rewrite case packages: one directory per case, holding a query, its reference rewrites, the
database they run on and the contract a checker compares their results under.

Layout (see docs/rewrite-cases.md)::

    <pool>/<case_id>/
        case.yaml                    id, pool, dialect, engine, database, contract, provenance, ...
        sql/benchmark_input.sql      the query to rewrite (one statement)
        sql/reference_rewrite_01.sql a known good rewrite (one statement); _02, _03... optional
        schema/setup.sql             DDL + data run into a fresh database (or schema/source.sqlite)
        rewrite_opportunity.md       what the rewrite exploits

:func:`load_case` and :func:`load_pool` validate everything they read and report every problem at
once, each with its file and field, so an author fixes a case in one pass. Which engines and
dialects a case may name is not theirs to know (datasets know no engine): the caller passes a
:class:`CaseEngines`, which the rewrite task builds from the installed engines
(:mod:`polysql.rewrite.cases`, which also scaffolds new cases).
"""

from __future__ import annotations

import contextlib
import difflib
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import sqlglot
import sqlglot.errors
import yaml
from sqlglot import exp
from sqlglot.tokens import TokenType

from polysql.core.errors import DatasetError
from polysql.datasets.demo.generate import DB_ID
from polysql.datasets.registry import list_datasets

ROW_ORDERS: tuple[str, ...] = ("bag", "ordered", "auto")
# Checks a case may ask for on top of result equality; the checker gives each its meaning:
#   same_column_names  the rewrite's result columns carry the input's names, in order
#   same_column_types  the rewrite's result columns have the input's types, in order
#   same_row_count     the rewrite returns as many rows as the input (a cheap early verdict)
KNOWN_CHECKS: tuple[str, ...] = ("same_column_names", "same_column_types", "same_row_count")
#: the pools shipped with polysql: pools/<pool>/<case>
BUNDLED_ROOT = Path(__file__).resolve().parent / "pools"

DEFAULT_TIMEOUT = 60.0

CASE_FILE = "case.yaml"
INPUT_FILE = "sql/benchmark_input.sql"
OPPORTUNITY_FILE = "rewrite_opportunity.md"
SETUP_SQL_FILE = "schema/setup.sql"
SQLITE_FILE = "schema/source.sqlite"

#: what a case id or a pool name may be made of
NAME = re.compile(r"[a-z0-9_-]+")
_REFERENCE_NAME = re.compile(r"reference_rewrite_(\d{2})\.sql")
_TODO = re.compile(r"\bTODO\b")
_SQLITE_MAGIC = b"SQLite format 3\x00"

_TOP_KEYS = ("id", "pool", "dialect", "engine", "database", "contract", "provenance", "tags",
             "description", "timeout")
_REQUIRED_TOP_KEYS = ("id", "pool", "dialect", "engine", "database", "contract", "provenance")
_DATABASE_KEYS = ("setup_sql", "sqlite", "dataset", "db_id")
_CONTRACT_KEYS = ("row_order", "numeric_tolerance", "extra_checks")
_TOLERANCE_KEYS = ("relative", "absolute")
_PROVENANCE_KEYS = ("author", "source", "license", "created", "notes")
_REQUIRED_PROVENANCE_KEYS = ("author", "source", "license", "created")


@dataclass(frozen=True, slots=True)
class CaseEngines:
    """What a case's ``engine`` and ``dialect`` are checked against: the engines that can run
    cases here. A case whose SQL is written in one dialect but runs on an engine of another is a
    mistake, not a test."""

    #: the dialects a case may be written in
    dialects: tuple[str, ...]
    #: the engine names a case may give (a case may also give an engine URL)
    names: tuple[str, ...]
    #: an engine name or URL -> the dialect that engine speaks; None when no engine serves it
    dialect_of: Callable[[str], str | None]


@dataclass(frozen=True, slots=True)
class Contract:
    """How a rewrite's result is compared with the input's."""

    row_order: str  # bag | ordered | auto
    relative: float = 0.0
    absolute: float = 0.0
    extra_checks: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class DatabaseRef:
    """Where a case's database comes from.

    ``setup_sql``: ``path`` is a script (in the case's dialect) to run into a fresh database on the
    case's engine. ``sqlite``: ``path`` is a SQLite file to load into the engine. ``dataset``:
    the SQLite database ``db_id`` of the polysql dataset spec ``dataset`` (e.g. demo / retail).
    """

    kind: str
    path: Path | None = None
    dataset: str | None = None
    db_id: str | None = None

    def file_url(self) -> str | None:
        """The URL of the database file a ``sqlite`` case ships, or None for other kinds."""
        if self.kind == "sqlite" and self.path is not None:
            return f"sqlite:///{self.path}"
        return None


@dataclass(frozen=True, slots=True)
class RewriteCase:
    """One validated case package."""

    id: str
    pool: str
    dialect: str
    engine: str
    path: Path
    input_sql: str
    references: tuple[str, ...]
    database: DatabaseRef
    contract: Contract
    provenance: dict[str, Any]
    tags: tuple[str, ...]
    description: str
    timeout: float
    opportunity: str
    # What row_order resolves to for this input: auto is ordered only under an outermost ORDER BY
    rows_ordered: bool = False

    def setup_statements(self) -> tuple[str, ...]:
        """The statements of ``schema/setup.sql`` as written, one per entry (none for the other
        database kinds)."""
        if self.database.kind != "setup_sql" or self.database.path is None:
            return ()
        return split_statements(self.database.path.read_text(encoding="utf-8"), self.dialect)


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with a case: the case folder, the file in it, and what is wrong."""

    case_dir: Path
    file: str
    message: str

    def render(self, root: Path | None = None) -> str:
        where = self.file
        if root is not None and self.case_dir != root and self.case_dir.is_relative_to(root):
            where = f"{self.case_dir.relative_to(root).as_posix()}/{self.file}"
        return f"{where}: {self.message}"


class CaseValidationError(DatasetError):
    """One or more case packages are invalid; ``problems`` lists every problem found."""

    def __init__(self, message: str, problems: Iterable[Problem]) -> None:
        super().__init__(message)
        self.problems: tuple[Problem, ...] = tuple(problems)


# --- SQL helpers ---------------------------------------------------------------------------------

def has_outer_order_by(sql: str, dialect: str) -> bool:
    """Whether the statement's outermost query has ORDER BY, i.e. its row order is observable.

    An ORDER BY inside a subquery or CTE orders nothing the caller can see, so it does not count.
    """
    statement = sqlglot.parse_one(sql, read=dialect)
    return _outer_order(statement)


def _outer_order(statement: exp.Expression) -> bool:
    node = statement
    while isinstance(node, exp.Subquery):  # "(SELECT ... ) ORDER BY x" puts ORDER on the wrapper
        if node.args.get("order") is not None:
            return True
        node = node.this
    return node.args.get("order") is not None


def split_statements(sql: str, dialect: str) -> tuple[str, ...]:
    """The statements of a script as written (comments and formatting kept), split on the
    semicolons sqlglot's tokenizer sees, so semicolons inside strings or quoted names stay put."""
    tokens = sqlglot.Dialect.get_or_raise(dialect).tokenize(sql)
    pieces: list[str] = []
    start = 0
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            pieces.append(sql[start:token.start])
            start = token.end + 1
    pieces.append(sql[start:])
    statements = (piece.strip() for piece in pieces)
    return tuple(text for text in statements if text and not _only_comments(text, dialect))


def _only_comments(text: str, dialect: str) -> bool:
    return not sqlglot.Dialect.get_or_raise(dialect).tokenize(text)


def _describe_parse_error(error: Exception) -> str:
    if isinstance(error, sqlglot.errors.ParseError) and error.errors:
        first = error.errors[0]
        near = f"{first.get('start_context', '')}{first.get('highlight', '')}".strip()
        text = f"line {first.get('line')}, col {first.get('col')}: {first.get('description')}"
        return f"{text} (near {near!r})" if near else text
    return str(error).splitlines()[0] if str(error) else type(error).__name__


def _parse_script(sql: str, dialect: str) -> tuple[list[exp.Expression], str | None]:
    """(statements, None) or ([], why it does not parse)."""
    try:
        parsed = sqlglot.parse(sql, read=dialect)
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError) as error:
        return [], _describe_parse_error(error)
    return [statement for statement in parsed if statement is not None], None


# --- YAML ----------------------------------------------------------------------------------------

class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate keys: PyYAML would silently keep the last one."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode,
                       deep: bool = False) -> dict[Any, Any]:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        try:
            first = seen.get(key)
        except TypeError:
            continue  # an unhashable key: construct_mapping reports it
        if first is not None:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (first given on line {first + 1})",
                key_node.start_mark)
        seen[key] = key_node.start_mark.line
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _yaml_error_text(error: yaml.YAMLError) -> str:
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or str(error)
    context = getattr(error, "context", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    return f"invalid YAML: {where}{problem}" + (f" ({context})" if context else "")


# --- validation ----------------------------------------------------------------------------------

class _Report:
    """Collects the problems of one case."""

    def __init__(self, case_dir: Path) -> None:
        self.case_dir = case_dir
        self.problems: list[Problem] = []

    def add(self, file: str, message: str) -> None:
        self.problems.append(Problem(self.case_dir, file, message))


def _suggestion(name: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def _check_keys(report: _Report, mapping: Mapping[Any, Any], field: str, allowed: tuple[str, ...],
                required: tuple[str, ...] = ()) -> None:
    prefix = f"{field}." if field else ""
    for key in mapping:
        if key not in allowed:
            report.add(CASE_FILE, f"unknown key {prefix}{key}{_suggestion(str(key), allowed)} "
                                  f"(known: {', '.join(allowed)})")
    for key in required:
        if key not in mapping:
            report.add(CASE_FILE, f"missing required key {prefix}{key}")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _name_field(report: _Report, data: Mapping[str, Any], field: str) -> str | None:
    value = data.get(field)
    if value is None:
        return None
    if not isinstance(value, str):
        report.add(CASE_FILE, f"{field} must be a string, got {value!r} (quote it)")
        return None
    if not NAME.fullmatch(value):
        report.add(CASE_FILE, f"{field} must use only a-z, 0-9, '_' and '-', got {value!r}")
        return None
    return value


def _choice_field(report: _Report, data: Mapping[str, Any], field: str,
                  choices: tuple[str, ...]) -> str | None:
    value = data.get(field)
    if value is None:
        return None
    if not isinstance(value, str) or value not in choices:
        hint = _suggestion(value, choices) if isinstance(value, str) else ""
        report.add(CASE_FILE, f"{field} must be one of {', '.join(choices)}, got {value!r}{hint}")
        return None
    return value


def _check_engine(report: _Report, data: Mapping[str, Any], dialect: str | None,
                  engines: CaseEngines) -> str | None:
    engine = data.get("engine")
    if engine is None:
        return None
    if not isinstance(engine, str) or not engine.strip():
        report.add(CASE_FILE, f"engine must be an engine name or URL, got {engine!r}")
        return None
    expected = engines.dialect_of(engine)
    if expected is None:
        report.add(CASE_FILE, f"engine {engine!r} is unknown{_suggestion(engine, engines.names)} "
                              f"(use one of {', '.join(engines.names)}, or an engine URL)")
        return None
    if dialect is not None and expected != dialect:
        report.add(CASE_FILE, f"engine {engine!r} speaks the {expected} dialect but dialect is "
                              f"{dialect!r}")
    return engine


def _relative_file(report: _Report, case_dir: Path, field: str, value: Any) -> Path | None:
    """A file named relative to the case folder, which must exist inside it and be non-empty."""
    if not isinstance(value, str) or not value.strip():
        report.add(CASE_FILE, f"{field} must be a path relative to the case folder, got {value!r}")
        return None
    relative = Path(value)
    resolved = (case_dir / relative).resolve()
    if relative.is_absolute() or not resolved.is_relative_to(case_dir.resolve()):
        report.add(CASE_FILE, f"{field} must stay inside the case folder, got {value!r}")
        return None
    if not resolved.is_file():
        report.add(value, f"missing (named by case.yaml {field})")
        return None
    if resolved.stat().st_size == 0:
        report.add(value, "is empty")
        return None
    return resolved


def _check_database(report: _Report, case_dir: Path, data: Mapping[str, Any],
                    dialect: str | None) -> DatabaseRef | None:
    database = data.get("database")
    if database is None:
        return None
    if not isinstance(database, Mapping):
        report.add(CASE_FILE, "database must be a mapping: {setup_sql: schema/setup.sql}, "
                              "{sqlite: schema/source.sqlite} or {dataset: demo, db_id: retail}")
        return None
    _check_keys(report, database, "database", _DATABASE_KEYS)
    kinds = [kind for kind in ("setup_sql", "sqlite", "dataset") if kind in database]
    if len(kinds) != 1:
        given = ", ".join(kinds) if kinds else "none"
        report.add(CASE_FILE, f"database must name exactly one of setup_sql, sqlite, dataset "
                              f"(given: {given})")
        return None
    kind = kinds[0]
    if "db_id" in database and kind != "dataset":
        report.add(CASE_FILE, "database.db_id goes with database.dataset only")
    if kind == "dataset":
        return _check_dataset_ref(report, database)
    path = _relative_file(report, case_dir, f"database.{kind}", database[kind])
    if path is None:
        return None
    shown = str(database[kind])
    if kind == "sqlite":
        with path.open("rb") as handle:
            if handle.read(len(_SQLITE_MAGIC)) != _SQLITE_MAGIC:
                report.add(shown, "is not a SQLite database file")
                return None
    elif dialect is not None:
        statements, error = _parse_script(path.read_text(encoding="utf-8"), dialect)
        if error is not None:
            report.add(shown, f"does not parse as {dialect}: {error}")
            return None
        if not statements:
            report.add(shown, "holds no SQL statement")
            return None
    return DatabaseRef(kind=kind, path=path)


def _check_dataset_ref(report: _Report, database: Mapping[str, Any]) -> DatabaseRef | None:

    spec, db_id = database.get("dataset"), database.get("db_id")
    ok = True
    if not isinstance(spec, str) or not spec.strip():
        report.add(CASE_FILE,
                   f"database.dataset must be a dataset spec such as 'demo', got {spec!r}")
        ok = False
    if db_id is None:
        report.add(CASE_FILE, "database.dataset needs database.db_id (the database to use)")
        ok = False
    elif not isinstance(db_id, str) or not db_id.strip():
        report.add(CASE_FILE, f"database.db_id must be a string, got {db_id!r} (quote it)")
        ok = False
    if not ok:
        return None
    kind_name = spec.strip().partition(":")[0].partition("?")[0].lower()
    kinds = [kind.name for kind in list_datasets()]
    if ":" not in spec and "/" not in spec and kind_name not in kinds:
        report.add(CASE_FILE, f"database.dataset {spec!r} is not a known dataset"
                              f"{_suggestion(kind_name, kinds)} (known: {', '.join(kinds)}, "
                              "or KIND:PATH)")
        return None
    if kind_name == "demo" and db_id != DB_ID:
        report.add(CASE_FILE, f"database.db_id: the demo dataset has one database, {DB_ID!r}; "
                              f"got {db_id!r}")
        return None
    return DatabaseRef(kind="dataset", dataset=spec.strip(), db_id=db_id)


def _check_contract(report: _Report, data: Mapping[str, Any]) -> Contract | None:
    contract = data.get("contract")
    if contract is None:
        return None
    if not isinstance(contract, Mapping):
        report.add(CASE_FILE, "contract must be a mapping with row_order (and optionally "
                              "numeric_tolerance, extra_checks)")
        return None
    _check_keys(report, contract, "contract", _CONTRACT_KEYS, required=("row_order",))
    row_order = _choice_field(report, {"contract.row_order": contract.get("row_order")},
                              "contract.row_order", ROW_ORDERS)
    tolerance = _check_tolerance(report, contract.get("numeric_tolerance", {}))
    checks = _check_extra_checks(report, contract.get("extra_checks", []))
    if row_order is None or tolerance is None or checks is None:
        return None
    return Contract(row_order=row_order, relative=tolerance[0], absolute=tolerance[1],
                    extra_checks=checks)


def _check_tolerance(report: _Report, tolerance: Any) -> tuple[float, float] | None:
    if tolerance is None:
        tolerance = {}
    if not isinstance(tolerance, Mapping):
        report.add(CASE_FILE, f"contract.numeric_tolerance must be a mapping "
                              f"{{relative: 0, absolute: 0}}, got {tolerance!r}")
        return None
    _check_keys(report, tolerance, "contract.numeric_tolerance", _TOLERANCE_KEYS)
    values: list[float] = []
    for key in _TOLERANCE_KEYS:
        value = tolerance.get(key, 0)
        field = f"contract.numeric_tolerance.{key}"
        if not _is_number(value) or not math.isfinite(value):
            report.add(CASE_FILE, f"{field} must be a number, got {value!r}")
        elif value < 0:
            report.add(CASE_FILE, f"{field} must not be negative, got {value!r}")
        else:
            values.append(float(value))
    return (values[0], values[1]) if len(values) == 2 else None


def _check_extra_checks(report: _Report, checks: Any) -> tuple[str, ...] | None:
    if checks is None:
        return ()
    if not isinstance(checks, list):
        report.add(CASE_FILE, f"contract.extra_checks must be a list, got {checks!r}")
        return None
    ok = True
    for check in checks:
        if not isinstance(check, str) or check not in KNOWN_CHECKS:
            hint = _suggestion(check, KNOWN_CHECKS) if isinstance(check, str) else ""
            report.add(CASE_FILE, f"contract.extra_checks: unknown check {check!r}{hint} "
                                  f"(known: {', '.join(KNOWN_CHECKS)})")
            ok = False
    if ok and len(set(checks)) != len(checks):
        report.add(CASE_FILE, "contract.extra_checks lists a check twice")
        ok = False
    return tuple(checks) if ok else None


def _check_provenance(report: _Report, data: Mapping[str, Any]) -> dict[str, Any] | None:
    provenance = data.get("provenance")
    if provenance is None:
        return None
    if not isinstance(provenance, Mapping):
        report.add(CASE_FILE, "provenance must be a mapping with author, source, license, created")
        return None
    _check_keys(report, provenance, "provenance", _PROVENANCE_KEYS,
                required=_REQUIRED_PROVENANCE_KEYS)
    ok = True
    for key in ("author", "source", "license", "notes"):
        value = provenance.get(key)
        if key in provenance and (not isinstance(value, str) or not value.strip()):
            report.add(CASE_FILE, f"provenance.{key} must be a non-empty string, got {value!r}")
            ok = False
    source = provenance.get("source")
    if isinstance(source, str) and source != "authored" and \
            not re.match(r"https?://\S+$", source):
        report.add(CASE_FILE, f"provenance.source must be a URL (http/https) or 'authored', "
                              f"got {source!r}")
        ok = False
    created = provenance.get("created")
    # Kept as ISO text so the provenance can go into JSON results as it is
    created_text: str | None = None
    if isinstance(created, date):
        created_text = created.isoformat()
    elif isinstance(created, str):
        with contextlib.suppress(ValueError):  # reported below, with the other bad values
            created_text = date.fromisoformat(created).isoformat()
    if "created" in provenance and created_text is None:
        report.add(CASE_FILE, f"provenance.created must be a date (YYYY-MM-DD), got {created!r}")
        ok = False
    missing = any(key not in provenance for key in _REQUIRED_PROVENANCE_KEYS)
    if not ok or missing or any(key not in _PROVENANCE_KEYS for key in provenance):
        return None
    return {**provenance, "created": created_text}


def _check_tags(report: _Report, data: Mapping[str, Any]) -> tuple[str, ...] | None:
    tags = data.get("tags", [])
    if tags is None:
        return ()
    if not isinstance(tags, list) or not all(isinstance(t, str) and t.strip() for t in tags):
        report.add(CASE_FILE, f"tags must be a list of non-empty strings, got {tags!r}")
        return None
    return tuple(tags)


def _check_timeout(report: _Report, data: Mapping[str, Any]) -> float | None:
    timeout = data.get("timeout", DEFAULT_TIMEOUT)
    if not _is_number(timeout) or not math.isfinite(timeout) or timeout <= 0:
        report.add(CASE_FILE, f"timeout must be a positive number of seconds, got {timeout!r}")
        return None
    return float(timeout)


def _read_text(report: _Report, case_dir: Path, relative: str, what: str) -> str | None:
    path = case_dir / relative
    if not path.is_file():
        report.add(relative, f"missing ({what})")
        return None
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        report.add(relative, f"is not UTF-8 text ({error.reason} at byte {error.start})")
        return None
    if not text.strip():
        report.add(relative, "is empty")
        return None
    return text


def _reference_files(report: _Report, case_dir: Path) -> list[str]:
    """The reference rewrites in sql/, numbered 01, 02, ... without gaps; unexpected files in sql/
    are reported, since a misspelt name would otherwise be silently ignored."""
    sql_dir = case_dir / "sql"
    if not sql_dir.is_dir():
        return []
    numbered: dict[int, str] = {}
    expected_names = ("benchmark_input.sql", "reference_rewrite_01.sql")
    for child in sorted(sql_dir.iterdir()):
        if child.name == "benchmark_input.sql":
            continue
        match = _REFERENCE_NAME.fullmatch(child.name)
        if match and child.is_file():
            numbered[int(match.group(1))] = f"sql/{child.name}"
        else:
            report.add(f"sql/{child.name}", "unexpected file in sql/"
                                            f"{_suggestion(child.name, expected_names)} "
                                            "(sql/ holds benchmark_input.sql and "
                                            "reference_rewrite_NN.sql, NN = 01, 02, ...)")
    if not numbered:
        report.add("sql/reference_rewrite_01.sql", "missing (every case needs at least one "
                                                   "reference rewrite)")
        return []
    for number in range(1, max(numbered) + 1):
        if number not in numbered:
            report.add(f"sql/reference_rewrite_{number:02d}.sql",
                       f"missing: reference rewrites are numbered from 01 without gaps "
                       f"(found {', '.join(f'{n:02d}' for n in sorted(numbered))})")
    return [numbered[number] for number in sorted(numbered)]


def _one_query(report: _Report, relative: str, sql: str, dialect: str) -> exp.Expression | None:
    statements, error = _parse_script(sql, dialect)
    if error is not None:
        report.add(relative, f"does not parse as {dialect}: {error}")
        return None
    if len(statements) != 1:
        report.add(relative, f"must hold exactly one SQL statement, found {len(statements)}")
        return None
    statement = statements[0]
    if not isinstance(statement, exp.Query):
        kind = "an unparsed command" if isinstance(statement, exp.Command) else \
            f"a {statement.key.upper()} statement"
        report.add(relative, f"must be a query (SELECT, WITH ... SELECT, UNION, ...), "
                             f"but sqlglot reads it as {kind}")
        return None
    return statement


def _check_queries(report: _Report, dialect: str, input_sql: str | None,
                   references: dict[str, str], row_order: str | None) -> bool | None:
    """Parse the input and references; compare them. Returns whether rows compare in order."""
    canonical: dict[str, str] = {}
    input_query = None
    if input_sql is not None:
        input_query = _one_query(report, INPUT_FILE, input_sql, dialect)
        if input_query is not None:
            canonical[INPUT_FILE] = input_query.sql(dialect=dialect, comments=False)
    input_ordered = _outer_order(input_query) if input_query is not None else None
    if row_order == "ordered" and input_ordered is False:
        report.add(CASE_FILE, "contract.row_order is 'ordered' but the input has no outermost "
                              "ORDER BY, so its row order is not defined; use bag or auto, or "
                              "add ORDER BY to the input")
    rows_ordered = None if input_ordered is None else (
        row_order == "ordered" or (row_order == "auto" and input_ordered))
    for relative, sql in references.items():
        if input_sql is not None and sql.encode() == input_sql.encode():
            report.add(relative, "is byte-identical to sql/benchmark_input.sql; a reference "
                                 "rewrite must change the query")
            continue
        query = _one_query(report, relative, sql, dialect)
        if query is None:
            continue
        text = query.sql(dialect=dialect, comments=False)
        same_as = next((name for name, other in canonical.items() if other == text), None)
        if same_as is not None:
            report.add(relative, f"is the same query as {same_as} once parsed (it differs only in "
                                 "formatting or comments)")
        canonical[relative] = text
        if rows_ordered and input_ordered and not _outer_order(query):
            report.add(relative, "has no outermost ORDER BY, but the contract compares rows in "
                                 "order (the input orders its result)")
    return rows_ordered


def _check_todo(report: _Report, case_dir: Path) -> None:
    for path in sorted(case_dir.rglob("*")):
        if path.is_file() and path.suffix in (".yaml", ".sql", ".md"):
            text = path.read_text(encoding="utf-8", errors="replace")
            lines = [n for n, line in enumerate(text.splitlines(), 1) if _TODO.search(line)]
            if lines:
                report.add(path.relative_to(case_dir).as_posix(),
                           f"still has TODO markers (line {', '.join(map(str, lines))})")


def _read_case_yaml(report: _Report, case_dir: Path) -> dict[str, Any] | None:
    text = _read_text(report, case_dir, CASE_FILE, "every case needs its case.yaml")
    if text is None:
        return None
    try:
        data = yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass
    except yaml.YAMLError as error:
        report.add(CASE_FILE, _yaml_error_text(error))
        return None
    if not isinstance(data, dict):
        report.add(CASE_FILE, f"must be a mapping of keys to values, got {type(data).__name__}")
        return None
    return data


def _validate(case_dir: Path, report: _Report, strict: bool,
              engines: CaseEngines) -> RewriteCase | None:
    data = _read_case_yaml(report, case_dir)
    fields: dict[str, Any] = {}
    if data is not None:
        _check_keys(report, data, "", _TOP_KEYS, required=_REQUIRED_TOP_KEYS)
        case_id = _name_field(report, data, "id")
        if case_id is not None and case_id != case_dir.name:
            report.add(CASE_FILE, f"id {case_id!r} does not match the case folder name "
                                  f"{case_dir.name!r}")
        dialect = _choice_field(report, data, "dialect", engines.dialects)
        description = data.get("description", "")
        if not isinstance(description, str):
            report.add(CASE_FILE, f"description must be a string, got {description!r}")
        fields = {
            "id": case_id, "pool": _name_field(report, data, "pool"), "dialect": dialect,
            "engine": _check_engine(report, data, dialect, engines),
            "database": _check_database(report, case_dir, data, dialect),
            "contract": _check_contract(report, data),
            "provenance": _check_provenance(report, data),
            "tags": _check_tags(report, data), "timeout": _check_timeout(report, data),
            "description": description if isinstance(description, str) else None,
        }
    input_sql = _read_text(report, case_dir, INPUT_FILE, "the query to rewrite, one statement")
    references = {}
    for relative in _reference_files(report, case_dir):
        text = _read_text(report, case_dir, relative, "a reference rewrite")
        if text is not None:
            references[relative] = text
    opportunity = _read_text(report, case_dir, OPPORTUNITY_FILE,
                             "what the rewrite exploits, in a few sentences")
    # Without a dialect the SQL cannot be parsed; its problems show once case.yaml is fixed
    rows_ordered = None
    if fields.get("dialect") is not None:
        contract = fields["contract"]
        rows_ordered = _check_queries(report, fields["dialect"], input_sql, references,
                                      contract.row_order if contract else None)
    if strict:
        _check_todo(report, case_dir)
    if report.problems or rows_ordered is None or input_sql is None or opportunity is None:
        return None
    return RewriteCase(path=case_dir, input_sql=input_sql, references=tuple(references.values()),
                       opportunity=opportunity, rows_ordered=rows_ordered, **fields)


# --- public API ----------------------------------------------------------------------------------

def _error(problems: list[Problem], header: str, root: Path | None = None) -> CaseValidationError:
    lines = "\n".join(f"  - {problem.render(root)}" for problem in problems)
    return CaseValidationError(f"{header}:\n{lines}", problems)


def _case_problems(case_dir: Path, strict: bool,
                   engines: CaseEngines) -> tuple[RewriteCase | None, list[Problem]]:
    report = _Report(case_dir)
    case = _validate(case_dir, report, strict, engines)
    if case is None and not report.problems:  # every failure path reports; this guards that
        report.add(CASE_FILE, "could not be loaded")
    return case, report.problems


def load_case(path: str | Path, *, engines: CaseEngines, strict: bool = False) -> RewriteCase:
    """Load and validate the case package in folder ``path``; its engine and dialect must be
    among ``engines``.

    Raises :class:`CaseValidationError` (a DatasetError) listing every problem found. ``strict``
    also rejects TODO markers (a scaffolded case holds them until its author is done).
    """
    case_dir = Path(path).expanduser().absolute()
    if not case_dir.is_dir():
        raise DatasetError(f"rewrite case folder not found: {case_dir}")
    case, problems = _case_problems(case_dir, strict, engines)
    if case is None:
        raise _error(problems, f"invalid rewrite case {case_dir} ({len(problems)} problem(s))")
    return case


def _looks_like_case(folder: Path) -> bool:
    return any((folder / name).exists() for name in (CASE_FILE, "sql", OPPORTUNITY_FILE))


def _case_dirs(root: Path) -> list[Path]:
    """Every case folder under ``root`` (not descending into cases); hidden folders skipped."""
    found: list[Path] = []
    for child in sorted(root.iterdir()):
        if not child.is_dir() or child.name.startswith("."):
            continue
        if _looks_like_case(child):
            found.append(child)
        else:
            found.extend(_case_dirs(child))
    return found


def load_pool(root: str | Path, *, engines: CaseEngines,
              strict: bool = False) -> list[RewriteCase]:
    """Every case under ``root`` (``root/<pool>/<case>``, or ``root/<case>``), sorted by pool and
    id, checked against ``engines``. Problems of all cases are gathered into one
    :class:`CaseValidationError`."""
    root_dir = Path(root).expanduser().absolute()
    if not root_dir.is_dir():
        raise DatasetError(f"rewrite case root not found: {root_dir}")
    case_dirs = [root_dir] if _looks_like_case(root_dir) else _case_dirs(root_dir)
    if not case_dirs:
        raise DatasetError(f"no rewrite cases under {root_dir} (expected <pool>/<case_id>/"
                           f"{CASE_FILE})")
    cases: list[RewriteCase] = []
    problems: list[Problem] = []
    broken: set[Path] = set()
    for case_dir in case_dirs:
        case, found = _case_problems(case_dir, strict, engines)
        problems.extend(found)
        if found:
            broken.add(case_dir)
        if case is None:
            continue
        # root/<pool>/<case>: the folder a case sits in must be the pool it declares
        if case_dir.parent.parent == root_dir and case.pool != case_dir.parent.name:
            problems.append(Problem(case_dir, CASE_FILE, f"pool {case.pool!r} does not match the "
                                                         f"pool folder {case_dir.parent.name!r}"))
            broken.add(case_dir)
            continue
        cases.append(case)
    first_dir: dict[str, Path] = {}
    for case in cases:
        if case.id in first_dir:
            other = first_dir[case.id].relative_to(root_dir).as_posix()
            problems.append(Problem(case.path, CASE_FILE,
                                    f"id {case.id!r} is also used by {other}; ids must be unique"))
            broken.add(case.path)
        else:
            first_dir[case.id] = case.path
    if problems:
        raise _error(problems, f"{len(problems)} problem(s) in {len(broken)} of {len(case_dirs)} "
                               f"rewrite case(s) under {root_dir}", root_dir)
    return sorted(cases, key=lambda case: (case.pool, case.id))
