"""The engine and dialect names polysql answers to, and which of them name the same engine.

A predictions line's ``dialect``, a dataset's native-gold key and a file name's dialect word may
each spell an engine any way its users do (``postgresql``, ``postgres``, ``mariadb``); these
functions resolve them through the installed engines' EngineInfo without importing any client.
"""

from __future__ import annotations

import difflib
import functools

import sqlglot
import sqlglot.dialects
from sqlglot.dialects import Dialect

from polysql.backends import catalog
from polysql.engines.registry import alias_names


@functools.cache
def backend_of_name() -> dict[str, str]:
    """Engine name, alias or URL scheme -> the engine it names, so ``postgresql`` and
    ``postgres`` (or ``mariadb`` and ``mysql``) are known to be one engine without importing any
    backend or its client library."""
    return {name.lower(): info.name for info in catalog.infos()
            for name in (info.name, *info.aliases, *info.schemes)}


@functools.cache
def known_dialect_names() -> frozenset[str]:
    """Every ``dialect`` a predictions line may give: polysql's engine aliases and backend
    names, and every sqlglot dialect name (lower case)."""
    names = {*alias_names(), *backend_of_name(), *(d.value for d in sqlglot.Dialects),
             *_sqlglot_dialect_names()}
    return frozenset(name.lower() for name in names if name)


def _sqlglot_dialect_names() -> list[str]:
    """Every dialect sqlglot ships, by name. Its list of dialect modules says so without
    importing them: ``Dialect.classes`` imports all of them, a tenth of a second at every sweep
    that reads a predictions file."""
    shipped = getattr(sqlglot.dialects, "DIALECT_MODULE_NAMES", None)
    return list(shipped) if shipped is not None else list(Dialect.classes)


def is_known_dialect(name: str) -> bool:
    # an emulated engine is named "<backend>-emulated" in results
    return name in known_dialect_names() or name.removesuffix("-emulated") in backend_of_name()


@functools.cache
def engine_keys(name: str, dialect: str) -> tuple[str, ...]:
    """The ``dialect`` values of predictions lines that apply to an engine, most specific first:
    its name, its sqlglot dialect, then the other names of its backend."""
    keys = [name.lower(), dialect.lower()]
    backends = backend_of_name()
    backend = backends.get(dialect.lower()) or backends.get(name.lower())
    if backend is not None:
        keys += sorted(other for other, target in backends.items() if target == backend)
    return tuple(dict.fromkeys(keys))


def unknown_dialect(name: str) -> str:
    close = difflib.get_close_matches(name, sorted(known_dialect_names()), n=1)
    return f"dialect {name!r}" + (f" (did you mean {close[0]!r}?)" if close else "")
