"""SQLite for the conformance suite's load lifecycle (tests/conformance/test_load_lifecycle.py).

The shared fixture copy itself is provisioned by tests/conftest.py (a file engine needs no hook
for that); this module only hands out fresh load targets -- one file in a test's own directory --
and says which lifecycle behaviours do not apply to SQLite, and why.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

NAME = "sqlite"

#: conformance behaviours that do not apply to SQLite, each with the reason
NOT_APPLICABLE: dict[str, str] = {
    "foreign_target_refused": "a SQLite target is a single file that a load replaces whole "
                              "(atomically, by rename); there is no server-side database holding "
                              "other people's tables to protect",
    "unreachable_server": "SQLite is embedded: there is no server to be unreachable (a missing "
                          "file is covered by the never-loaded target test)",
    "other_name_modes": "a SQLite target is a byte-for-byte copy of its SQLite source, so it "
                        "refuses every name mode but exact (tests/engines/test_load_names.py)",
}


class ServerUnavailable(Exception):
    """Never raised: SQLite is always there (the name keeps the hook interface uniform)."""


def fresh_target(tag: str, workdir: Path) -> tuple[str, dict[str, Any]]:
    """(URL, connect options) of a database no load has touched: a file not yet created."""
    return f"sqlite:///{workdir / f'{tag}.sqlite'}", {}


def _path(url: str) -> Path:
    return Path(url.removeprefix("sqlite:///"))


def drop_target(url: str, options: dict[str, Any]) -> None:
    """Nothing to do: the file lives in the test's temporary directory."""


def staging_leftovers(url: str) -> list[str]:
    """Temporary files a load builds beside the target (``.<name>.<id>.tmp`` and companions)."""
    path = _path(url)
    return sorted(p.name for p in path.parent.iterdir() if p.name.startswith(f".{path.name}."))
