"""Option values more than one command reads the same way."""

from __future__ import annotations

import json
from typing import Any

from polysql.core.errors import ConfigError


def parse_policy(items: tuple[str, ...]) -> dict[str, Any]:
    """``--policy KEY=VALUE`` items as comparison policy overrides (VALUE as JSON when it is)."""
    policy: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep:
            raise ConfigError(f"--policy expects KEY=VALUE, got {item!r}")
        try:
            policy[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            policy[key.strip()] = raw
    return policy
