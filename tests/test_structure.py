"""The structure rules of docs/architecture.md, checked on the source itself.

* No code outside ``backends/<engine>/`` names an engine (an identifier or a string literal:
  comments, docstrings and prose for people may mention one): every per-engine fact lives in
  that engine's ``EngineInfo`` and is read through :mod:`polysql.backends.catalog`. The names
  looked for come from the installed engines' ``INFO``, so an engine added tomorrow is covered
  without touching this file.
* Every installed engine's ``INFO`` provides what the rest of polysql reads from it, consistent
  with pyproject (entry points, extras) and with its backend class.
* Every engine package uses the standard module names, so knowing one engine means knowing all.

The import layers themselves are checked by import-linter (``python .ci/lint_imports.py``).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import io
import keyword
import re
import tokenize
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from fnmatch import fnmatch
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
import sqlglot
from polysql_testkit import availability

from polysql.backends import catalog
from polysql.backends.base import Backend, EngineInfo
from polysql.engines.registry import module_installed

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))

#: the source folders mapped into ``polysql.*`` whose code must not name an engine
SCANNED = ("polysql", "backends", "datasets", "normalizers", "analysis", "leaderboard")


@dataclass(frozen=True, slots=True)
class Allowance:
    """Words that name an engine but state no fact about it."""

    #: files it applies to (globs relative to the repo)
    files: tuple[str, ...]
    #: the one engine it covers
    engine: str
    #: the code words it covers (a regular expression matched against the whole word)
    word: str
    #: why this is not an engine fact
    reason: str

    def covers(self, finding: Finding) -> bool:
        return (finding.engines == (self.engine,)
                and any(fnmatch(finding.path, glob) for glob in self.files)
                and re.fullmatch(self.word, finding.word, re.IGNORECASE) is not None)


#: Kept small on purpose: only third-party data formats and Python's standard library belong
#: here. Anything about how an engine behaves goes in its EngineInfo instead.
ALLOWED: tuple[Allowance, ...] = (
    Allowance(("*",), "sqlite", r"sqlite3",
              "Python's standard sqlite3 module: polysql keeps its own caches with it and reads "
              "the data sets' database files with it"),
    Allowance(("polysql/*",), "sqlite", r"[\w-]+\.sqlite",
              "the file name of one of polysql's own caches (written with sqlite3)"),
    Allowance(("datasets/base.py", "datasets/folder.py", "datasets/registry.py",
               "datasets/bird.py", "datasets/spider.py", "datasets/demo/*",
               # compare()'s default dialect of the gold SQL it parses for ORDER BY; normalizers
               # may not import datasets.base.GOLD_DIALECT (siblings are independent)
               "normalizers/compare.py"), "sqlite", r".*",
              "text-to-SQL data sets (BIRD, Spider, the demo) ship each database as a .sqlite "
              "file and write their gold SQL in the sqlite dialect: a fact of the data, not of "
              "an engine"),
    Allowance(("datasets/rewrite/cases.py",), "sqlite", r".*",
              "a rewrite case package may ship its database as a SQLite file "
              "(schema/source.sqlite, checked by its magic bytes): a file format of the case "
              "package, not an engine fact"),
)

#: module names an engine package may use (``<standard>_<part>`` splits one job over files)
STANDARD_MODULES = ("__init__", "backend", "connect", "execute", "screen", "errors", "types",
                    "introspect", "load", "setup")
REQUIRED_MODULES = ("__init__", "backend")

HOW_TO_FIX = ("declare the fact in the engine's EngineInfo (backends/<engine>/__init__.py, "
              "fields in backends/base.py) and read it through polysql.backends.catalog; a "
              "third-party data format rather than an engine fact goes in ALLOWED in "
              "tests/test_structure.py with its reason")


# -- which words name an engine ----------------------------------------------------------------

def engine_terms(infos: list[EngineInfo]) -> dict[str, str]:
    """Every lower-case word that names an engine -> the engine's name: its name, dialect,
    short names, URL schemes, flavors, one-word display name and the names models use."""
    terms: dict[str, str] = {}
    for info in infos:
        words = {info.name, info.dialect, *info.aliases, *info.schemes, *info.flavors,
                 *info.text_names}
        if not any(ch.isspace() for ch in info.display_name):
            words.add(info.display_name)
        for word in words:
            terms.setdefault(word.lower(), info.name)
    return terms


def _part_names(part: str, terms: dict[str, str]) -> set[str]:
    """Engines one identifier part names: the whole part (``duckdb``, ``POSTGRES``), or a
    CamelCase word at its start or end (``SQLiteBackend``, ``toDuckDB``). ``sparkline`` and
    ``SCHEMA`` name nothing."""
    lower = part.lower()
    found = set()
    for term, engine in terms.items():
        if lower == term:
            found.add(engine)
            continue
        if part.isupper() or len(lower) <= len(term):
            continue
        starts = lower.startswith(term) and part[len(term)].isupper()
        ends = (lower.endswith(term) and part[-len(term)].isupper()
                and part[-len(term) - 1].islower())
        if starts or ends:
            found.add(engine)
    return found


def names_in_word(word: str, terms: dict[str, str]) -> set[str]:
    """Engines a code word names: split at anything but letters (``_``, digits, ``.``, ``://``,
    ``+``, ``[``) and at CamelCase boundaries next to an engine's name."""
    found: set[str] = set()
    for part in re.split(r"[^A-Za-z]+", word):
        if part:
            found |= _part_names(part, terms)
    return found


_PLAIN_WORD = re.compile(r"[A-Za-z]+(?:[-'’][A-Za-z]+)*")
_EDGE_PUNCT = "\"'`“”‘’()[]{}<>.,;:!?*"
# what separates the words of a literal: a URL, a file name or a dotted or snake_case name stays
# one word, so a finding quotes it whole
_CODE_SEPARATORS = re.compile(r"[\s,;()=<>'\"`|*!?]+")


def _is_plain(word: str) -> bool:
    bare = word.strip(_EDGE_PUNCT)
    return bool(_PLAIN_WORD.fullmatch(bare)) and not (len(bare) > 1 and bare.isupper())


def is_prose(text: str) -> bool:
    """A string that reads as a sentence (a message or help text for people), not code, SQL or
    a name: at least three words once ``{placeholders}`` are gone, most of them plain words
    (SQL's upper-case keywords are not)."""
    words = re.sub(r"\{[^{}]*\}", " ", text).replace("/", " ").split()
    return len(words) >= 3 and sum(map(_is_plain, words)) / len(words) >= 0.6


def code_words(text: str) -> list[str]:
    """The words of a string literal that is not prose."""
    return [word for word in _CODE_SEPARATORS.split(text) if word]


# -- reading a file ----------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Finding:
    path: str
    line: int
    word: str
    engines: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.word!r} names {', '.join(self.engines)}"


_SKIPPED = {tokenize.NL, tokenize.COMMENT, tokenize.ENCODING}
_STATEMENT_START = {tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, None}
_FSTRING_START = getattr(tokenize, "FSTRING_START", None)  # Python 3.12+
_FSTRING_END = getattr(tokenize, "FSTRING_END", None)


def _literal_text(source: str) -> str:
    """The characters a string token holds: its value when it is a plain literal, its source
    between the quotes for an f-string (the ``{...}`` parts are code and are checked too)."""
    prefix = re.match(r"[A-Za-z]*", source).group(0)  # type: ignore[union-attr]
    if "f" not in prefix.lower():
        value = ast.literal_eval(source)
        return value.decode("latin-1") if isinstance(value, bytes) else value
    body = source[len(prefix):]
    quote = body[:3] if body[:3] in ('"""', "'''") else body[:1]
    return body[len(quote):-len(quote)]


def _significant(source: str) -> list[tuple[int, str, int, int]]:
    """(type, text, line, end line) of every token that matters, with each f-string of Python
    3.12+ (start, middle parts, nested code, end) folded into one STRING token as in 3.11."""
    lines = source.splitlines(keepends=True)
    out: list[tuple[int, str, int, int]] = []
    depth = 0
    start: tuple[int, int] = (0, 0)
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == _FSTRING_START:
            if depth == 0:
                start = tok.start
            depth += 1
            continue
        if depth:
            if tok.type == _FSTRING_END:
                depth -= 1
                if depth == 0:
                    text = "".join(lines[start[0] - 1:tok.end[0]])
                    end_col = tok.end[1] + len("".join(lines[start[0] - 1:tok.end[0] - 1]))
                    out.append((tokenize.STRING, text[start[1]:end_col], start[0], tok.end[0]))
            continue
        if tok.type not in _SKIPPED:
            out.append((tok.type, tok.string, tok.start[0], tok.end[0]))
    return out


def scan_source(source: str, path: str, terms: dict[str, str]) -> list[Finding]:
    """Every identifier and string literal in ``source`` that names an engine. Comments,
    docstrings (any string that is a statement by itself) and prose (messages and help texts
    for people, see :func:`is_prose`) may mention one and are not looked at."""
    tokens = _significant(source)
    findings: list[Finding] = []

    def report(word: str, line: int) -> None:
        engines = names_in_word(word, terms)
        if engines:
            findings.append(Finding(path, line, word, tuple(sorted(engines))))

    i = 0
    while i < len(tokens):
        kind, text, line, _ = tokens[i]
        if kind == tokenize.NAME and not keyword.iskeyword(text):
            report(text, line)
            i += 1
            continue
        if kind != tokenize.STRING:
            i += 1
            continue
        # adjacent literals are one string ("a " "b"); each part keeps its own line
        j = i
        while j < len(tokens) and tokens[j][0] == tokenize.STRING:
            j += 1
        parts = [(_literal_text(t[1]), t[2]) for t in tokens[i:j]]
        before = tokens[i - 1][0] if i else None
        after = tokens[j][0] if j < len(tokens) else tokenize.ENDMARKER
        alone = before in _STATEMENT_START and after in (tokenize.NEWLINE, tokenize.ENDMARKER)
        if not alone and not is_prose("".join(part for part, _ in parts)):
            for part, part_line in parts:
                for word in code_words(part):
                    report(word, part_line)
        i = j
    return findings


def allowance(finding: Finding) -> int | None:
    """The index of the ALLOWED entry that covers ``finding``, if one does."""
    return next((i for i, entry in enumerate(ALLOWED) if entry.covers(finding)), None)


def engine_packages() -> dict[str, tuple[str, Path]]:
    """Each installed engine's package, as (module name, folder), found from its entry points."""
    packages: dict[str, tuple[str, Path]] = {}
    for scheme, entry in catalog.entry_points_by_scheme().items():
        spec = importlib.util.find_spec(entry.module)
        assert spec is not None and spec.submodule_search_locations, (
            f"entry point {scheme!r} names {entry.module}, which is not a package")
        folder = Path(spec.submodule_search_locations[0]).resolve()
        packages[catalog.info_for_scheme(scheme).name] = (entry.module, folder)
    return packages


def scanned_files() -> Iterator[Path]:
    """The .py files of the mapped source folders, less the installed engines' packages."""
    skip = {folder for _module, folder in engine_packages().values()}
    for top in SCANNED:
        for path in sorted((REPO / top).rglob("*.py")):
            if not skip.intersection(path.resolve().parents):
                yield path


def scan_tree() -> list[Finding]:
    """Every engine named in the scanned files, allowed or not."""
    terms = engine_terms(catalog.infos())
    findings: list[Finding] = []
    for path in scanned_files():
        rel = path.relative_to(REPO).as_posix()
        findings += scan_source(path.read_text(encoding="utf-8"), rel, terms)
    return findings


# -- the scanner does what it says ---------------------------------------------------------------

TERMS = {"sqlite": "sqlite", "duckdb": "duckdb", "postgres": "postgres",
         "postgresql": "postgres", "sc": "spark", "spark": "spark"}


@pytest.mark.parametrize("code", [
    'ENGINE = "duckdb"',
    'url = f"sqlite:///{path}"',
    'from polysql.backends.sqlite.backend import SQLiteBackend',
    'if backend.name == "postgres":\n    pass',
    'def to_duckdb(x):\n    return x',
    'QUERY = "SELECT count(*) FROM duckdb_tables()"',
    'url = "sc://host:15002"',
    'url = os.environ["POLYSQL_POSTGRES_URL"]',
    'EXTRA = "polysql[postgres]"',
    'DEFAULT_ENGINES = "sqlite,duckdb"',
    'pool = SparkPool()',
    'x = fn(\n    "duckdb")',
    'ENGINES = ("sqlite", "postgresql")',
])
def test_scanner_finds_engine_facts(code: str) -> None:
    assert scan_source(code, "x.py", TERMS), code


@pytest.mark.parametrize("code", [
    '"""Runs on DuckDB and SQLite, as the docs say."""\nx = 1',
    'def f():\n    """Mention postgres freely here."""\n    return 1',
    'x = 1  # duckdb does this differently',
    'raise EngineError("the DuckDB file is locked by another process")',
    'message = "MySQL/MariaDB refused the statement; see the log"',
    'raise ConfigError(f"cannot parse {url!r}: write it as e.g. duckdb:///path/to/file")',
    'HELP = "engines to run, comma-separated (default: sqlite,duckdb)"',
    'sparkline = render(values)',
    'description = "the scheme of the URL"',
])
def test_scanner_leaves_prose_docs_and_other_words_alone(code: str) -> None:
    assert scan_source(code, "x.py", TERMS) == [], code


def test_allowlist_covers_only_its_own_words() -> None:
    code = 'import sqlite3\nconn = sqlite3.connect(path)\nENGINE = "sqlite"'
    findings = scan_source(code, "polysql/core/store.py", TERMS)
    assert [(f.word, allowance(f) is None) for f in findings] == [
        ("sqlite3", False), ("sqlite3", False), ("sqlite", True)]


def test_engine_terms_come_from_every_installed_engine() -> None:
    terms = engine_terms(catalog.infos())
    for info in catalog.infos():
        assert terms[info.name] == info.name
        for scheme in info.schemes:
            assert scheme in terms


# -- the rule ------------------------------------------------------------------------------------

def test_no_engine_is_named_outside_its_package() -> None:
    findings = [f for f in scan_tree() if allowance(f) is None]
    if findings:
        pytest.fail(f"{len(findings)} engine fact(s) outside backends/<engine>/ -- {HOW_TO_FIX}:"
                    "\n" + "\n".join(str(f) for f in findings), pytrace=False)


def test_every_allowlist_entry_is_still_needed() -> None:
    used = {allowance(f) for f in scan_tree()}
    stale = [(entry.files, entry.word) for index, entry in enumerate(ALLOWED)
             if index not in used]
    assert not stale, f"ALLOWED entries that nothing matches any more (drop them): {stale}"


# -- every engine declares every fact ------------------------------------------------------------

def _entry_points_in_pyproject() -> dict[str, str]:
    return dict(PYPROJECT["project"]["entry-points"][catalog.ENTRY_POINT_GROUP])


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_names(extra: str) -> set[str]:
    names: set[str] = set()
    for requirement in PYPROJECT["project"]["optional-dependencies"][extra]:
        match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)(\[([^\]]*)\])?", requirement)
        assert match, requirement
        if _normalized(match.group(1)) == "polysql":  # polysql[other,extras]
            for inner in (match.group(3) or "").split(","):
                names |= _requirement_names(inner.strip())
        else:
            names.add(_normalized(match.group(1)))
    return names


INFOS = catalog.infos()


def test_installed_entry_points_match_pyproject() -> None:
    installed = {name: f"{ep.module}:{ep.attr}"
                 for name, ep in catalog.entry_points_by_scheme().items()}
    assert installed == _entry_points_in_pyproject(), (
        "the installed polysql.backends entry points differ from pyproject.toml: "
        "re-run pip install -e '.[dev]'")


@pytest.mark.parametrize("info", INFOS, ids=[info.name for info in INFOS])
def test_engine_info_is_complete(info: EngineInfo) -> None:
    assert re.fullmatch(r"[a-z][a-z0-9_]*", info.name), info.name
    sqlglot.Dialect.get_or_raise(info.dialect)  # a dialect sqlglot knows
    assert info.display_name.strip(), "display_name is empty"

    # schemes: exactly the entry points in pyproject that point at this engine's package
    package = catalog.entry_points_by_scheme()[info.schemes[0]].module
    pointing = {scheme for scheme, target in _entry_points_in_pyproject().items()
                if target.split(":")[0] == package}
    assert set(info.schemes) == pointing, (info.schemes, pointing)

    # short names: lower case, each standing for one of its own schemes or for url_env's URL
    assert info.aliases and info.name in info.aliases
    for alias, url in info.aliases.items():
        assert alias == alias.lower()
        if url:
            assert url.split("://")[0] in info.schemes, (alias, url)
        else:
            assert info.url_env, f"short name {alias!r} has no URL and the engine no url_env"
    assert set(info.flavors) <= set(info.aliases)

    # the extra exists in pyproject and installs the client modules
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert bool(info.extra) == bool(info.client_modules), (
        "an engine with its own extra names the client modules it installs, and only then")
    if info.extra:
        assert info.extra in extras, f"extra {info.extra!r} is not in pyproject.toml"
        wanted = _requirement_names(info.extra)
        providers = packages_distributions()
        for module in info.client_modules:
            if not module_installed(module):
                availability.unavailable(info.name, f"pip install 'polysql[{info.extra}]'")
            top = module.split(".")[0]
            dists = {_normalized(d) for d in providers.get(top, [])}
            assert dists & wanted, (
                f"client module {module!r} comes from {sorted(dists)}, which extra "
                f"{info.extra!r} ({sorted(wanted)}) does not install")

    if info.checksum_sql is not None:
        assert "{sql}" in info.checksum_sql
    for _signal, pattern in info.error_vocabulary:
        re.compile(pattern)
    if info.container is not None:
        module, _, function = info.container.starter.partition(":")
        assert module.startswith(package + ".") and function, info.container.starter


@pytest.mark.parametrize("info", INFOS, ids=[info.name for info in INFOS])
def test_backend_class_carries_its_info(info: EngineInfo) -> None:
    cls = availability.require_client(info.name)
    assert issubclass(cls, Backend)
    assert cls.info is info and cls.name == info.name and cls.dialect == info.dialect
    for scheme in info.schemes:
        assert catalog.entry_points_by_scheme()[scheme].load() is cls


# -- every engine package has the same shape -----------------------------------------------------

PACKAGES = engine_packages()


@pytest.mark.parametrize("name", sorted(PACKAGES))
def test_engine_package_uses_the_standard_module_names(name: str) -> None:
    folder = PACKAGES[name][1]
    modules = sorted(path.stem for path in folder.glob("*.py"))
    missing = [m for m in REQUIRED_MODULES if m not in modules]
    assert not missing, f"{folder}: missing {missing}"
    odd = [m for m in modules if m not in STANDARD_MODULES
           and not any(m.startswith(f"{std}_") for std in STANDARD_MODULES[1:])]
    assert not odd, (f"{folder}: modules {odd} have none of the standard names "
                     f"{STANDARD_MODULES} (or <standard>_<part>): rename them so every engine "
                     "keeps the same job in the same file")
    subfolders = [p.name for p in folder.iterdir() if p.is_dir() and p.name != "__pycache__"]
    assert not subfolders, f"{folder}: an engine package is flat, found {subfolders}"


@pytest.mark.parametrize("name", sorted(PACKAGES))
def test_engine_package_imports_no_other_engine(name: str) -> None:
    module, folder = PACKAGES[name]
    others = {other for other, _ in PACKAGES.values() if other != module}
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                targets = [node.module or ""]
            else:
                continue
            for target in targets:
                assert not any(target == o or target.startswith(o + ".") for o in others), (
                    f"{path}:{node.lineno} imports {target}: engines share code through "
                    "backends/_common/, never through each other")
