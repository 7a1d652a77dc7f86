"""polysql's version: recorded with every run, bundle and loaded copy (pyproject reads it too)."""

from __future__ import annotations

__version__ = "0.1.0"
