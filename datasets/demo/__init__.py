"""The bundled demo dataset (``get_dataset("demo")``).

A retail database generated deterministically by :mod:`polysql.datasets.demo.generate` and built
into the cache on first use, plus hand-written questions (``questions.json``) tagged with the
dialect hazards they exercise.
"""

from __future__ import annotations

from polysql.datasets.demo.build import demo_database_path, ensure_demo_database
from polysql.datasets.demo.dataset import DemoDataset, load_demo_questions
from polysql.datasets.demo.generate import DB_ID, GENERATOR_VERSION, REFERENCE_DATE

__all__ = [
    "DB_ID",
    "GENERATOR_VERSION",
    "REFERENCE_DATE",
    "DemoDataset",
    "demo_database_path",
    "ensure_demo_database",
    "load_demo_questions",
]
