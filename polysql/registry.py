"""Find the backend for an engine URL and connect to it.

Backends register through the ``polysql.backends`` entry-point group; the entry-point name is the
URL scheme it serves (``sqlite``, ``duckdb``, ``postgresql``, ...). Nothing registers as a side
effect of importing a module: a backend is imported only when a URL asks for it.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from dataclasses import dataclass
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
# URL schemes whose client libraries come with an extra of another name; used when the backend
# module itself cannot be imported (it then cannot say which extra it needs)
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


@dataclass(frozen=True, slots=True)
class EngineStatus:
    """Whether the backend serving one URL scheme can be used here, and if not, how to fix it."""

    scheme: str
    #: the backend class; None when its module cannot be imported at all
    backend: type[Backend] | None
    #: client modules the backend needs that are not installed; empty when it is ready
    missing: tuple[str, ...]
    #: the polysql extra that installs them
    extra: str
    #: why the backend module itself failed to import (its client imported at module level)
    error: str = ""
    #: that failure was not a plain missing module (a broken or mismatched install)
    broken: bool = False

    @property
    def ready(self) -> bool:
        return self.backend is not None and not self.missing

    @property
    def install_hint(self) -> str:
        return f"pip install 'polysql[{self.extra}]'"

    @property
    def problem(self) -> str:
        """Why the engine cannot be used and how to fix it, in one line ('' when ready)."""
        if self.ready:
            return ""
        if self.backend is None:
            if self.broken:
                return (f"its client library cannot be imported ({self.error}); reinstall it "
                        f"with {self.install_hint}")
            return (f"its client library is not installed ({self.error}); install it with "
                    f"{self.install_hint}")
        names = " and ".join(self.missing)
        verb, them = ("is", "it") if len(self.missing) == 1 else ("are", "them")
        return f"{names} {verb} not installed; install {them} with {self.install_hint}"


def module_installed(name: str) -> bool:
    """Whether ``name`` (dotted names too) can be imported, without importing it: its parent
    packages are imported, the module itself is only located."""
    try:
        return importlib.util.find_spec(name) is not None
    except ValueError:  # already imported without a spec (e.g. built in place): it is there
        return name in sys.modules
    except ImportError:  # a parent package is missing (or blocked)
        return False


def check_backend(scheme: str, backend: type[Backend]) -> EngineStatus:
    """The status of ``backend`` serving ``scheme``: which of its ``client_modules`` are missing.
    Backends import their clients lazily, so a loaded class proves nothing about them."""
    missing = tuple(name for name in backend.client_modules if not module_installed(name))
    return EngineStatus(scheme, backend, missing, backend.client_extra or _extra_of(scheme))


def engine_status(scheme: str) -> EngineStatus:
    """Whether the installed backend for ``scheme`` can be used here: the one check behind
    ``polysql engines``, :func:`backend_class` and so every connect, load and sweep."""
    eps = _entry_points()
    if scheme not in eps:
        raise _unknown_scheme(scheme, scheme)
    try:
        cls = eps[scheme].load()
    except ImportError as exc:
        missing = exc.name or "its client library"
        if missing.split(".")[0] == "polysql":
            raise  # polysql's own module failed to import: a bug, not a missing client
        plain = isinstance(exc, ModuleNotFoundError) and exc.msg == f"No module named {missing!r}"
        return EngineStatus(scheme, None, (missing,), _extra_of(scheme), str(exc), not plain)
    return check_backend(scheme, cls)


def _extra_of(scheme: str) -> str:
    return _EXTRA_OF.get(scheme, scheme)


def _unknown_scheme(scheme: str, where: str) -> UnknownEngineError:
    known = ", ".join(available_schemes()) or "none (is polysql installed? try `pip install -e .`)"
    return UnknownEngineError(
        f"no backend for engine URL scheme {scheme!r} (in {where!r}); installed schemes: {known}")


def backend_class(url: str | URL) -> type[Backend]:
    """The Backend class serving ``url``'s scheme (``+driver`` suffixes are ignored).

    EngineUnavailableError, naming the extra to install, when its client library is missing.
    """
    parsed = parse_url(url)
    scheme = parsed.get_backend_name()
    if scheme not in _entry_points():
        raise _unknown_scheme(scheme, parsed.render_as_string(hide_password=True))
    status = engine_status(scheme)
    if not status.ready:
        raise EngineUnavailableError(f"engine {scheme!r} unavailable: {status.problem}")
    assert status.backend is not None
    return status.backend


def connect(url: str | URL, **options: Any) -> Backend:
    """Connect to the engine named by ``url``.

    ``sqlite:///path`` and ``duckdb:///path`` open evaluation copies read-only by default; pass
    ``read_only=False`` to open for loading.
    """
    parsed = parse_url(url)
    return backend_class(parsed).connect(parsed, **options)
