"""Prompt rendering: the schema comes from the loaded engine, levels, chain of thought, evidence,
templates and a hash that only changes when the text does."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import polysql
from polysql.backends import catalog
from polysql.backends.base import Backend, EngineInfo
from polysql.core.errors import ConfigError
from polysql.datasets.registry import get_dataset
from polysql.engines.ddl import render_schema

pytest.importorskip("jinja2", reason="prompt templates need Jinja2 (polysql[llm])")

from polysql.llm.prompting import (  # noqa: E402  (after the importorskip on purpose)
    LEVELS,
    PromptBuilder,
    PromptSettings,
    SchemaCatalog,
    engine_label,
    find_template,
    load_pitfalls,
    packaged_templates,
)

QUESTION = "How many orders were placed through the online channel?"


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Backend]]:
    """The demo 'retail' database loaded into DuckDB and copied to SQLite, opened read-only."""
    source = get_dataset("demo").database_url("retail")
    folder = tmp_path_factory.mktemp("engines")
    backends: dict[str, Backend] = {}
    for engine, url in (("duckdb", f"duckdb:///{folder / 'retail.duckdb'}"),
                        ("sqlite", f"sqlite:///{folder / 'retail.sqlite'}")):
        polysql.load(source, url)
        backends[engine] = polysql.connect(url, read_only=True)
    yield backends
    for backend in backends.values():
        backend.close()


def render(backend: Backend, **settings: object) -> tuple[str, str, str]:
    question = str(settings.pop("question", QUESTION))
    evidence = str(settings.pop("evidence", ""))
    builder = PromptBuilder(PromptSettings(**settings))  # type: ignore[arg-type]
    schema = render_schema(backend, sample_rows=builder.settings.sample_rows)
    prompt = builder.render(question=question, evidence=evidence, schema=schema,
                            dialect=backend.dialect, engine_version=backend.version())
    return prompt.system, prompt.user, prompt.hash


def test_prompt_shows_the_schema_as_the_loaded_engine_holds_it(loaded: dict[str, Backend]) -> None:
    duck_system, duck_user, _ = render(loaded["duckdb"])
    lite_system, lite_user, _ = render(loaded["sqlite"])
    duck_schema = render_schema(loaded["duckdb"])
    lite_schema = render_schema(loaded["sqlite"])
    assert duck_schema.strip() in duck_user and lite_schema.strip() in lite_user
    # the two engines hold the same data with different types; each prompt shows its own
    assert duck_schema != lite_schema
    assert "VARCHAR" in duck_user and "VARCHAR" not in lite_user
    assert QUESTION in duck_user and QUESTION in lite_user
    assert duck_user.count("CREATE TABLE") == len(loaded["duckdb"].tables())


def test_levels_name_the_engine_and_its_version_and_list_its_pitfalls(loaded: dict[str, Backend]) -> None:
    duckdb = loaded["duckdb"]
    label = engine_label("duckdb", duckdb.version())
    assert label.startswith("DuckDB ") and duckdb.version().startswith(label.split()[1])
    pitfalls = [p.text for p in load_pitfalls().for_dialect("duckdb")]
    others = [p.text for p in load_pitfalls().for_dialect("sqlite")]
    texts = {level: "\n".join(render(duckdb, level=level)[:2]) for level in LEVELS}
    assert "DuckDB" not in texts["generic"]
    assert label in texts["dialect"] and label in texts["pitfalls"]
    assert not any(p in texts["dialect"] for p in pitfalls)
    assert all(p in texts["pitfalls"] for p in pitfalls)
    assert not any(p in texts["pitfalls"] for p in others)


def test_chain_of_thought_and_evidence_appear_only_when_asked(loaded: dict[str, Backend]) -> None:
    backend = loaded["sqlite"]
    _, plain, _ = render(backend)
    _, thinking, _ = render(backend, cot=True)
    assert "step by step" in thinking and "step by step" not in plain
    assert "no explanation" in plain and "no explanation" not in thinking
    _, hinted, _ = render(backend, evidence="online means channel = 'online'")
    assert "Hint: online means channel = 'online'" in hinted
    assert "Hint:" not in plain


def test_sample_rows_come_from_the_engine(loaded: dict[str, Backend]) -> None:
    _, user, _ = render(loaded["duckdb"], sample_rows=2)
    first = loaded["duckdb"].tables()[0]
    assert f"example row(s) from {first.name}" in user
    _, without, _ = render(loaded["duckdb"])
    assert "example row(s)" not in without


def test_hash_is_stable_and_follows_the_text(loaded: dict[str, Backend], tmp_path: Path) -> None:
    backend = loaded["sqlite"]
    system, user, first = render(backend)
    assert render(backend)[2] == first
    messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    canonical = json.dumps(messages, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    assert first == hashlib.sha256(canonical.encode("utf-8")).hexdigest()
    assert render(backend, question=QUESTION + " ")[2] == first  # trimmed: same text, same hash
    assert render(backend, question="How many stores are there?")[2] != first
    assert render(backend, level="pitfalls")[2] != first
    # another process with another hash seed renders the very same prompt
    script = (
        "import sys\n"
        "from polysql.llm.prompting import PromptBuilder\n"
        "p = PromptBuilder().render(question=sys.argv[1], evidence='', schema=sys.stdin.read(),"
        " dialect='sqlite', engine_version=sys.argv[2])\n"
        "print(p.hash)\n"
    )
    out = subprocess.run([sys.executable, "-c", script, QUESTION, backend.version()],
                         input=render_schema(backend), capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONHASHSEED": "12345"}, cwd=tmp_path)
    assert out.stdout.strip() == first


def test_prompt_meta_names_template_version_and_hash(loaded: dict[str, Backend]) -> None:
    builder = PromptBuilder()
    prompt = builder.render(question=QUESTION, evidence="", schema=render_schema(loaded["sqlite"]),
                            dialect="sqlite", engine_version="3.45.1")
    meta = prompt.meta()
    assert (meta["prompt_template"], meta["prompt_version"]) == ("text2sql", "1")
    assert meta["prompt_hash"] == prompt.hash and meta["prompt_text"] == prompt.user
    assert meta["prompt_system"] == prompt.system
    assert [m["role"] for m in prompt.messages] == ["system", "user"]


@pytest.mark.parametrize(("dialect", "version", "label"), [
    ("postgres", "PostgreSQL 15.4", "PostgreSQL 15"),
    ("postgres", "PostgreSQL 9.6.24", "PostgreSQL 9.6"),
    ("mysql", "MariaDB 10.11.6", "MariaDB 10.11"),
    ("mysql", "MySQL 8.0.36", "MySQL 8.0"),
    ("duckdb", "1.1.3", "DuckDB 1.1"),
    ("sqlite", "3.45.1", "SQLite 3.45"),
    ("sqlite", None, "SQLite"),
    ("clickhouse", "24.8.1.1", "ClickHouse 24.8"),
    ("bigquery", None, "BigQuery"),
    ("spark", "3.5.1", "Spark SQL 3.5"),
    ("trino", None, "Trino"),  # a dialect no engine speaks
])
def test_engine_label(dialect: str, version: str | None, label: str) -> None:
    assert engine_label(dialect, version) == label


@pytest.mark.parametrize("info", catalog.infos(), ids=lambda info: info.name)
def test_every_engine_is_named_as_it_declares(info: EngineInfo) -> None:
    assert engine_label(info.dialect, None) == info.display_name
    keep = 1 if info.major_only_from is not None else 2
    release = f"{info.major_only_from or 2}.4.1"
    assert engine_label(info.dialect, release) == \
        f"{info.display_name} {'.'.join(release.split('.')[:keep])}"


def test_templates_are_versioned_and_custom_files_carry_their_own_version(tmp_path: Path) -> None:
    assert packaged_templates()["text2sql"][0] == 1
    assert find_template("text2sql").ref == f"text2sql_v{packaged_templates()['text2sql'][-1]}"
    assert find_template("text2sql_v1").version == "1"
    with pytest.raises(ConfigError, match=r"unknown prompt template 'text2sql_v99'.*text2sql_v1"):
        find_template("text2sql_v99")
    mine = tmp_path / "terse_v3.j2"
    mine.write_text("{% block user %}{{ schema }}\n{{ question }}{% endblock %}", encoding="utf-8")
    source = find_template(str(mine))
    assert (source.name, source.version) == ("terse", "3")
    unversioned = tmp_path / "terse.j2"
    unversioned.write_text(mine.read_text(encoding="utf-8"), encoding="utf-8")
    first = find_template(str(unversioned)).version
    unversioned.write_text("{% block user %}{{ question }}{% endblock %}", encoding="utf-8")
    assert first.startswith("sha-") and find_template(str(unversioned)).version != first
    prompt = PromptBuilder(PromptSettings(template=str(mine))).render(
        question="Q?", evidence="", schema="CREATE TABLE t (a INT);", dialect="duckdb", engine_version="1.1.3")
    assert prompt.system == "" and prompt.user == "CREATE TABLE t (a INT);\nQ?"
    assert [m["role"] for m in prompt.messages] == ["user"]


def test_bad_settings_and_templates_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown prompt level 'loud'.*generic, dialect, pitfalls"):
        PromptSettings(level="loud")
    with pytest.raises(ConfigError, match="sample rows"):
        PromptSettings(sample_rows=-1)
    typo = tmp_path / "typo_v1.j2"
    typo.write_text("{% block user %}{{ questoin }}{% endblock %}", encoding="utf-8")
    builder = PromptBuilder(PromptSettings(template=str(typo)))
    with pytest.raises(ConfigError, match="typo_v1.j2 failed to render.*questoin"):
        builder.render(question="Q?", evidence="", schema="", dialect="sqlite", engine_version=None)
    broken = tmp_path / "broken_v1.j2"
    broken.write_text("{% block user %}{{ question }", encoding="utf-8")
    with pytest.raises(ConfigError, match="broken_v1.j2 line 1"):
        PromptBuilder(PromptSettings(template=str(broken)))
    blockless = tmp_path / "blockless_v1.j2"
    blockless.write_text("{{ question }}", encoding="utf-8")
    with pytest.raises(ConfigError, match="needs a {% block user %}"):
        PromptBuilder(PromptSettings(template=str(blockless)))


def test_schema_catalog_renders_once_per_engine_database_and_rows(loaded: dict[str, Backend]) -> None:
    catalog = SchemaCatalog()
    calls: list[int] = []

    def render_duckdb(rows: int) -> str:
        calls.append(rows)
        return render_schema(loaded["duckdb"], sample_rows=rows)

    first = catalog.get("duckdb", "retail", 0, lambda: render_duckdb(0))
    again = catalog.get("duckdb", "retail", 0, lambda: render_duckdb(0))
    with_rows = catalog.get("duckdb", "retail", 1, lambda: render_duckdb(1))
    assert first == again and first != with_rows
    assert calls == [0, 1] and len(catalog) == 2 and catalog.renders == 2
