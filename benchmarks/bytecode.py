"""Whole-process timings of polysql as an installed package runs: from cached bytecode.

Python compiles a module's source the first time it imports it and keeps the bytecode next to it
(``__pycache__``); every later process loads that instead. With ``PYTHONDONTWRITEBYTECODE`` set
nothing is kept, so every ``polysql`` process compiles all the modules it imports again -- a
third of a second or more of start-up on a 2-core machine, which the established tools the
benchmarks compare against (native binaries, or packages whose bytecode pip wrote at install
time) never pay. A benchmark calls :func:`as_installed` once before it times anything.
"""

from __future__ import annotations

import compileall
import importlib.util
import os

_VARIABLE = "PYTHONDONTWRITEBYTECODE"
# the namespace's packages: polysql's own folder and those mapped into it by package-dir
_PACKAGES = ("polysql", "polysql.backends", "polysql.datasets", "polysql.normalizers",
             "polysql.analysis", "polysql.leaderboard")


def as_installed() -> None:
    """Let the processes this benchmark starts keep bytecode, and write it now, untimed."""
    if os.environ.pop(_VARIABLE, None) is not None:
        print(f"{_VARIABLE} was set: unset for the processes timed here, which run from cached "
              "bytecode as an installed package does")
    for name in _PACKAGES:
        spec = importlib.util.find_spec(name)
        for folder in (spec.submodule_search_locations or []) if spec else []:
            compileall.compile_dir(folder, quiet=1)
