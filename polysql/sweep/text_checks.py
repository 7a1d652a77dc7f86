"""Whether outside text can be written: a Python str may hold what UTF-8 cannot encode.

Predictions files, model answers and dataset text all enter records and engines; a lone surrogate
in any of them must be caught where it enters, with where it is, not crash a writer later.
"""

from __future__ import annotations

from typing import Any


def text_problem(text: str) -> str | None:
    """What makes ``text`` unwritable as UTF-8, or None when it is fine.

    A Python str may hold a lone surrogate (``json.loads('"\\\\ud800"')`` makes one; so does
    decoding bytes with ``errors="surrogateescape"``). It is not Unicode text: encoding it as
    UTF-8, writing it to a UTF-8 file or binding it to a database driver raises. Checking costs
    one encode, so call this wherever outside text enters a record or an engine.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"lone surrogate U+{ord(text[exc.start]):04X} at offset {exc.start}"
    return None


def first_text_problem(value: Any, path: str = "") -> str | None:
    """The first :func:`text_problem` anywhere in a JSON-like value (strings, field names, nested
    dicts and lists), saying where: ``"'meta.notes[1]' holds a lone surrogate U+DFFF at offset 0"``;
    None when all of it can be written as UTF-8."""
    if isinstance(value, str):
        problem = text_problem(value)
        return f"{path!r} holds a {problem}" if problem else None
    items: Any = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        if isinstance(key, str) and (problem := text_problem(key)):
            return f"the field name {key!r} holds a {problem}"
        inner = f"{path}[{key}]" if isinstance(key, int) else f"{path}.{key}" if path else key
        found = first_text_problem(item, inner)
        if found:
            return found
    return None
