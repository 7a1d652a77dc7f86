"""Short engine names: default instances, hosted services read from the environment."""

from __future__ import annotations

import pytest

from polysql.core.errors import ConfigError
from polysql.engines.fleet import parse_engine_specs
from polysql.engines.registry import alias_url


def test_local_engines_have_default_instances() -> None:
    assert alias_url("SQLite") == "sqlite://"
    assert alias_url("spark") == "spark://local[2]"
    assert alias_url("clickhouse") == "clickhouse://"


@pytest.mark.parametrize(("alias", "variable"), [("snowflake", "POLYSQL_SNOWFLAKE_URL"),
                                                 ("bigquery", "POLYSQL_BIGQUERY_URL")])
def test_hosted_services_need_their_url_from_the_environment(
        alias: str, variable: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(variable, raising=False)
    with pytest.raises(ConfigError, match=variable):
        alias_url(alias)
    monkeypatch.setenv(variable, f"{alias}://somewhere/db")
    assert alias_url(alias) == f"{alias}://somewhere/db"


def test_unknown_alias_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="clickhouse, duckdb"):
        parse_engine_specs("oracle")
