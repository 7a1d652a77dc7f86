"""A MySQL/MariaDB database polysql did not load, built here from plain SQL by the administrator:
``polysql reader create`` makes a login that can only read it, and the refusal of an
administrator's login is worded as PostgreSQL words it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from click.testing import CliRunner
from polysql_testkit import mysql_fixtures as fx
from sqlalchemy.engine import URL, make_url

import polysql
from polysql.backends._common.readers import not_loaded, privileged_login_refusal
from polysql.cli.main import main
from polysql.core.errors import EngineError

pytestmark = pytest.mark.mysql

STATEMENTS = (
    "CREATE TABLE invoice (id integer PRIMARY KEY, customer varchar(20) NOT NULL, "
    "total decimal(10, 2))",
    "INSERT INTO invoice VALUES (1, 'Ann', 10.50), (2, 'Bob', NULL), (3, 'Zoe', 7.25)",
)


@pytest.fixture(scope="module")
def existing() -> Iterator[tuple[URL, str]]:
    admin = fx.server_url()
    database = fx.unique("team_db")
    conn = fx.admin_connection(admin)
    try:
        with conn.cursor() as cur:
            cur.execute(f"CREATE DATABASE `{database}`")
            cur.execute(f"USE `{database}`")
            for statement in STATEMENTS:
                cur.execute(statement)
        conn.commit()
        yield admin, database
    finally:
        with conn.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS `{database}`")
        conn.close()


def count(admin: URL, database: str) -> int:
    conn = fx.admin_connection(admin)
    try:
        with conn.cursor() as cur:
            cur.execute(f"SELECT count(*) FROM `{database}`.invoice")
            return int(cur.fetchone()[0])
    finally:
        conn.close()


def reader_cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["reader", *args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_an_administrator_login_is_refused_in_the_shared_words(existing: tuple[URL, str]) -> None:
    admin, database = existing
    with pytest.raises(EngineError) as refused:
        polysql.connect(admin.set(database=database))
    message = str(refused.value)
    user = admin.username or "root"
    prefix = privileged_login_refusal(user, ["X"], "")
    assert message.startswith(prefix.split("X")[0])
    assert not_loaded(database, "polysql_meta") in message
    assert f"`polysql reader create URL --database {database}`" in message


def test_reader_create_makes_a_login_that_only_reads_and_drop_removes_it(
        existing: tuple[URL, str]) -> None:
    admin, database = existing
    admin_text = admin.render_as_string(hide_password=False)
    login = fx.unique("team_cli")
    code, out, err = reader_cli("create", admin_text, "--database", database, "--login", login)
    assert code == 0, err
    url = out.strip()
    assert make_url(url).username == login and make_url(url).database == database
    with polysql.connect(url) as backend:
        assert backend.execute("SELECT count(*) FROM invoice").rows == [(3,)]
        refused = backend.execute("DELETE FROM invoice")
        assert refused.error is not None and refused.error.kind == "forbidden"
    # the screen off: the login's own rights still hold
    with polysql.connect(url, screen=False) as unscreened:
        assert not unscreened.execute("DELETE FROM invoice").ok
    assert count(admin, database) == 3

    code, _, err = reader_cli("drop", admin_text, "--login", login)
    assert code == 0 and f"dropped the login {login}" in err
    assert not fx.account_exists(admin, login)
    code, _, err = reader_cli("drop", admin_text, "--login", login)
    assert code == 0 and "there is no login" in err


def test_reader_create_for_a_database_that_is_not_there_is_an_error(
        existing: tuple[URL, str]) -> None:
    admin, database = existing
    code, _, err = reader_cli("create", admin.render_as_string(hide_password=False),
                              "--database", database + "_missing", "--login", fx.unique("t"))
    assert code != 0
    assert f"there is no database '{database}_missing'" in err


def test_reader_create_never_takes_over_an_account_that_holds_more(
        existing: tuple[URL, str]) -> None:
    """The administrator's own login, or an account that may write, is refused as the reader
    login: it keeps its grants and its password."""
    admin, database = existing
    admin_text = admin.render_as_string(hide_password=False)
    code, _, err = reader_cli("create", admin_text, "-d", database, "--login",
                              admin.username or "root")
    assert code != 0 and "the administrator this URL logs in as" in err
    writer = fx.unique("team_writer")
    conn = fx.admin_connection(admin)
    try:
        with conn.cursor() as cur:
            cur.execute(f"CREATE USER '{writer}'@'%' IDENTIFIED BY 'their-own'")
            cur.execute(f"GRANT SELECT, INSERT ON `{database}`.* TO '{writer}'@'%'")
        code, _, err = reader_cli("create", admin_text, "-d", database, "--login", writer)
        assert code != 0 and "holds INSERT" in err
        # still theirs: the old password logs in
        with polysql.connect(admin.set(username=writer, password="their-own",
                                       database=database), read_only=False) as own:
            assert own.version()
    finally:
        with conn.cursor() as cur:
            cur.execute(f"DROP USER IF EXISTS '{writer}'@'%'")
        conn.close()
