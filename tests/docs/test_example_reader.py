"""How the documentation tests read commands out of Markdown: what counts as an example, how
continuations, comments, prompts and ``&&`` chains are taken, how a synopsis becomes arguments,
and that click parsing of an example catches a renamed option or command."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from polysql_testkit.doc_examples import arguments, command_examples, fenced_blocks, parse

from polysql.cli import main

DOC = '''\
# Title

Inline `polysql up` is prose, not an example.

```bash
pip install -e '.[dev]' && polysql sweep      # install, then sweep
export KEY=...
polysql compare --db sqlite:///a.sqlite --gold "SELECT '#1'" --pred "SELECT 1"  # exit 0
```

```python
import polysql  # polysql sweep in Python is not a command
```

```toml
[models.x]   # polysql sweep
```

```console
$ polysql report runs/demo \\
    --out report/
$ POLYSQL_CACHE=/tmp/c polysql engines; polysql datasets
```

```
polysql debug eval [--tasks FILE] [--predictor reference|identity]
                   [--engine URL] [--out DIR]
mysql://user@host/     a URL listing, no command
```

~~~sh
polysql leaderboard validate BUNDLE... [--as ...]  # exit 4 if invalid
~~~
'''


@pytest.fixture
def doc(tmp_path: Path) -> Path:
    path = tmp_path / "docs" / "page.md"
    path.parent.mkdir()
    path.write_text(DOC, encoding="utf-8")
    return path


def test_commands_are_read_from_shell_and_plain_blocks_only(doc: Path) -> None:
    found = [(e.where, e.command) for e in command_examples([doc], doc.parents[1])]
    assert found == [
        ("docs/page.md:6", "polysql sweep"),
        ("docs/page.md:8", "polysql compare --db sqlite:///a.sqlite --gold \"SELECT '#1'\" "
                           "--pred \"SELECT 1\""),
        ("docs/page.md:20", "polysql report runs/demo --out report/"),
        ("docs/page.md:22", "polysql engines"),
        ("docs/page.md:22", "polysql datasets"),
        ("docs/page.md:26", "polysql debug eval [--tasks FILE] [--predictor reference|identity] "
                            "[--engine URL] [--out DIR]"),
        ("docs/page.md:32", "polysql leaderboard validate BUNDLE... [--as ...]"),
    ]


def test_blocks_keep_their_language_and_line(doc: Path) -> None:
    blocks = fenced_blocks(doc, doc.parents[1])
    assert [(b.line, b.language) for b in blocks] == [
        (5, "bash"), (11, "python"), (15, "toml"), (19, "console"), (25, ""), (31, "sh")]


def test_a_synopsis_becomes_arguments() -> None:
    command = ("polysql debug eval [--tasks FILE] [--predictor reference|identity] "
               "[--engine URL] [--out DIR]")
    assert arguments(command, [("FILE", "t.yaml"), ("DIR", "out")]) == [
        "debug", "eval", "--tasks", "t.yaml", "--predictor", "reference", "--engine", "URL",
        "--out", "out"]
    assert arguments("polysql leaderboard validate BUNDLE... [--as ...]",
                     [("BUNDLE...", "a.zip"), ("[--as ...]", "")]) == [
        "leaderboard", "validate", "a.zip"]


def test_an_invocation_keeps_its_quoted_arguments() -> None:
    assert arguments('polysql compare --db sqlite:///a.sqlite --gold "SELECT ..." '
                     '--pred "SELECT [x] ..."', [('--gold "SELECT ..."', '--gold "SELECT 1"')]) == [
        "compare", "--db", "sqlite:///a.sqlite", "--gold", "SELECT 1", "--pred", "SELECT [x] ..."]


def test_a_placeholder_that_is_not_there_is_an_error() -> None:
    with pytest.raises(AssertionError, match="does not occur"):
        arguments("polysql engines", [("RUN_DIR", "runs/demo")])


def test_parsing_accepts_what_the_command_line_accepts() -> None:
    ctx = parse(main, ["rewrite", "run", "-m", "identity", "--pool", "duckdb-core"])
    assert ctx is not None and ctx.command.name == "run" and ctx.params["methods"] == ("identity",)
    ctx = parse(main, ["sweep", "--engines", "sqlite", "--limit", "3"])
    assert ctx is not None and ctx.params["limit"] == 3


@pytest.mark.parametrize("args", [
    ["sweep", "--engine", "sqlite"],  # the option is --engines
    ["leaderboard", "publish", "demo.zip"],  # no such command
    ["rewrite"],  # a group needs a command
    ["sweep", "--limit", "many"],  # not a number
    ["reward", "grade", "t", "--sql-file", "nowhere.sql"],  # the file must exist
])
def test_parsing_rejects_what_the_command_line_rejects(args: list[str]) -> None:
    with pytest.raises(click.UsageError):
        parse(main, args)


def test_lenient_parsing_accepts_files_not_made_yet_but_checks_names() -> None:
    assert parse(main, ["reward", "grade", "t", "--sql-file", "nowhere.sql"], strict=False) is None
    with pytest.raises(click.UsageError):
        parse(main, ["reward", "grade", "t", "--sql-file", "nowhere.sql", "--isue", "x"],
              strict=False)
    with pytest.raises(click.UsageError):
        parse(main, ["sweep", "--engine", "sqlite"], strict=False)
