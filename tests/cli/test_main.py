"""The ``polysql`` group itself: where its commands are registered, the ``--traceback`` flag, and
defaults that come from the engines' ``EngineInfo`` rather than from the CLI."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from polysql_testkit.file_limits import locked_folder, needs_rlimits, run_cli_with_file_limit

import polysql.cli as cli_package
from polysql.backends import catalog
from polysql.cli.main import (
    COMMANDS,
    EXIT_CONFIG,
    EXIT_DATA,
    EXIT_STORE,
    RESUMING_COMMANDS,
    SUMMARIES,
    interrupted_message,
    main,
)
from polysql.core.errors import ConfigError
from polysql.datasets.base import Question

CLI_DIR = Path(cli_package.__file__).parent
#: modules of polysql/cli that hold no command
NOT_COMMANDS = {"__init__", "__main__", "entry", "main", "console", "options"}


def _command(*path: str) -> click.Command:
    command: click.Command = main
    ctx = click.Context(main, info_name="polysql")
    for name in path:
        assert isinstance(command, click.Group)
        found = command.get_command(ctx, name)
        assert found is not None, f"no command {' '.join(path)}"
        command = found
    return command


def _default(command: click.Command, option: str) -> object:
    return next(p.default for p in command.params if option in getattr(p, "opts", ()))


# -- registration --------------------------------------------------------------------------------

def test_every_command_is_registered_once_under_its_own_name() -> None:
    ctx = click.Context(main, info_name="polysql")
    assert main.list_commands(ctx) == sorted(COMMANDS)
    for name in COMMANDS:
        command = main.get_command(ctx, name)
        assert isinstance(command, click.Command) and command.name == name
    assert main.get_command(ctx, "nosuch") is None


def test_every_command_module_is_in_the_table() -> None:
    """A command module that COMMANDS does not name would be dead code nobody can run."""
    modules = {path.stem for path in CLI_DIR.glob("*.py")} - NOT_COMMANDS
    registered = {target.split(":")[0].rsplit(".", 1)[1] for target in COMMANDS.values()}
    assert modules == registered


def test_a_command_loads_only_its_own_module(tmp_path: Path) -> None:
    """Registration is a table, not an import side effect: `polysql engines` never imports the
    sweep, report or leaderboard commands (nor what they pull in)."""
    code = ("import sys\nfrom polysql.cli import main\n"
            "try:\n    main(['engines'])\nexcept SystemExit:\n    pass\n"
            "print(' '.join(sorted(m for m in sys.modules if m.startswith('polysql.cli.'))))\n"
            "print('polysql.sweep.runner' in sys.modules, 'polysql.analysis.findings' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    loaded, heavy = done.stdout.strip().splitlines()[-2:]
    assert loaded.split() == ["polysql.cli.console", "polysql.cli.listing", "polysql.cli.main"]
    assert heavy == "False False"


def test_each_summary_is_its_commands_own_help() -> None:
    """``polysql --help`` lists the commands from SUMMARIES: each must say what the command's
    own help says first (click lists a command by its help's first paragraph)."""
    assert set(SUMMARIES) == set(COMMANDS)
    for name in COMMANDS:
        command = _command(name)
        assert command.short_help is None and not command.hidden, name
        first_paragraph = (command.help or "").split("\n\n")[0]
        assert SUMMARIES[name] == " ".join(first_paragraph.split()), name


@pytest.mark.parametrize("width", [60, 100, 200])
def test_help_lists_the_commands_as_click_would_from_the_commands(width: int) -> None:
    def listing(write: object) -> str:
        ctx = click.Context(main, info_name="polysql", terminal_width=width)
        formatter = ctx.make_formatter()
        write(ctx, formatter)  # type: ignore[operator]
        return formatter.getvalue()

    ours = listing(main.format_commands)
    clicks = listing(lambda ctx, formatter: click.Group.format_commands(main, ctx, formatter))
    assert ours == clicks and "sweep" in ours


def test_help_imports_no_command_module(tmp_path: Path) -> None:
    code = ("import sys\nfrom polysql.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print(' '.join(sorted(m for m in sys.modules if m.startswith('polysql.cli.'))))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Run every question with every predictor" in done.stdout
    assert done.stdout.strip().splitlines()[-1].split() == ["polysql.cli.console",
                                                             "polysql.cli.main"]


@needs_rlimits
def test_a_file_the_machine_will_not_let_grow_is_a_clear_error_not_a_bug(tmp_path: Path) -> None:
    """Files may not grow past 2 KiB (see polysql_testkit.file_limits): the debug report's first
    file cannot be written, which is the machine's limit, so exit 5 with what to do -- not exit
    70. The demo database, built by SQLite, says so in SQLite's words (exit 4, as a dataset that
    cannot be made)."""
    code, output = run_cli_with_file_limit(
        ["debug", "eval", "--predictor", "reference", "--no-execution",
         "--out", str(tmp_path / "out")], 2048)
    assert code == EXIT_STORE, output
    assert "error: cannot write a file: File too large; make room" in output
    assert "internal error" not in output

    # SQLite reports the same limit as "disk I/O error": building the demo database is stopped
    # by it, says where to make room, and leaves nothing half-written behind (64 KiB: room for
    # the run's own small files, not for the database)
    cache = tmp_path / "cache"
    code, output = run_cli_with_file_limit(["sweep", "--out", str(tmp_path / "run")], 64 * 1024,
                                           env={"POLYSQL_CACHE": str(cache)})
    assert code == EXIT_DATA, output
    assert "error: cannot build the demo database at" in output
    assert "disk I/O error; make room in" in output
    assert not [p for p in cache.rglob("*") if p.is_file() and "demo" in p.parts], output


def test_a_folder_that_cannot_be_written_is_named_with_what_to_do(tmp_path: Path) -> None:
    with locked_folder(tmp_path / "locked") as folder:
        result = CliRunner().invoke(main, ["debug", "eval", "--predictor", "reference",
                                           "--no-execution", "--out", str(folder / "out")])
    output = " ".join(result.output.split())
    assert result.exit_code == EXIT_STORE, output
    assert f"error: cannot write {folder / 'out'}: " in output
    assert "use a folder you can write in" in output and "internal error" not in output


def test_exit_codes_and_main_are_importable_from_the_package() -> None:
    assert cli_package.main is main and cli_package.EXIT_CONFIG == EXIT_CONFIG == 2


# -- --traceback -----------------------------------------------------------------------------------

UNKNOWN_SCHEME = ["compare", "--db", "nosuch://x", "--gold", "SELECT 1", "--pred", "SELECT 1"]


def test_only_commands_that_resume_say_so_after_ctrl_c() -> None:
    """A re-run of sweep or audit skips the records already written; a re-run of compare, load
    and the rest starts over, so their Ctrl-C message promises nothing."""
    assert {"sweep", "audit"} == RESUMING_COMMANDS and set(COMMANDS) >= RESUMING_COMMANDS
    for command in RESUMING_COMMANDS:
        assert interrupted_message(command) == "interrupted; re-run the same command to resume"
    for command in [*(set(COMMANDS) - RESUMING_COMMANDS), None]:
        assert interrupted_message(command) == "interrupted"


def test_ctrl_c_in_a_sweep_reaches_the_user_with_the_resume_hint(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The group reads which command was running: Ctrl-C while a sweep sets up (here, as it
    reads its policy options) promises a resume; the same interrupt in compare would not."""
    import polysql.cli.sweep as sweep_command

    def ctrl_c(*_: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(sweep_command, "parse_policy", ctrl_c)
    result = CliRunner().invoke(main, ["sweep", "--limit", "1"])
    assert result.exit_code == 130
    assert result.output.strip() == "interrupted; re-run the same command to resume"


def test_an_error_is_one_line_without_the_flag() -> None:
    result = CliRunner().invoke(main, UNKNOWN_SCHEME)
    assert result.exit_code == EXIT_CONFIG
    assert "nosuch" in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("flag", ["--traceback", "--debug"])
def test_traceback_flag_and_its_old_name_let_the_error_through(flag: str) -> None:
    result = CliRunner().invoke(main, [flag, *UNKNOWN_SCHEME])
    assert isinstance(result.exception, ConfigError), result.output


def test_help_shows_traceback_and_hides_the_old_name() -> None:
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0
    assert "--traceback" in result.output and "--debug" not in result.output
    assert "debug" in result.output  # the command group of that name is still listed


# -- defaults from EngineInfo ----------------------------------------------------------------------

def test_sweep_engines_default_is_every_default_sweep_engine_source_first() -> None:
    default = str(_default(_command("sweep"), "--engines")).split(",")
    assert set(default) == {info.name for info in catalog.infos() if info.default_sweep}
    source = next(str(f.default) for f in fields(Question) if f.name == "source_dialect")
    assert catalog.find(default[0]) is not None and catalog.find(default[0]).dialect == source
    assert default == ["sqlite", "duckdb"]  # what docs/cli.md documents


def test_report_reference_default_is_the_source_dialect() -> None:
    assert _default(_command("report"), "--reference") == "sqlite"


def test_up_default_is_every_engine_with_a_container() -> None:
    command = _command("up")
    default = str(_default(command, "--engines")).split(",")
    with_container = [info for info in catalog.infos() if info.container is not None]
    assert default == [info.name for info in with_container]
    help_text = next(p.help for p in command.params if "--engines" in getattr(p, "opts", ()))
    assert all(info.container and info.container.image in str(help_text) for info in with_container)


def test_reward_engine_default_is_embedded_and_checksums_large_results() -> None:
    name = str(_default(_command("reward", "grade"), "--engine"))
    info = catalog.find(name)
    assert info is not None and info.default_sweep and info.checksum_sql
    assert _default(_command("reward", "ablate"), "--engine") == name == "duckdb"


def test_new_case_help_lists_every_installed_engine() -> None:
    command = _command("rewrite", "new-case")
    help_text = str(next(p.help for p in command.params if "--engine" in getattr(p, "opts", ())))
    assert all(info.name in help_text for info in catalog.infos())
