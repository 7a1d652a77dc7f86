"""The dialect names a predictions line or file name may give."""

from __future__ import annotations

import subprocess
import sys

from sqlglot.dialects import Dialect

from polysql.sweep.dialect_names import is_known_dialect, known_dialect_names


def test_every_sqlglot_dialect_is_known_by_name() -> None:
    # the cheap list of names must not miss a dialect the full registry knows
    assert {name.lower() for name in Dialect.classes if name} <= known_dialect_names()
    assert all(is_known_dialect(name) for name in ("postgresql", "mariadb", "tsql", "duckdb"))
    assert not is_known_dialect("postgress")


def test_the_names_are_listed_without_importing_every_dialect() -> None:
    """Importing all of sqlglot's dialects costs a tenth of a second at every sweep start."""
    script = ("import sys\n"
              "from polysql.sweep.dialect_names import known_dialect_names\n"
              "known_dialect_names()\n"
              "print(sum(name.startswith('sqlglot.dialects.') for name in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=True)
    assert int(done.stdout.strip()) <= 2, done.stdout
