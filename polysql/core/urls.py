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
