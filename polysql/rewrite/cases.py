"""Rewrite case packages checked against the engines installed here.

:mod:`polysql.datasets.rewrite.cases` parses and validates a case package but knows no engine; this
module tells it which engines and dialects a case may name, from each engine's
:class:`~polysql.backends.base.EngineInfo`, so an engine added as a package is accepted by every
case without a table to edit. Use :func:`load_case` and :func:`load_pool` from here.
"""

from __future__ import annotations

from pathlib import Path

from polysql.backends import catalog
from polysql.backends.base import EngineInfo
from polysql.core.errors import ConfigError
from polysql.core.urls import parse_url
from polysql.datasets.rewrite import cases as packages
from polysql.datasets.rewrite.cases import BUNDLED_ROOT, CaseEngines, RewriteCase

__all__ = ["BUNDLED_ROOT", "engine_info", "installed_engines", "load_case", "load_pool"]


def engine_info(engine: str) -> EngineInfo | None:
    """The engine a case's ``engine`` names: a short name (``mariadb``) or a URL whose scheme an
    installed backend serves; None when it names none."""
    if "://" not in engine:
        name = engine.lower()
        return next((info for info in catalog.infos() if name in info.aliases), None)
    try:
        scheme = parse_url(engine).get_backend_name()
    except ConfigError:
        return None
    try:
        return catalog.info_for_scheme(scheme)
    except KeyError:
        return None


def _dialect_of(engine: str) -> str | None:
    info = engine_info(engine)
    return info.dialect if info is not None else None


def installed_engines() -> CaseEngines:
    """The engines and dialects a case may name here."""
    infos = catalog.infos()
    return CaseEngines(dialects=tuple(sorted({info.dialect for info in infos})),
                       names=tuple(sorted({alias for info in infos for alias in info.aliases})),
                       dialect_of=_dialect_of)


def load_case(path: str | Path, *, strict: bool = False) -> RewriteCase:
    """:func:`polysql.datasets.rewrite.cases.load_case` against the installed engines."""
    return packages.load_case(path, engines=installed_engines(), strict=strict)


def load_pool(root: str | Path, *, strict: bool = False) -> list[RewriteCase]:
    """:func:`polysql.datasets.rewrite.cases.load_pool` against the installed engines."""
    return packages.load_pool(root, engines=installed_engines(), strict=strict)
