"""polysql.normalizers: canonicalize result values, align columns and decide whether two results
answer the same (the comparison contract, docs/comparison.md).

Entry points: :func:`polysql.normalizers.compare.compare` (also ``polysql.compare``),
:class:`ComparePolicy` and :func:`widen_limit` (the gold SQL with its outermost LIMIT widened, so
the runner can reveal ties cut by the LIMIT). ``compare`` is deliberately not re-exported here:
the name belongs to the ``polysql.normalizers.compare`` module.
"""

from __future__ import annotations

from polysql.normalizers.ordering import widen_limit
from polysql.normalizers.policy import ComparePolicy

__all__ = ["ComparePolicy", "widen_limit"]
