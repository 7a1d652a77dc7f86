"""Option values more than one command reads the same way."""

from __future__ import annotations

import json
from typing import Any

from polysql.core.errors import ConfigError
from polysql.normalizers.policy import PRESETS


def parse_policy(items: tuple[str, ...]) -> dict[str, Any]:
    """``--policy`` items as comparison policy overrides: ``KEY=VALUE`` (VALUE as JSON when it
    is), or a preset's name (``bird``) standing for its options; later items override earlier
    ones."""
    policy: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep:
            if item.strip() in PRESETS:
                policy.update(PRESETS[item.strip()])
                continue
            raise ConfigError(f"--policy expects KEY=VALUE or a preset ({', '.join(sorted(PRESETS))}), "
                              f"got {item!r}")
        try:
            policy[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            policy[key.strip()] = raw
    return policy
