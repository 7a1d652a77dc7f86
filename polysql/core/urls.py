"""Engine URLs: SQLAlchemy's URL grammar (``scheme[+driver]://user:pw@host:port/database?k=v``)."""

from __future__ import annotations

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from polysql.core.errors import ConfigError


def parse_url(url: str | URL) -> URL:
    """Parse an engine URL; a clear ConfigError when it is not one."""
    if isinstance(url, URL):
        return url
    try:
        return make_url(url)
    except (ArgumentError, ValueError) as exc:  # ValueError: a port that is not a number
        raise ConfigError(
            f"cannot parse engine URL {url!r}: expected scheme://..., e.g. "
            "'sqlite:///path/to/db.sqlite' or 'duckdb:///path/to/db.duckdb'"
        ) from exc


def without_database(url: URL) -> URL:
    """``url`` with no database part. (``URL.set(database=None)`` leaves it as it is: ``set``
    skips every argument given as None.)"""
    return URL.create(url.drivername, username=url.username, password=url.password,
                      host=url.host, port=url.port, database=None, query=url.query)
