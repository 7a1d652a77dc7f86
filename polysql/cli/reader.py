"""``polysql reader create | drop``: a SELECT-only login for databases polysql did not load.

A team that has its benchmark on a server already evaluates there through a login that can only
read (``--engines pg=postgresql://LOGIN:PASSWORD@host/{db_id}``). This makes such a login, as the
administrator the URL names, and prints the URL to evaluate with.
"""

from __future__ import annotations

import click
from rich.markup import escape

from polysql.cli.console import console, stdout
from polysql.engines.copies import DB_ID_PLACEHOLDER
from polysql.engines.registry import backend_class, parse_url

DEFAULT_LOGIN = "polysql_ro"


@click.group("reader")
def reader_group() -> None:
    """Create or drop a SELECT-only login for existing databases."""


@reader_group.command("create")
@click.argument("url")
@click.option("--database", "-d", "databases", multiple=True, required=True,
              help="An existing database the login may read (repeat for several).")
@click.option("--login", default=DEFAULT_LOGIN, show_default=True, help="The login's name.")
def reader_create(url: str, databases: tuple[str, ...], login: str) -> None:
    """Create LOGIN, which may only read the given databases, as the administrator URL names,
    and print the URL evaluated SQL should use. Run again (with more databases): the login gets
    a new password and the new grants."""
    admin = parse_url(url)
    password = backend_class(admin).create_reader(admin, login, list(dict.fromkeys(databases)))
    database = databases[0] if len(set(databases)) == 1 else DB_ID_PLACEHOLDER
    reader = admin.set(username=login, password=password, database=database)
    # the URL is the result (stdout, password included: it is what was asked for); the note
    # goes to stderr, so `URL=$(polysql reader create ...)` captures the URL alone
    text = reader.render_as_string(hide_password=False).replace("%7Bdb_id%7D", DB_ID_PLACEHOLDER)
    stdout.print(escape(text), highlight=False, soft_wrap=True)
    console.print(f"{escape(login)} may SELECT in {escape(', '.join(dict.fromkeys(databases)))} "
                  "and nothing else; sweep with --engines NAME=URL, writing {db_id} in place of "
                  "the database to evaluate each dataset database on its namesake",
                  highlight=False)


@reader_group.command("drop")
@click.argument("url")
@click.option("--login", default=DEFAULT_LOGIN, show_default=True, help="The login to drop.")
def reader_drop(url: str, login: str) -> None:
    """Drop LOGIN and every grant it holds."""
    admin = parse_url(url)
    if backend_class(admin).drop_reader(admin, login):
        console.print(f"dropped the login {escape(login)}", highlight=False)
    else:
        console.print(f"there is no login {escape(login)} to drop", highlight=False)
