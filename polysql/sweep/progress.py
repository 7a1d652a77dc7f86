"""Progress hooks a sweep reports to. Kept free of heavy imports so the CLI can subclass it
without loading the engines."""

from __future__ import annotations

from typing import Any


class SweepObserver:
    """Progress hooks; the CLI draws a progress bar from these. All no-ops by default."""

    def phase(self, name: str, total: int) -> None: ...

    def advance(self, record: dict[str, Any] | None = None) -> None: ...

    def message(self, text: str) -> None: ...

    def generation(self, predictor: str, total: int) -> None:
        """``total`` model requests of ``predictor`` are about to be queued."""

    def generated(self, predictor: str) -> None:
        """One model request of ``predictor`` finished (answered, failed or served from cache)."""
