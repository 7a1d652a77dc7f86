"""polysql.normalizers: canonicalize result values, align columns and decide whether two results
answer the same (the comparison contract, docs/comparison.md)."""
