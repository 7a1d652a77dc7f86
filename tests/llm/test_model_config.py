"""polysql.toml model tables, and the response cache file on its own."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from polysql.core.errors import ConfigError
from polysql.llm.cache import CachedResponse, ResponseCache, response_key
from polysql.llm.client import ModelConfig, load_model_configs

GOOD = """
[models.local]
base_url = "http://127.0.0.1:8080/v1"
model = "smollm2"

[models.hosted]
base_url = "https://api.example.com/v1"
model = "gpt-x"
api_key_env = "EXAMPLE_API_KEY"
max_concurrency = 8
requests_per_minute = 120
timeout = 30
max_retries = 2

[models.hosted.params]
temperature = 0
max_tokens = 512
seed = 1
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "polysql.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_models_are_read_with_defaults(tmp_path: Path) -> None:
    configs = load_model_configs(write(tmp_path, GOOD))

    assert configs == {
        "local": ModelConfig(name="local", base_url="http://127.0.0.1:8080/v1", model="smollm2"),
        "hosted": ModelConfig(
            name="hosted", base_url="https://api.example.com/v1", model="gpt-x",
            api_key_env="EXAMPLE_API_KEY", params={"temperature": 0, "max_tokens": 512, "seed": 1},
            max_concurrency=8, requests_per_minute=120.0, timeout=30.0, max_retries=2),
    }
    local = configs["local"]
    assert (local.max_concurrency, local.requests_per_minute, local.timeout, local.max_retries,
            local.api_key_env, local.params) == (4, None, 60.0, 5, None, {})


def test_configs_can_key_a_dict(tmp_path: Path) -> None:
    configs = load_model_configs(write(tmp_path, GOOD))
    by_config = {config: name for name, config in configs.items()}
    assert by_config[configs["hosted"]] == "hosted"


def test_default_path_is_polysql_toml_in_the_working_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, GOOD)
    monkeypatch.chdir(tmp_path)
    assert set(load_model_configs()) == {"local", "hosted"}


def test_to_dict_names_the_key_variable_not_the_key(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EXAMPLE_API_KEY", "sk-very-secret")
    recorded = load_model_configs(write(tmp_path, GOOD))["hosted"].to_dict()
    assert recorded["api_key_env"] == "EXAMPLE_API_KEY"
    assert "sk-very-secret" not in repr(recorded)


@pytest.mark.parametrize(("text", "message"), [
    ("[models.m]\nbase_url = 'http://h/v1'\n", r"\[models\.m\]: missing required field 'model'"),
    ("[models.m]\nmodel = 'x'\n", r"\[models\.m\]: missing required field 'base_url'"),
    ("[models.m]\nbase_url = 'http://h/v1'\nmodel = 'x'\ntemprature = 0\n",
     r"\[models\.m\]: unknown field 'temprature'; allowed fields: base_url, model"),
    ("[models.m]\nbase_url = 'http://h/v1'\nmodel = 'x'\nmax_concurrency = '4'\n",
     r"\[models\.m\]: field 'max_concurrency' must be an integer, got '4'"),
    ("[models.m]\nbase_url = 'http://h/v1'\nmodel = 'x'\ntimeout = true\n",
     r"field 'timeout' must be a number, got True"),
    ("[models.m]\nbase_url = 'localhost:8080'\nmodel = 'x'\n",
     r"field 'base_url' must start with http:// or https://, got 'localhost:8080'"),
    ("[models.m]\nbase_url = 'http://h/v1'\nmodel = 'x'\nmax_concurrency = 0\n",
     r"'max_concurrency' must be at least 1"),
    ("[models.m]\nbase_url = 'http://h/v1'\nmodel = 'x'\nrequests_per_minute = 0\n",
     r"'requests_per_minute' must be positive"),
    ("[models.m]\nbase_url = 'http://h/v1'\nmodel = 'x'\ntimeout = -1\n",
     r"'timeout' must be positive"),
    ("[models.m]\nbase_url = 'http://h/v1'\nmodel = 'x'\n[models.m.params]\nstream = true\n",
     r"\[params\] may not set 'model', 'messages' or 'stream'"),
    ("[models]\nm = 3\n", r"\[models\.m\] must be a table, got int"),
    ("[other]\nx = 1\n", r"declares no models: add a \[models\.NAME\] table"),
    ("[models.m\nbase_url = ", r"is not valid TOML"),
])
def test_bad_config_names_file_model_and_field(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError, match=message) as caught:
        load_model_configs(path)
    assert str(path) in str(caught.value)


def test_missing_file_says_how_to_fix_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"polysql\.toml not found: create it with a "
                                          r"\[models\.NAME\] table .* or pass --config PATH"):
        load_model_configs(tmp_path / "polysql.toml")


# --- the cache file --------------------------------------------------------------------------------


def sample_key(**change: object) -> str:
    parts: dict[str, object] = {"model": "m", "base_url": "http://h/v1",
                                "params": {"temperature": 0, "seed": 1},
                                "messages": [{"role": "user", "content": "q"}]}
    parts.update(change)
    return response_key(**parts)  # type: ignore[arg-type]


def test_key_is_canonical_in_param_order_and_trailing_slash() -> None:
    assert sample_key() == sample_key(params={"seed": 1, "temperature": 0})
    assert sample_key() == sample_key(base_url="http://h/v1/")
    assert len({sample_key(), sample_key(model="n"), sample_key(base_url="http://g/v1"),
                sample_key(params={"temperature": 1, "seed": 1}),
                sample_key(messages=[{"role": "user", "content": "q2"}])}) == 5


def test_cache_survives_reopening_and_counts_hits(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    answer = CachedResponse("SELECT 1", 10, 3, "stop", "m", 0.25)
    first = ResponseCache(path)
    assert first.get("k") is None
    first.put("k", answer)
    first.close()

    second = ResponseCache(path)
    assert second.get("k") == answer
    assert (second.hits, second.misses) == (1, 0)


def test_unreadable_entry_is_a_miss_and_is_replaced(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    cache = ResponseCache(path)
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO responses VALUES ('k', '{not json')")
    assert cache.get("k") is None
    assert cache.misses == 1
    cache.put("k", CachedResponse("SELECT 2", 1, 1, None, "m", 0.1))
    assert cache.get("k") == CachedResponse("SELECT 2", 1, 1, None, "m", 0.1)


def test_default_location_is_under_the_cache_dir(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POLYSQL_CACHE", str(tmp_path / "cache"))
    cache = ResponseCache()
    assert cache.path == tmp_path / "cache" / "llm-responses.sqlite"
    assert cache.path.exists()
