"""A new rewrite case package: a skeleton that loads as it is, with TODO where the author writes.

The skeleton holds a small ``items`` table in the engine's own DDL (``EngineInfo.setup_template``)
and a real, if tiny, rewrite over it, so it is a working example from the start; ``load_case(path,
strict=True)`` lists what is still TODO. The CLI's ``polysql rewrite new-case`` calls
:func:`scaffold_case`.
"""

from __future__ import annotations

import json
import shutil
from datetime import date
from pathlib import Path

from polysql.core.errors import ConfigError
from polysql.datasets.rewrite.cases import (
    CASE_FILE,
    DEFAULT_TIMEOUT,
    INPUT_FILE,
    NAME,
    OPPORTUNITY_FILE,
    SETUP_SQL_FILE,
)
from polysql.rewrite.cases import engine_info, installed_engines, load_case

__all__ = ["scaffold_case"]

_SETUP_ROWS = """
INSERT INTO items (id, name, price) VALUES
    (1, 'apple', 1.50),
    (2, 'banana', 0.25),
    (3, 'cherry', 4.00);
"""
# A real (if tiny) rewrite so the skeleton is a working example: the IN-subquery filters the same
# table on its key, so it reduces to the subquery's own predicate.
_INPUT_TEMPLATE = """\
-- TODO: replace with the query to rewrite (exactly one statement).
SELECT name, price
FROM items
WHERE id IN (SELECT id FROM items WHERE price > 1)
ORDER BY name
"""
_REFERENCE_TEMPLATE = """\
-- TODO: replace with a faster or simpler query that returns the same rows.
SELECT name, price
FROM items
WHERE price > 1
ORDER BY name
"""
_OPPORTUNITY_TEMPLATE = """\
# {case_id}

TODO: say what the rewrite exploits: which part of the input is redundant or slow, why the
reference rewrite returns the same rows on every database the schema allows, and which
engine behaviour makes it faster on {engine}.

The skeleton's example: `id IN (SELECT id FROM items WHERE ...)` filters `items` on its own key,
so it is the subquery's predicate applied directly.
"""
_CASE_TEMPLATE = """\
id: {case_id}
pool: {pool}
dialect: {dialect}
engine: {engine_yaml}
description: TODO one line on what this case tests
database:
  setup_sql: schema/setup.sql
contract:
  row_order: auto          # bag | ordered | auto (ordered only under an outermost ORDER BY)
  numeric_tolerance:
    relative: 0
    absolute: 0
  extra_checks: [same_column_names]
provenance:
  author: TODO
  source: authored         # a URL, or "authored"
  license: TODO            # SPDX identifier, e.g. CC-BY-4.0
  created: {created}
tags: []
timeout: {timeout:g}
"""


def scaffold_case(root: str | Path, case_id: str, *, engine: str, dialect: str | None = None,
                  pool: str) -> Path:
    """Write a skeleton case to ``root/<pool>/<case_id>`` and return its folder.

    The skeleton loads as it is (a small ``items`` table, a real example rewrite over it) and
    marks with TODO what the author must replace. ``dialect`` defaults to the engine's.
    """
    for field, value in (("case id", case_id), ("pool", pool)):
        if not NAME.fullmatch(value):
            raise ConfigError(f"{field} must use only a-z, 0-9, '_' and '-', got {value!r}")
    engines = installed_engines()
    info = engine_info(engine)
    if info is None:
        raise ConfigError(f"unknown engine {engine!r}: use one of {', '.join(engines.names)}, "
                          "or an engine URL")
    dialect = dialect or info.dialect
    if dialect not in engines.dialects:
        raise ConfigError(f"dialect must be one of {', '.join(engines.dialects)}, "
                          f"got {dialect!r}")
    if info.dialect != dialect:
        raise ConfigError(f"engine {engine!r} speaks the {info.dialect} dialect, not {dialect!r}")

    case_dir = Path(root).expanduser().absolute() / pool / case_id
    if case_dir.exists():
        raise ConfigError(f"{case_dir} already exists; choose another case id")
    files = {
        # json.dumps quotes the engine so a URL's ':' or '#' cannot change the YAML's meaning
        CASE_FILE: _CASE_TEMPLATE.format(case_id=case_id, pool=pool, dialect=dialect,
                                         engine_yaml=json.dumps(engine),
                                         created=date.today().isoformat(),
                                         timeout=DEFAULT_TIMEOUT),
        INPUT_FILE: _INPUT_TEMPLATE,
        "sql/reference_rewrite_01.sql": _REFERENCE_TEMPLATE,
        SETUP_SQL_FILE: f"-- TODO: the tables and rows the case needs, in {dialect} SQL.\n"
                        f"{info.setup_template}{_SETUP_ROWS}",
        OPPORTUNITY_FILE: _OPPORTUNITY_TEMPLATE.format(case_id=case_id, engine=engine),
    }
    try:
        for relative, text in files.items():
            target = case_dir / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        load_case(case_dir)  # the skeleton must load; a failure here is a bug in the templates
    except BaseException:
        shutil.rmtree(case_dir, ignore_errors=True)
        raise
    return case_dir
