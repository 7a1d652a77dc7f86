"""Running polysql's CLI in-process, as the CLI tests do."""

from __future__ import annotations

from click.testing import CliRunner

from polysql.cli.main import main


def run_sweep(*args: str) -> tuple[int, str]:
    """``polysql sweep ARGS``: its exit code and everything it printed (errors raise)."""
    result = CliRunner().invoke(main, ["sweep", *args], catch_exceptions=False)
    return result.exit_code, result.output
