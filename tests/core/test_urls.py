"""Engine URL helpers."""

from __future__ import annotations

from polysql.core.urls import parse_url, without_database


def test_without_database_clears_only_the_database() -> None:
    url = parse_url("postgresql://reader:pw@db.example:5433/shop?sslmode=require")
    bare = without_database(url)
    assert bare.database is None
    assert bare.render_as_string(hide_password=False) == (
        "postgresql://reader:pw@db.example:5433?sslmode=require")
    assert without_database(parse_url("sqlite:////data/x.sqlite")).render_as_string() == "sqlite://"
    # what URL.set cannot do: None there means "leave it"
    assert url.set(database=None).database == "shop"
