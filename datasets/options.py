"""Options given to a dataset spec after '?' (``spider:PATH?split=train``)."""

from __future__ import annotations

from urllib.parse import parse_qsl

from polysql.core.errors import DatasetError


def parse_options(text: str, *, spec: str) -> dict[str, str]:
    """``"split=dev&databases=db"`` -> ``{"split": "dev", "databases": "db"}``."""
    if not text:
        return {}
    try:
        pairs = parse_qsl(text, keep_blank_values=True, strict_parsing=True)
    except ValueError as exc:
        raise DatasetError(
            f"dataset spec {spec!r}: cannot read the options after '?' ({text!r}); "
            f"write them as key=value pairs joined by '&', e.g. '?split=dev'"
        ) from exc
    options: dict[str, str] = {}
    for key, value in pairs:
        if key in options:
            raise DatasetError(f"dataset spec {spec!r}: option {key!r} is given twice")
        options[key] = value
    return options


def check_options(options: dict[str, str], allowed: dict[str, str], *, kind: str) -> None:
    """DatasetError for an option ``kind`` does not accept; ``allowed`` maps name -> meaning."""
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        accepted = "; ".join(f"{name}: {meaning}" for name, meaning in allowed.items()) or "none"
        raise DatasetError(
            f"the {kind} dataset does not accept option(s) {', '.join(map(repr, unknown))}; "
            f"accepted options: {accepted}"
        )
    for name, value in options.items():
        if not value.strip():
            raise DatasetError(f"the {kind} dataset's option {name!r} is empty")
