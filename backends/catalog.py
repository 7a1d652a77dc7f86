"""The engines installed here, as their :class:`~polysql.backends.base.EngineInfo`.

Backends register through the ``polysql.backends`` entry-point group: the entry-point name is a
URL scheme, its value the backend class in an engine package (``polysql.backends.postgres:
PostgresBackend``). The package itself declares ``INFO`` and imports nothing heavy, so reading
every engine's facts costs a few small imports and never loads a client library. Nothing
registers as a side effect of importing a module.
"""

from __future__ import annotations

import importlib
from functools import cache
from importlib.metadata import EntryPoint, entry_points

from polysql.backends.base import EngineInfo
from polysql.core.errors import ConfigError

ENTRY_POINT_GROUP = "polysql.backends"


@cache
def entry_points_by_scheme() -> dict[str, EntryPoint]:
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def schemes() -> list[str]:
    """URL schemes served by installed backends."""
    return sorted(entry_points_by_scheme())


def info_for_scheme(scheme: str) -> EngineInfo:
    """The facts of the engine serving ``scheme`` (KeyError when no backend serves it)."""
    return _info_of_module(entry_points_by_scheme()[scheme].module)


@cache
def _info_of_module(module_name: str) -> EngineInfo:
    module = importlib.import_module(module_name)
    info = getattr(module, "INFO", None)
    if not isinstance(info, EngineInfo):
        raise ConfigError(f"engine package {module_name} registers a backend but declares no "
                          "INFO = EngineInfo(...) (see docs/engines.md, 'Adding an engine')")
    return info


def infos() -> list[EngineInfo]:
    """Every installed engine once, by name."""
    found = {info_for_scheme(scheme).name: info_for_scheme(scheme) for scheme in schemes()}
    return [found[name] for name in sorted(found)]


def find(name: str) -> EngineInfo | None:
    """The engine a name stands for: its own name, a short name, a URL scheme or its dialect
    (case-insensitive); None when none does."""
    key = name.strip().lower()
    for info in infos():
        if key == info.name or key in info.aliases or key in info.schemes:
            return info
    for info in infos():
        if key == info.dialect:
            return info
    return None
