"""The ``polysql ...`` command lines and Python snippets of the project's Markdown documentation,
as the documentation tests read them.

A command example is a ``polysql`` invocation on a line of a fenced code block whose language is
a shell or plain text (```` ```bash ````, ```` ```sh ````, ```` ```console ````, ```` ``` ````,
...); blocks in other languages (Python, TOML, JSON, YAML, SQL) hold no commands. Within a block:

* a line ending in ``\\`` continues on the next line, and so does a synopsis wrapped onto an
  indented line that starts with ``[`` (``polysql report RUN [--out DIR]`` / ``    [--seed N]``);
* a ``$ `` prompt is dropped, and so is a ``# comment`` (a ``#`` starting a word outside quotes);
* ``&&``, ``||`` and ``;`` separate commands, and ``VAR=value`` assignments before a command are
  not part of it, so ``pip install -e . && polysql sweep`` holds one example, ``polysql sweep``.

An example is known by its file and its command text (whitespace collapsed), not by its line
number, so the tests' tables survive edits elsewhere in a file while a changed example must be
looked at again.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import click

#: fence languages whose lines are shell commands or plain text
SHELL_LANGUAGES = frozenset({"", "bash", "sh", "shell", "zsh", "console", "shell-session",
                             "text", "plain", "plaintext"})

_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})\s*(?P<lang>[^\s`]*)")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


@dataclass(frozen=True, slots=True)
class Block:
    """One fenced code block: the line of its opening fence (1-based), its language (lower
    case, empty when none is given) and its lines."""

    file: str
    line: int
    language: str
    lines: tuple[str, ...]

    @property
    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


@dataclass(frozen=True, slots=True)
class Example:
    """One ``polysql`` command of the documentation, as a reader would type it."""

    file: str  # relative to the repository root, e.g. "README.md", "docs/cli.md"
    line: int  # where the command starts (1-based)
    command: str  # whitespace collapsed; comments, prompts and continuations removed

    @property
    def key(self) -> tuple[str, str]:
        return (self.file, self.command)

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"

    @property
    def is_synopsis(self) -> bool:
        """A usage line (``[--out DIR]``, ``a|b``, ``BUNDLE...``) rather than an invocation."""
        return any(token.startswith("[") for token in _split(self.command))

    def __str__(self) -> str:
        return f"{self.where}: {self.command}"


def fenced_blocks(path: Path, root: Path) -> list[Block]:
    """Every fenced code block of the Markdown file ``path`` (an unclosed fence runs to the end
    of the file, as in CommonMark)."""
    file = path.relative_to(root).as_posix()
    blocks: list[Block] = []
    opened: tuple[int, str, str] | None = None  # (line, fence, language)
    body: list[str] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        match = _FENCE.match(line)
        if opened is None:
            if match:
                opened = (number, match["fence"], match["lang"].lower())
                body = []
            continue
        fence = opened[1]
        if match and match["fence"].startswith(fence[0] * len(fence)) and not match["lang"]:
            blocks.append(Block(file, opened[0], opened[2], tuple(body)))
            opened = None
            continue
        body.append(line)
    if opened is not None:
        blocks.append(Block(file, opened[0], opened[2], tuple(body)))
    return blocks


def command_examples(paths: Sequence[Path], root: Path) -> list[Example]:
    """The ``polysql`` commands of the shell and plain-text blocks of ``paths``, in order."""
    examples: list[Example] = []
    for path in paths:
        for block in fenced_blocks(path, root):
            if block.language not in SHELL_LANGUAGES:
                continue
            for line, logical in _logical_lines(block):
                for segment in _commands(_strip_comment(_strip_prompt(logical))):
                    words = _split(segment)
                    while words and _ASSIGNMENT.match(words[0]):
                        words = words[1:]
                    if words and words[0] == "polysql":
                        examples.append(Example(block.file, line, _collapse(segment)))
    return examples


def python_blocks(path: Path, root: Path) -> list[Block]:
    """The ```` ```python ```` blocks of ``path``."""
    return [block for block in fenced_blocks(path, root) if block.language in ("python", "py")]


def _logical_lines(block: Block) -> Iterator[tuple[int, str]]:
    """(first line number, text) per logical line: backslash continuations and wrapped synopsis
    lines joined."""
    pending: tuple[int, str] | None = None
    continues = False
    for offset, raw in enumerate(block.lines, 1):
        number = block.line + offset
        wrapped = raw[:1].isspace() and raw.lstrip().startswith("[")
        if pending is not None and (continues or wrapped):
            pending = (pending[0], pending[1] + " " + raw.strip())
        else:
            if pending is not None:
                yield pending
            pending = (number, raw.strip())
        continues = pending[1].endswith("\\")
        if continues:
            pending = (pending[0], pending[1][:-1].rstrip())
    if pending is not None:
        yield pending


def _strip_prompt(line: str) -> str:
    return line[2:] if line.startswith("$ ") else line


def _scan(text: str) -> Iterator[tuple[int, str, bool]]:
    """(index, character, outside quotes) for each character of a shell line."""
    quote = ""
    escaped = False
    for index, char in enumerate(text):
        if escaped:
            escaped = False
            yield index, char, False
            continue
        if char == "\\" and quote != "'":
            escaped = True
            yield index, char, False
            continue
        if quote:
            if char == quote:
                quote = ""
            yield index, char, False
            continue
        if char in "'\"":
            quote = char
            yield index, char, False
            continue
        yield index, char, True


def _strip_comment(line: str) -> str:
    for index, char, outside in _scan(line):
        if outside and char == "#" and (index == 0 or line[index - 1].isspace()):
            return line[:index].rstrip()
    return line


def _commands(line: str) -> list[str]:
    """Split on ``&&``, ``||`` and ``;`` outside quotes (a lone ``|`` is left alone: in a
    synopsis it separates alternatives)."""
    parts: list[str] = []
    start = 0
    skip = False
    for index, char, outside in _scan(line):
        if skip:
            skip = False
            continue
        if not outside:
            continue
        pair = line[index:index + 2]
        if pair in ("&&", "||"):
            parts.append(line[start:index])
            start = index + 2
            skip = True
        elif char == ";":
            parts.append(line[start:index])
            start = index + 1
    parts.append(line[start:])
    return [part.strip() for part in parts if part.strip()]


def _split(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:  # an unbalanced quote: still split on blanks, the tests will say more
        return text.split()


def _collapse(segment: str) -> str:
    """The command from ``polysql`` on, with runs of blanks outside quotes made single."""
    start = segment.index("polysql")
    out: list[str] = []
    for _index, char, outside in _scan(segment[start:]):
        if outside and char.isspace():
            if out and out[-1] != " ":
                out.append(" ")
            continue
        out.append(char)
    return "".join(out).strip()


# -- from a documented command to arguments -------------------------------------------------------

def arguments(command: str, substitutions: Sequence[tuple[str, str]] = ()) -> list[str]:
    """The arguments (after ``polysql``) of a documented command, after replacing each
    placeholder text with its value, in order. In a synopsis the optional parts are taken as
    given: brackets are dropped, a lone ``...`` is dropped (``NAME...`` becomes ``NAME``) and of
    ``a|b|c`` the first alternative is kept -- so substitute first what should be otherwise."""
    for old, new in substitutions:
        if old not in command:
            raise AssertionError(f"placeholder {old!r} does not occur in {command!r}")
        command = command.replace(old, new)
    words = shlex.split(command)
    if not words or words[0] != "polysql":
        raise AssertionError(f"not a polysql command: {command!r}")
    synopsis = any(word.startswith("[") for word in words)
    if not synopsis:
        return words[1:]
    out: list[str] = []
    for word in words[1:]:
        word = word.strip("[]")
        if word in ("", "..."):
            continue
        word = word.removesuffix("...")
        if "|" in word and " " not in word:
            word = word.split("|")[0]
        out.append(word)
    return out


def parse(group: click.Group, args: Sequence[str], *, strict: bool = True) -> click.Context | None:
    """Resolve ``args`` to a command of ``group`` and parse its options and arguments as click
    would before running it (types converted, required ones checked), without running it. An
    unknown command or option raises :class:`click.UsageError`. With ``strict=False`` a file
    that must exist but is not there yet is accepted (None is returned): click reads every
    option name before it converts any value, so the names are still checked."""
    try:
        return _parse(group, args)
    except click.BadParameter as exc:
        kind = exc.param.type if exc.param is not None else None
        if strict or not (isinstance(kind, click.Path) and kind.exists):
            raise
        return None


def _parse(group: click.Group, args: Sequence[str]) -> click.Context:
    ctx = click.Context(group, info_name="polysql")
    command: click.Command = group
    rest = list(args)
    while isinstance(command, click.Group):
        if not rest or rest[0].startswith("-"):
            raise click.UsageError(f"expected a command of {ctx.command_path!r}, got {rest!r}",
                                   ctx)
        name, rest = rest[0], rest[1:]
        sub = command.get_command(ctx, name)
        if sub is None:
            raise click.UsageError(f"no such command {name!r} in {ctx.command_path!r}", ctx)
        if isinstance(sub, click.Group):
            ctx = click.Context(sub, info_name=name, parent=ctx)
            command = sub
            continue
        return sub.make_context(name, rest, parent=ctx)
    raise AssertionError("unreachable")
