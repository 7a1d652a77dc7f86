"""The server fixtures of tests/servers, imported by path (test folders are not packages)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

_SERVERS = Path(__file__).resolve().parent.parent / "servers"


def fixtures(engine: str) -> ModuleType:
    """tests/servers/_<engine>_fixtures.py as a module (``pg`` or ``mysql``)."""
    name = f"polysql_tests_{engine}_fixtures"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, _SERVERS / f"_{engine}_fixtures.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]
