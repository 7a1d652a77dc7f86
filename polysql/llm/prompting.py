"""Prompts for model predictors: which template, which instruction level, and what the model sees.

A prompt is rendered from a versioned Jinja2 template (``polysql/llm/prompts/NAME_vN.j2``, or any
``.j2`` file given by path) for one question and one target engine. It shows the schema exactly
as the loaded engine holds it (:func:`polysql.engines.ddl.render_schema`), the question and its evidence,
and an instruction level:

- ``generic``: "write a SQL query", the engine is not named;
- ``dialect``: the engine and its version are named ("PostgreSQL 15");
- ``pitfalls``: as ``dialect``, plus the engine's known pitfalls (``EngineInfo.pitfalls``).

Every prompt carries its template name, version and a hash of the exact messages sent, so a
prediction can always be traced to the text that produced it.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from polysql.backends import catalog
from polysql.backends.base import EngineInfo
from polysql.core.digest import content_digest
from polysql.core.errors import ConfigError

LEVELS = ("generic", "dialect", "pitfalls")
DEFAULT_TEMPLATE = "text2sql"
DEFAULT_LEVEL = "dialect"

_VERSIONED = re.compile(r"^(?P<name>.+)_v(?P<version>\d+)$")
_VERSION_NUMBER = re.compile(r"\d+(?:\.\d+)*")


# -- engine naming -------------------------------------------------------------------------------
def engine_label(dialect: str, version: str | None) -> str:
    """How a prompt names the target engine: product and the version that matters, e.g.
    ``PostgreSQL 15``, ``MariaDB 10.11``, ``DuckDB 1.1``, ``SQLite 3.45``.

    ``version`` is what the backend reports: a bare number (SQLite, DuckDB) or a product name
    and number (``PostgreSQL 15.4``, ``MariaDB 10.11.6``), which wins over the dialect's name
    because a MySQL-dialect engine may really be MariaDB. Product names and how many numbers
    make a major version come from the engines' :class:`~polysql.backends.base.EngineInfo`.
    """
    info = _engine_of_dialect(dialect)
    product = info.display_name if info is not None else dialect.capitalize()
    if not version:
        return product
    match = _VERSION_NUMBER.search(version)
    named = version[: match.start()].strip() if match else version.strip()
    if named:
        product = named.split()[0]
    if match is None:
        return product
    parts = match.group(0).split(".")
    # Major.minor, except from the release on which the product's first number alone is major.
    owner = next((i for i in catalog.infos() if i.display_name == product), None)
    since = owner.major_only_from if owner is not None else None
    keep = 1 if since is not None and int(parts[0]) >= since else 2
    return f"{product} {'.'.join(parts[:keep])}"


def _engine_of_dialect(dialect: str) -> EngineInfo | None:
    """The engine speaking ``dialect``; the one named after it when several do."""
    speaking = [info for info in catalog.infos() if info.dialect == dialect.lower()]
    return next((info for info in speaking if info.name == info.dialect),
                speaking[0] if speaking else None)


# -- pitfalls ------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Pitfall:
    topic: str
    text: str


@dataclass(frozen=True, slots=True)
class PitfallBook:
    """Every engine's pitfalls by sqlglot dialect. ``version`` is recorded with a model's
    settings: it changes whenever any text does, so results from different lists never mix."""

    version: int | str
    by_dialect: dict[str, tuple[Pitfall, ...]]

    def for_dialect(self, dialect: str) -> tuple[Pitfall, ...]:
        return self.by_dialect.get(dialect, ())


# Digest of the texts that were version 1 of the pitfalls list (before each engine declared its
# own): while they stay unchanged the version stays 1, so runs recorded with it still resume.
_VERSION_1_DIGEST = "sha256:004b820ab7127cd9fc542c234ee4d35f"


def load_pitfalls(engines: Iterable[EngineInfo] | None = None) -> PitfallBook:
    """The pitfalls every engine declares (``EngineInfo.pitfalls``), by dialect; ``engines``
    defaults to the installed ones."""
    book: dict[str, tuple[Pitfall, ...]] = {}
    declared_by: dict[str, str] = {}
    for info in catalog.infos() if engines is None else engines:
        items = tuple(_pitfall(info, number, entry)
                      for number, entry in enumerate(info.pitfalls, start=1))
        if not items:
            continue
        if info.dialect in book and book[info.dialect] != items:
            raise ConfigError(f"engines {declared_by[info.dialect]!r} and {info.name!r} both speak "
                              f"{info.dialect} but declare different pitfalls: declare them on one "
                              "engine only (EngineInfo.pitfalls)")
        book[info.dialect] = items
        declared_by.setdefault(info.dialect, info.name)
    texts = {dialect: [p.text for p in items] for dialect, items in sorted(book.items())}
    digest = content_digest(texts)
    return PitfallBook(1 if digest == _VERSION_1_DIGEST else digest, book)


def _pitfall(info: EngineInfo, number: int, entry: tuple[str, str]) -> Pitfall:
    # Checked when read: an engine package installed from elsewhere is not type-checked with us.
    if not (isinstance(entry, tuple) and len(entry) == 2
            and all(isinstance(part, str) and part.strip() for part in entry)):
        raise ConfigError(f"engine {info.name!r}: pitfall #{number} must be a (topic, text) pair "
                          f"of non-empty strings, got {entry!r} (EngineInfo.pitfalls)")
    topic, text = entry
    return Pitfall(topic, text.strip())


# -- templates -----------------------------------------------------------------------------------
def _packaged(name: str) -> Any:
    return resources.files("polysql.llm.prompts").joinpath(name)


def packaged_templates() -> dict[str, list[int]]:
    """Template names shipped with polysql and their versions (``{"text2sql": [1]}``)."""
    found: dict[str, list[int]] = {}
    for entry in resources.files("polysql.llm.prompts").iterdir():
        match = _VERSIONED.match(entry.name.removesuffix(".j2")) if entry.name.endswith(".j2") else None
        if match:
            found.setdefault(match["name"], []).append(int(match["version"]))
    return {name: sorted(versions) for name, versions in sorted(found.items())}


@dataclass(frozen=True, slots=True)
class TemplateSource:
    name: str
    version: str
    text: str
    origin: str  # packaged file name or the path it was read from

    @property
    def ref(self) -> str:
        return f"{self.name}_v{self.version}"


def find_template(ref: str) -> TemplateSource:
    """``text2sql`` (latest packaged version), ``text2sql_v1`` (that version) or a ``.j2`` path.

    A template read from a path is versioned by its ``_vN`` suffix if it has one, otherwise by a
    digest of its text, so editing the file can never pass for the same prompt.
    """
    if ref.endswith(".j2") and ("/" in ref or "\\" in ref or Path(ref).exists()):
        path = Path(ref)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read prompt template {path}: {exc}") from exc
        match = _VERSIONED.match(path.stem)
        if match:
            return TemplateSource(match["name"], match["version"], text, str(path))
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
        return TemplateSource(path.stem, f"sha-{digest}", text, str(path))
    available = packaged_templates()
    match = _VERSIONED.match(ref)
    name, version = (match["name"], int(match["version"])) if match else (ref, None)
    if name not in available or (version is not None and version not in available[name]):
        shipped = ", ".join(f"{n}_v{v}" for n, vs in available.items() for v in vs) or "none"
        raise ConfigError(f"unknown prompt template {ref!r}: shipped templates are {shipped} "
                          "(a name without _vN means its latest version), or give a path to a .j2 file")
    chosen = version if version is not None else available[name][-1]
    file_name = f"{name}_v{chosen}.j2"
    return TemplateSource(name, str(chosen), _packaged(file_name).read_text(encoding="utf-8"), file_name)


# -- prompts -------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class PromptSettings:
    """How prompts are built; recorded with the run so results can be told apart."""

    level: str = DEFAULT_LEVEL
    cot: bool = False
    sample_rows: int = 0
    template: str = DEFAULT_TEMPLATE

    def __post_init__(self) -> None:
        if self.level not in LEVELS:
            raise ConfigError(f"unknown prompt level {self.level!r}: use one of {', '.join(LEVELS)}")
        if self.sample_rows < 0:
            raise ConfigError(f"sample rows must be 0 or more, got {self.sample_rows}")


@dataclass(frozen=True, slots=True)
class Prompt:
    """The exact chat messages for one (question, engine), with where they came from."""

    system: str
    user: str
    template: str  # template name, e.g. "text2sql"
    version: str  # template version, e.g. "1"
    hash: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "hash", prompt_hash(self.messages))

    @property
    def messages(self) -> list[dict[str, str]]:
        messages = [{"role": "system", "content": self.system}] if self.system else []
        return [*messages, {"role": "user", "content": self.user}]

    def meta(self) -> dict[str, str]:
        """What every prediction record stores about its prompt."""
        return {"prompt_template": self.template, "prompt_version": self.version,
                "prompt_hash": self.hash, "prompt_system": self.system, "prompt_text": self.user}


def prompt_hash(messages: list[dict[str, str]]) -> str:
    """sha256 of the messages in a canonical JSON form: equal text, equal hash, on any machine."""
    canonical = json.dumps(messages, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class PromptBuilder:
    """Renders prompts for one :class:`PromptSettings`; thread-safe after construction."""

    def __init__(self, settings: PromptSettings | None = None, *, pitfalls: PitfallBook | None = None) -> None:
        try:
            import jinja2
        except ImportError as exc:
            raise ConfigError("model predictors need Jinja2: pip install 'polysql[llm]'") from exc
        self.settings = settings or PromptSettings()
        self.source = find_template(self.settings.template)
        self.pitfalls = pitfalls or load_pitfalls()
        # StrictUndefined: a misspelt variable in a template is an error, not a silently empty hole.
        env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=False,
                                 autoescape=False)
        try:
            self._template = env.from_string(self.source.text)
        except jinja2.TemplateSyntaxError as exc:
            raise ConfigError(f"prompt template {self.source.origin} line {exc.lineno}: {exc.message}") from exc
        if "user" not in self._template.blocks:
            raise ConfigError(f"prompt template {self.source.origin} needs a {{% block user %}} "
                              "(and usually a {% block system %})")
        self._jinja_error = jinja2.TemplateError

    def template_digest(self) -> str:
        """Digest of the template's text and the pitfalls it may list: an edited template file
        with an unchanged version suffix still changes every prompt."""
        pitfalls = {dialect: [p.text for p in items]
                    for dialect, items in sorted(self.pitfalls.by_dialect.items())}
        return content_digest(self.source.text, pitfalls)

    def describe(self) -> dict[str, Any]:
        return {"template": self.source.name, "template_version": self.source.version,
                "level": self.settings.level, "cot": self.settings.cot,
                "sample_rows": self.settings.sample_rows, "pitfalls_version": self.pitfalls.version}

    def render(self, *, question: str, evidence: str, schema: str, dialect: str,
               engine_version: str | None) -> Prompt:
        level = self.settings.level
        values = {
            "level": level,
            "engine_label": engine_label(dialect, engine_version),
            "dialect": dialect,
            "pitfalls": [p.text for p in self.pitfalls.for_dialect(dialect)] if level == "pitfalls" else [],
            "schema": schema,
            "question": question,
            "evidence": evidence or "",
            "cot": self.settings.cot,
        }
        try:
            system = self._block("system", values)
            user = self._block("user", values)
        except self._jinja_error as exc:
            raise ConfigError(f"prompt template {self.source.origin} failed to render: {exc}") from exc
        return Prompt(system=system, user=user, template=self.source.name, version=self.source.version)

    def _block(self, name: str, values: dict[str, Any]) -> str:
        render: Callable[[Any], Any] | None = self._template.blocks.get(name)
        if render is None:
            return ""
        text = "".join(render(self._template.new_context(values)))
        # Collapse the blank-line runs conditional sections leave behind; keep the text readable.
        return re.sub(r"\n{3,}", "\n\n", text).strip()


class SchemaCatalog:
    """Schema text per (engine, database, sample rows), rendered once from the loaded engine and
    reused for every question on that database."""

    def __init__(self) -> None:
        self._texts: dict[tuple[str, str, int], str] = {}
        self._lock = threading.Lock()
        self.renders = 0  # how many times a schema was actually rendered

    def get(self, engine: str, db_id: str, sample_rows: int, render: Callable[[], str]) -> str:
        key = (engine, db_id, sample_rows)
        with self._lock:
            text = self._texts.get(key)
        if text is None:
            # Rendered outside the lock: each engine's worker renders only its own engine's
            # schemas, so two threads never race on one key.
            text = render()
            with self._lock:
                self.renders += 1
                text = self._texts.setdefault(key, text)
        return text

    def __len__(self) -> int:
        with self._lock:
            return len(self._texts)
