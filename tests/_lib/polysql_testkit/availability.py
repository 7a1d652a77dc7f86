"""Skip a test whose engine or optional part cannot be used here -- or fail it, when
``POLYSQL_REQUIRE`` names that engine or part.

``POLYSQL_REQUIRE`` is a comma-separated list of names: engines by their short names (``sqlite``,
``duckdb``, ``postgres``, ``mysql``, ``spark``, ``clickhouse``, ``snowflake``, ``bigquery``) and
the optional parts ``llm`` (a real model server) and ``browser`` (Playwright and Chromium). CI
lists them all, so nothing it means to test can quietly skip; after the README's
``pip install -e '.[dev]'`` the engines whose extras are missing skip, each with the
``pip install`` that brings its tests back.

Whether an engine's client library is installed is asked of :func:`polysql.engines.registry.engine_status`,
the check ``polysql engines`` and every connect go through, so the tests and the command line
agree on what "installed" means.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, NoReturn

import pytest

from polysql.backends import catalog
from polysql.engines.registry import engine_status, module_installed

if TYPE_CHECKING:
    from polysql.backends.base import Backend

#: the engines ``POLYSQL_REQUIRE`` may name (the optional parts are named as they are)
ENGINE_NAMES = frozenset(info.name for info in catalog.infos())


def required_names() -> set[str]:
    """The engines and parts ``POLYSQL_REQUIRE`` lists (lower case)."""
    wanted = os.environ.get("POLYSQL_REQUIRE", "")
    return {name.strip().lower() for name in wanted.split(",") if name.strip()}


def is_required(name: str) -> bool:
    return name.lower() in required_names()


def _label(name: str) -> str:
    return f"engine {name!r}" if name in ENGINE_NAMES else name


def unavailable(name: str, reason: str) -> NoReturn:
    """Skip because ``name`` (an engine, ``llm`` or ``browser``) cannot be used here; ``reason``
    says why and how to fix it. A failure instead when ``POLYSQL_REQUIRE`` lists ``name``.
    Usable at module level (before imports that need the missing part) as well as in tests and
    fixtures."""
    label = _label(name)
    # polysql's own EngineUnavailableError starts the same way ("engine 'postgresql' ...")
    reason = re.sub(r"^engine '[^']*' unavailable: ", "", reason)
    if is_required(name):
        pytest.fail(f"{label} is required by POLYSQL_REQUIRE but unavailable: {reason}",
                    pytrace=False)
    pytest.skip(f"{label} unavailable: {reason}", allow_module_level=True)


def _scheme(engine: str) -> str:
    info = catalog.find(engine)
    if info is None:
        raise KeyError(f"no engine named {engine!r} is installed")
    return info.schemes[0]


def client_problem(engine: str) -> str | None:
    """Why ``engine``'s client library cannot be used here, with the ``pip install`` that fixes
    it; None when it is installed."""
    status = engine_status(_scheme(engine))
    return None if status.ready else status.problem


def require_client(engine: str) -> type[Backend]:
    """The backend class of ``engine`` (its short name, as ``POLYSQL_REQUIRE`` spells it), after
    checking its client library is installed: skip -- or fail, when required -- if it is not."""
    status = engine_status(_scheme(engine))
    if not status.ready:
        unavailable(engine, status.problem)
    assert status.backend is not None
    return status.backend


def require_module(part: str, module: str, install: str) -> None:
    """Skip -- or fail, when ``POLYSQL_REQUIRE`` lists ``part`` -- unless ``module`` is
    installed; ``install`` is what to run to get it (e.g. ``pip install 'polysql[llm-test]'``)."""
    if not module_installed(module):
        unavailable(part, f"{module} is not installed; install it with {install}")
