"""Find the backend for an engine URL or short name, and connect to it.

Engines are the installed ``polysql.backends`` entry points (see :mod:`polysql.backends.catalog`);
every short name, hosted-service variable and extra comes from their ``EngineInfo``. A backend
class is imported only when a URL asks for it, and only after its client library is known to be
installed.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy.engine import URL

from polysql.backends import catalog
from polysql.core.errors import ConfigError, EngineUnavailableError, UnknownEngineError
from polysql.core.urls import parse_url

if TYPE_CHECKING:
    from polysql.backends.base import Backend, EngineInfo

__all__ = ["EngineStatus", "alias_names", "default_grading_engine", "missing_clients", "alias_url", "available_schemes", "backend_class",
           "connect", "engine_status", "parse_url"]


def alias_names() -> list[str]:
    """Every short engine name typed on the command line (``--engines sqlite,duckdb``)."""
    return sorted({alias for info in catalog.infos() for alias in info.aliases})


def _alias_owner(alias: str) -> EngineInfo | None:
    return next((info for info in catalog.infos() if alias in info.aliases), None)


def alias_url(alias: str) -> str:
    """The URL a short engine name stands for; ConfigError when it is none, or when a hosted
    service's variable is not set."""
    name = alias.lower()
    info = _alias_owner(name)
    if info is None:
        raise ConfigError(f"unknown engine {alias!r}: use one of {', '.join(alias_names())} or an "
                          "engine URL such as 'postgresql://user@localhost:5432/'")
    if info.aliases[name]:
        return info.aliases[name]
    variable = info.url_env or f"POLYSQL_{info.name.upper()}_URL"
    value = os.environ.get(variable, "").strip()
    if not value:
        raise ConfigError(f"engine {alias!r} is a hosted service with no default instance: set "
                          f"{variable} to its URL (see docs/engines.md), or give the URL itself")
    return value


def default_grading_engine() -> str:
    """The engine graders use unless told otherwise: an embedded one that can checksum a result
    in-engine (EngineInfo.checksum_sql), the first such by name."""
    for info in catalog.infos():
        if info.default_sweep and info.checksum_sql:
            return info.name
    raise ConfigError("no installed embedded engine declares checksum_sql; name an engine "
                      "with --engine")


def available_schemes() -> list[str]:
    """URL schemes served by installed backends."""
    return catalog.schemes()


@dataclass(frozen=True, slots=True)
class EngineStatus:
    """Whether the backend serving one URL scheme can be used here, and if not, how to fix it."""

    scheme: str
    #: the backend class; None while it cannot be used (it is not imported then)
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
        if self.error:
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


def missing_clients(info: EngineInfo) -> tuple[str, ...]:
    """The client modules ``info`` names that are not installed (located, not imported)."""
    return tuple(name for name in info.client_modules if not module_installed(name))


def engine_status(scheme: str) -> EngineStatus:
    """Whether the installed backend for ``scheme`` can be used here: the one check behind
    ``polysql engines``, :func:`backend_class` and so every connect, load and sweep. The client
    modules its ``EngineInfo`` names are located, never imported, before the backend is."""
    eps = catalog.entry_points_by_scheme()
    if scheme not in eps:
        raise _unknown_scheme(scheme, scheme)
    info = catalog.info_for_scheme(scheme)
    missing = missing_clients(info)
    if missing:
        return EngineStatus(scheme, None, missing, info.extra or info.name)
    try:
        cls = eps[scheme].load()
    except ImportError as exc:
        name = exc.name or "its client library"
        if name.split(".")[0] == "polysql":
            raise  # polysql's own module failed to import: a bug, not a missing client
        plain = isinstance(exc, ModuleNotFoundError) and exc.msg == f"No module named {name!r}"
        return EngineStatus(scheme, None, (name,), info.extra or info.name, str(exc), not plain)
    return EngineStatus(scheme, cls, (), info.extra or info.name)


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
    if scheme not in catalog.entry_points_by_scheme():
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
