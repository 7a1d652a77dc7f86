"""Find the backend for an engine URL and connect to it.

Backends register through the ``polysql.backends`` entry-point group; the entry-point name is the
URL scheme it serves (``sqlite``, ``duckdb``, ``postgresql``, ...). Nothing registers as a side
effect of importing a module: a backend is imported only when a URL asks for it.
"""

from __future__ import annotations

import os
from functools import cache
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from polysql.errors import ConfigError, EngineUnavailableError, UnknownEngineError

if TYPE_CHECKING:
    from polysql.backends.base import Backend

ENTRY_POINT_GROUP = "polysql.backends"

# Short names people type on the command line (`--engines sqlite,duckdb`) -> URL for an in-memory
# or default instance. Data-bearing URLs are built by the runner from these.
ENGINE_ALIASES: dict[str, str] = {
    "sqlite": "sqlite://",
    "duckdb": "duckdb://",
    "postgres": "postgresql://",
    "postgresql": "postgresql://",
    "mysql": "mysql://",
    "mariadb": "mysql://",
    "spark": "spark://local[2]",
    "clickhouse": "clickhouse://",
}
# Hosted services have no default instance: their short names read the URL from the environment.
ENV_ALIASES: dict[str, str] = {
    "snowflake": "POLYSQL_SNOWFLAKE_URL",
    "bigquery": "POLYSQL_BIGQUERY_URL",
}
# URL schemes whose client libraries come with an extra of another name
_EXTRA_OF = {"postgresql": "postgres", "mariadb": "mysql", "sc": "spark"}


def alias_names() -> list[str]:
    return sorted({*ENGINE_ALIASES, *ENV_ALIASES})


def alias_url(alias: str) -> str:
    """The URL a short engine name stands for; ConfigError when it is none, or when a hosted
    service's variable is not set."""
    name = alias.lower()
    if name in ENGINE_ALIASES:
        return ENGINE_ALIASES[name]
    if name in ENV_ALIASES:
        variable = ENV_ALIASES[name]
        value = os.environ.get(variable, "").strip()
        if not value:
            raise ConfigError(f"engine {alias!r} is a hosted service with no default instance: set "
                              f"{variable} to its URL (see docs/engines.md), or give the URL itself")
        return value
    raise ConfigError(f"unknown engine {alias!r}: use one of {', '.join(alias_names())} or an engine "
                      "URL such as 'postgresql://user@localhost:5432/'")


@cache
def _entry_points() -> dict[str, Any]:
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def available_schemes() -> list[str]:
    """URL schemes served by installed backends."""
    return sorted(_entry_points())


def parse_url(url: str | URL) -> URL:
    """Parse an engine URL with SQLAlchemy's URL grammar; a clear ConfigError when it is not one."""
    if isinstance(url, URL):
        return url
    try:
        return make_url(url)
    except ArgumentError as exc:
        raise ConfigError(
            f"cannot parse engine URL {url!r}: expected scheme://..., e.g. 'sqlite:///path/to/db.sqlite' "
            f"or 'duckdb:///path/to/db.duckdb'"
        ) from exc


def backend_class(url: str | URL) -> type[Backend]:
    """The Backend class serving ``url``'s scheme (``+driver`` suffixes are ignored)."""
    parsed = parse_url(url)
    scheme = parsed.get_backend_name()
    eps = _entry_points()
    if scheme not in eps:
        known = ", ".join(available_schemes()) or "none (is polysql installed? try `pip install -e .`)"
        raise UnknownEngineError(
            f"no backend for engine URL scheme {scheme!r} (in {parsed.render_as_string(hide_password=True)!r}); "
            f"installed schemes: {known}"
        )
    try:
        cls = eps[scheme].load()
    except ImportError as exc:
        raise EngineUnavailableError(
            f"the {scheme!r} backend needs a client library that is not installed ({exc}); "
            f"install it with `pip install 'polysql[{_EXTRA_OF.get(scheme, scheme)}]'`"
        ) from exc
    return cls


def connect(url: str | URL, **options: Any) -> Backend:
    """Connect to the engine named by ``url``.

    ``sqlite:///path`` and ``duckdb:///path`` open evaluation copies read-only by default; pass
    ``read_only=False`` to open for loading.
    """
    parsed = parse_url(url)
    return backend_class(parsed).connect(parsed, **options)
