"""Stable content digests of plain values (what produced a record, what a record was made from).

The same parts give the same digest in every process and on every machine: values are rendered
as canonical JSON (sorted keys, no whitespace) and any text is encoded so that even a lone
surrogate hashes instead of raising.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

PREFIX = "sha256:"
HEX_CHARS = 32  # 128 bits: collisions are out of reach, and records stay short


def content_digest(*parts: Any) -> str:
    """``sha256:<32 hex>`` over ``parts`` (JSON values; anything else by its ``str``)."""
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return PREFIX + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:HEX_CHARS]
