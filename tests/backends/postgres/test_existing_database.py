"""A PostgreSQL database polysql did not load: built here from plain SQL by an administrator, as a
team that already has its benchmark on a server would have it.

Evaluated SQL runs as the URL's own login when that login can only read (no ``reader_role``
option needed); an administrator's or a writer's login is refused with the message MySQL gives,
naming what the login holds and how to get a reader."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from click.testing import CliRunner
from polysql_testkit import pg_fixtures
from sqlalchemy.engine import URL, make_url

import polysql
from polysql.backends._common.readers import not_loaded, privileged_login_refusal
from polysql.cli.main import main
from polysql.core.errors import EngineError, EngineUnavailableError

pytestmark = pytest.mark.postgres
admin_url = pg_fixtures.admin_url

SCRIPT = """
CREATE TABLE invoice (id integer PRIMARY KEY, customer text NOT NULL, total numeric(10, 2));
INSERT INTO invoice VALUES (1, 'Ann', 10.50), (2, 'Bob', NULL), (3, 'Zoë', 7.25);
"""


@dataclass(frozen=True)
class Existing:
    admin: URL
    database: str
    reader: str
    writer: str

    def url(self, user: str) -> str:
        return self.admin.set(username=user, password=None, database=self.database
                              ).render_as_string(hide_password=False)

    def rows(self) -> list[tuple[object, ...]]:
        with pg_fixtures.admin_connection(self.admin, self.database) as conn:
            return conn.execute("SELECT id, customer, total FROM invoice ORDER BY id").fetchall()


@pytest.fixture(scope="module")
def existing(admin_url: URL) -> Iterator[Existing]:
    database = pg_fixtures.unique("team_benchmark")
    reader, writer = pg_fixtures.unique("team_reader"), pg_fixtures.unique("team_writer")
    with pg_fixtures.admin_connection(admin_url, "postgres") as server:
        server.execute(f'CREATE DATABASE "{database}"')
        server.execute(f'CREATE ROLE "{reader}" LOGIN')
        server.execute(f'CREATE ROLE "{writer}" LOGIN')
    try:
        with pg_fixtures.admin_connection(admin_url, database) as conn:
            conn.execute(SCRIPT)
            # whatever the server's defaults, nobody but the owner may create objects here
            conn.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
            conn.execute(f'GRANT SELECT ON invoice TO "{reader}"')
            conn.execute(f'GRANT SELECT, INSERT ON invoice TO "{writer}"')
        yield Existing(admin_url, database, reader, writer)
    finally:
        with pg_fixtures.admin_connection(admin_url, "postgres") as server:
            server.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
            server.execute(f'DROP ROLE IF EXISTS "{reader}"')
            server.execute(f'DROP ROLE IF EXISTS "{writer}"')


def test_a_select_only_login_is_used_as_given(existing: Existing) -> None:
    with polysql.connect(existing.url(existing.reader)) as backend:
        who = backend.execute("SELECT current_user")
        assert who.ok, who.error
        assert who.rows == [(existing.reader,)]
        total = backend.execute("SELECT count(*), sum(total) FROM invoice")
        assert total.ok, total.error
        assert [tuple(map(str, row)) for row in total.rows] == [("3", "17.75")]


def test_hostile_sql_through_the_reader_changes_nothing(existing: Existing) -> None:
    before = existing.rows()
    with polysql.connect(existing.url(existing.reader)) as backend:
        for statement in ("INSERT INTO invoice VALUES (4, 'Eve', 1)", "DELETE FROM invoice",
                          "DROP TABLE invoice", "CREATE TABLE stolen AS SELECT * FROM invoice"):
            result = backend.execute(statement)
            assert not result.ok and result.error is not None, statement
            assert result.error.kind == "forbidden", (statement, result.error)
        # the screen off: the login's own rights and the read-only transaction still hold
        with polysql.connect(existing.url(existing.reader), screen=False) as unscreened:
            result = unscreened.execute("DELETE FROM invoice")
            assert not result.ok and result.error is not None
    assert existing.rows() == before


def test_an_administrator_login_is_refused_naming_its_rights(existing: Existing) -> None:
    admin = existing.admin.username or "postgres"
    with pytest.raises(EngineError) as refused:
        polysql.connect(existing.url(admin))
    message = str(refused.value)
    assert not isinstance(refused.value, EngineUnavailableError)
    assert message.startswith(f"evaluated SQL never runs as {admin!r}, which holds ")
    assert "SUPERUSER" in message
    assert f"database {existing.database!r} was not loaded by polysql" in message
    # the way out, for the database at hand
    assert f"`polysql reader create URL --database {existing.database}`" in message


def test_a_login_that_can_write_is_refused_with_the_shared_message(existing: Existing) -> None:
    with pytest.raises(EngineError) as refused:
        polysql.connect(existing.url(existing.writer))
    # the words every server engine uses (MySQL's refusal is built by the same function)
    assert str(refused.value) == privileged_login_refusal(
        existing.writer, ["INSERT on public.invoice"],
        not_loaded(existing.database, "polysql_meta on this server"), existing.database)


def test_a_login_on_a_database_that_is_not_there_is_unavailable(existing: Existing) -> None:
    url = existing.admin.set(username=existing.reader, password=None,
                             database=existing.database + "_missing")
    with pytest.raises(EngineUnavailableError, match="does not exist"):
        polysql.connect(url.render_as_string(hide_password=False))


def reader_cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["reader", *args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_reader_create_makes_a_login_that_only_reads_and_drop_removes_it(
        existing: Existing) -> None:
    admin = existing.admin.render_as_string(hide_password=False)
    login = pg_fixtures.unique("team_cli").lower()
    code, out, err = reader_cli("create", admin, "--database", existing.database, "--login", login)
    assert code == 0, err
    url = out.strip()
    assert make_url(url).username == login and make_url(url).database == existing.database
    assert f"{login} may SELECT in {existing.database} and nothing else" in err
    before = existing.rows()
    with polysql.connect(url) as backend:
        assert backend.execute("SELECT count(*) FROM invoice").rows == [(3,)]
        refused = backend.execute("DELETE FROM invoice")
        assert refused.error is not None and refused.error.kind == "forbidden"
    assert existing.rows() == before
    # again: the same login with a new password, still usable
    code, again, err = reader_cli("create", admin, "-d", existing.database, "--login", login)
    assert code == 0, err
    assert make_url(again.strip()).password != make_url(url).password
    with polysql.connect(again.strip()) as backend:
        assert backend.execute("SELECT count(*) FROM invoice").ok

    code, _, err = reader_cli("drop", admin, "--login", login)
    assert code == 0 and f"dropped the login {login}" in err
    with pg_fixtures.admin_connection(existing.admin, "postgres") as server:
        assert server.execute("SELECT 1 FROM pg_roles WHERE rolname = %s",
                              (login,)).fetchone() is None
    code, _, err = reader_cli("drop", admin, "--login", login)
    assert code == 0 and "there is no login" in err


def test_reader_create_for_a_database_that_is_not_there_is_an_error(existing: Existing) -> None:
    admin = existing.admin.render_as_string(hide_password=False)
    code, _, err = reader_cli("create", admin, "--database", existing.database + "_missing",
                              "--login", pg_fixtures.unique("team_cli").lower())
    assert code != 0
    assert f"there is no database '{existing.database}_missing'" in err


def test_reader_create_never_takes_over_a_role_that_holds_more(existing: Existing) -> None:
    """An administrator's role, or any role with administrative attributes, is refused as the
    reader login: it is someone's, and it keeps its attributes (and password)."""
    admin = existing.admin.render_as_string(hide_password=False)
    admin_user = existing.admin.username or "postgres"
    code, _, err = reader_cli("create", admin, "-d", existing.database, "--login", admin_user)
    assert code != 0 and "the administrator this URL logs in as" in err
    creator = pg_fixtures.unique("team_creator").lower()
    with pg_fixtures.admin_connection(existing.admin, "postgres") as server:
        server.execute(f'CREATE ROLE "{creator}" LOGIN CREATEDB')
    try:
        code, _, err = reader_cli("create", admin, "-d", existing.database, "--login", creator)
        assert code != 0 and "exists with administrative attributes" in err
        with pg_fixtures.admin_connection(existing.admin, "postgres") as server:
            assert server.execute("SELECT rolcreatedb FROM pg_roles WHERE rolname = %s",
                                  (creator,)).fetchone() == (True,)
    finally:
        with pg_fixtures.admin_connection(existing.admin, "postgres") as server:
            server.execute(f'DROP ROLE IF EXISTS "{creator}"')
