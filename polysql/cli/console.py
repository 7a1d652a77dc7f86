"""Where the commands write: results on stdout, messages and progress on stderr."""

from __future__ import annotations

import os
import sys
from typing import TextIO

from rich.console import Console

# Wide enough for the sweep table with long predictor names: rich falls back to 80 columns when
# the output is a file or a pipe, and would then cut the table's columns short.
_PIPED_WIDTH = 200


def _width(stream: TextIO) -> int | None:
    """None (rich measures the terminal, or honours $COLUMNS) unless ``stream`` is piped."""
    if os.environ.get("COLUMNS") or stream.isatty():
        return None
    return _PIPED_WIDTH


console = Console(stderr=True, soft_wrap=True, width=_width(sys.stderr))  # one greppable line
stdout = Console(soft_wrap=True, width=_width(sys.stdout))
