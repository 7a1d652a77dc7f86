"""``python -m polysql.cli``."""

from __future__ import annotations

from polysql.cli.entry import run

run()
