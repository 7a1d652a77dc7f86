"""The ``polysql`` command: :func:`main` is the console script's entry point; the ``EXIT_*``
codes are what it exits with (see :mod:`polysql.cli.main`)."""

from __future__ import annotations

from polysql.cli.main import (
    EXIT_CONFIG,
    EXIT_DATA,
    EXIT_ENGINE,
    EXIT_INCOMPLETE,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_INVALID_GOLD,
    EXIT_MISMATCH,
    EXIT_STORE,
    main,
)

__all__ = ["EXIT_CONFIG", "EXIT_DATA", "EXIT_ENGINE", "EXIT_INCOMPLETE", "EXIT_INTERNAL",
           "EXIT_INTERRUPTED", "EXIT_INVALID_GOLD", "EXIT_MISMATCH", "EXIT_STORE", "main"]
