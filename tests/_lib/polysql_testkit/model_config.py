"""Write a ModelConfig as the ``[models.smol]`` table of a polysql.toml, for CLI tests."""

from __future__ import annotations

import json
from pathlib import Path

from polysql.llm.client import ModelConfig


def write_config(path: Path, config: ModelConfig) -> Path:
    params = "\n".join(f"{key} = {json.dumps(value)}" for key, value in config.params.items())
    path.write_text(
        "[models.smol]\n"
        f'base_url = "{config.base_url}"\n'
        f'model = "{config.model}"\n'
        f"max_concurrency = {config.max_concurrency}\n"
        f"timeout = {config.timeout}\n"
        f"max_retries = {config.max_retries}\n"
        "[models.smol.params]\n"
        f"{params}\n",
        encoding="utf-8")
    return path
