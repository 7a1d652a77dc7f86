"""``python -m polysql.cli``."""

from __future__ import annotations

from polysql.cli.main import main

main()
