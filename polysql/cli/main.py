"""The ``polysql`` command: the group, every command's registration, and the exit codes.

Exit codes (stable, for scripts):
  0  success (for ``compare``: the results match)
  1  ``compare`` only: the results differ
  2  usage or configuration error (bad option, unknown engine or predictor)
  3  an engine could not be used (not installed, unreachable, load failed)
  4  a dataset, predictions file or leaderboard bundle is missing, malformed or invalid
  5  the results folder belongs to another sweep, is unreadable, or cannot be written (a full
     disk, a quota, a read-only folder)
  6  the sweep finished with work pending (an engine abandoned, a model unreachable, records set
     aside because their inputs changed); its summary says INCOMPLETE
  7  ``compare`` only: the gold query itself failed, so the prediction cannot be judged
  70 internal error (a bug: please report it with the ``--traceback`` output)
  130 interrupted (Ctrl-C); a sweep or an audit resumes when the same command is re-run

Each command lives in a module of its own (``polysql.cli.<module>``), listed once in
:data:`COMMANDS`; a command's module is imported only when that command runs (``polysql --help``
lists them from :data:`SUMMARIES`).
"""

from __future__ import annotations

import errno
import importlib
import logging
from typing import Any

import click
from rich.markup import escape

from polysql.cli.console import console
from polysql.core.errors import (
    BundleError,
    DatasetError,
    EngineError,
    PolysqlError,
    PredictionFileError,
    ResultsStoreError,
)
from polysql.core.version import __version__

EXIT_MISMATCH = 1
EXIT_CONFIG = 2
EXIT_ENGINE = 3
EXIT_DATA = 4
EXIT_STORE = 5
EXIT_INCOMPLETE = 6
EXIT_INVALID_GOLD = 7
EXIT_INTERNAL = 70
EXIT_INTERRUPTED = 130

#: Every command of ``polysql``: its name -> ``module:attribute`` of its click command or group.
#: The one place commands are registered. Modules load on first use so that ``polysql compare``
#: does not pay for the engines, statistics and figures that ``sweep`` or ``report`` import.
COMMANDS: dict[str, str] = {
    "sweep": "polysql.cli.sweep:sweep",
    "report": "polysql.cli.report:report_cmd",
    "leaderboard": "polysql.cli.leaderboard:leaderboard_group",
    "rewrite": "polysql.cli.rewrite:rewrite_group",
    "reward": "polysql.cli.reward:reward_group",
    "debug": "polysql.cli.debug:debug_group",
    "audit": "polysql.cli.audit:audit_group",
    "reader": "polysql.cli.reader:reader_group",
    "compare": "polysql.cli.compare:compare_cmd",
    "load": "polysql.cli.data:load_cmd",
    "schema": "polysql.cli.data:schema_cmd",
    "up": "polysql.cli.up:up_cmd",
    "engines": "polysql.cli.listing:engines_cmd",
    "datasets": "polysql.cli.listing:datasets_cmd",
}

#: The first paragraph of each command's help, as ``polysql --help`` lists it: kept here so that
#: listing the commands imports none of their modules (a third of a second with every engine
#: client installed). tests/cli/test_main.py keeps each equal to its command's own help.
SUMMARIES: dict[str, str] = {
    "audit": "Audit native golds, or how transpile-based judging compares with dual execution.",
    "compare": "Run two queries and say whether their results match (exit 0) or not (exit 1); "
               "exit 7 when the gold query itself fails, since then nothing can be judged.",
    "datasets": "List the datasets polysql knows and the forms a dataset can be given in.",
    "debug": "SQL-debugging evaluation: buggy script + error or issue report -> fixed SQL.",
    "engines": "List the engine URL schemes polysql can use here, and whether each is ready "
               "(its client library is installed).",
    "leaderboard": "Submission bundles and the static leaderboard site.",
    "load": "Copy the database at SOURCE_URL into TARGET_URL (idempotent).",
    "reader": "Create or drop a SELECT-only login for existing databases.",
    "report": "Statistics, tiers, agreement, rankings and error taxonomy over one or more sweep "
              "runs.",
    "reward": "Execution-grounded reward over query-optimization tasks.",
    "rewrite": "Evaluate SQL rewriters: correctness-gated, full-denominator, on each case's own "
               "engine.",
    "schema": "Print the schema held at URL as CREATE TABLE statements in that engine's dialect.",
    "sweep": "Run every question with every predictor on every engine; write results and a "
             "report.",
    "up": "Start throwaway database servers in containers (needs Docker) until Ctrl-C.",
}


# Commands whose work is kept record by record, so that running them again picks up where Ctrl-C
# stopped them. Any other command starts over when run again (or, like `up` and `leaderboard
# serve`, is stopped by Ctrl-C in the normal way), so it gets no hint.
RESUMING_COMMANDS = frozenset({"sweep", "audit"})


def interrupted_message(command: str | None) -> str:
    """What Ctrl-C leaves on screen: a resume hint only where re-running does resume."""
    if command in RESUMING_COMMANDS:
        return "interrupted; re-run the same command to resume"
    return "interrupted"


def _exit_code(exc: PolysqlError) -> int:
    if isinstance(exc, EngineError):
        return EXIT_ENGINE
    if isinstance(exc, (DatasetError, PredictionFileError, BundleError)):
        return EXIT_DATA
    if isinstance(exc, ResultsStoreError):
        return EXIT_STORE
    return EXIT_CONFIG


def traceback_enabled(ctx: click.Context | None = None) -> bool:
    """Whether ``--traceback`` was given (to the command of ``ctx``, by default the one running):
    errors then show their full traceback."""
    ctx = ctx or click.get_current_context(silent=True)
    root = ctx.find_root() if ctx is not None else None
    return bool(root is not None and root.obj and root.obj.get("traceback"))


# Errors of a file that cannot be written for reasons of the machine, not of polysql: no space
# (a full disk, a quota, a file size limit), or no writing in that folder at all (a read-only
# file system, no permission, an immutable folder) -- those only with the path they concern.
_NO_ROOM = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
_NOT_HERE = frozenset({errno.EROFS, errno.EACCES, errno.EPERM})


def _machine_limit(exc: BaseException) -> str | None:
    """What to tell the user when ``exc`` is an OSError of :data:`_NO_ROOM`, or of
    :data:`_NOT_HERE` naming its path; else None. (An engine's own "disk full" is its backend's
    to report, as a LoadError say.)"""
    if not isinstance(exc, OSError) or not (
            exc.errno in _NO_ROOM or (exc.errno in _NOT_HERE and exc.filename)):
        return None
    where = f"{exc.filename}" if exc.filename else "a file"
    said = exc.strerror or str(exc)
    fix = ("make room" if exc.errno in _NO_ROOM
           else "use a folder you can write in (or give yourself the right to)")
    return f"cannot write {where}: {said}; {fix} and run the command again"


class PolysqlGroup(click.Group):
    """Finds each command through :data:`COMMANDS`, and turns polysql errors into one clear line
    and a stable exit code (the traceback with --traceback)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module, _, attribute = target.partition(":")
        command = getattr(importlib.import_module(module), attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"COMMANDS[{cmd_name!r}] = {target!r} is not a click command")
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list of ``polysql --help``, from :data:`SUMMARIES`: the same lines
        click writes from the commands themselves, without importing them."""
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(name) for name in names)
        # a bare Command shortens a help text exactly as the real command would its own
        rows = [(name, click.Command(name, help=SUMMARIES[name]).get_short_help_str(limit))
                for name in names]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except PolysqlError as exc:
            if traceback_enabled(ctx):
                raise
            console.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False)
            ctx.exit(_exit_code(exc))
        except KeyboardInterrupt:
            console.print(interrupted_message(ctx.invoked_subcommand))
            ctx.exit(EXIT_INTERRUPTED)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except Exception as exc:
            if traceback_enabled(ctx):
                raise
            limit = _machine_limit(exc)
            if limit is not None:  # not a bug: a full disk, a quota, a read-only folder
                console.print(f"[bold red]error:[/] {escape(limit)}", highlight=False)
                ctx.exit(EXIT_STORE)
            console.print(f"[bold red]internal error:[/] {type(exc).__name__}: {escape(str(exc))} "
                          "(re-run with --traceback for the traceback, and please report it)")
            ctx.exit(EXIT_INTERNAL)


@click.group(cls=PolysqlGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="polysql")
@click.option("--traceback", "show_traceback", is_flag=True, help="Show full tracebacks on errors.")
# the flag's first name, kept so existing scripts work; hidden as it reads like the debug command
@click.option("--debug", "show_traceback_alias", is_flag=True, hidden=True)
@click.pass_context
def main(ctx: click.Context, show_traceback: bool, show_traceback_alias: bool) -> None:
    """Evaluate SQL-producing systems across SQL dialects by dual execution."""
    ctx.ensure_object(dict)
    ctx.obj["traceback"] = show_traceback or show_traceback_alias
    if not ctx.obj["traceback"]:
        # sqlglot warns on stderr about each statement it can only parse loosely. Here those are
        # evaluated SQL, which the screens and engines judge and report; the stray lines would
        # only break the progress display.
        logging.getLogger("sqlglot").setLevel(logging.ERROR)


if __name__ == "__main__":  # pragma: no cover
    main()
