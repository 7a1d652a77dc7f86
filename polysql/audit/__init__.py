"""Audits: checks of the claims an evaluation rests on, measured on the user's own data.

- :mod:`~polysql.audit.golds`: does the gold a benchmark ships written natively for a dialect
  (``mysql``, ``postgresql``...) answer the same as its reference gold? It reads the records of
  a ``native-gold`` sweep (the ``polysql audit golds`` command runs that sweep first).
- :mod:`~polysql.audit.transpile`: how often would a transpile-based evaluator (translate the
  prediction back to the gold's dialect with sqlglot, run it on the source database) reach
  another verdict than dual execution did? It re-judges the records of an existing sweep.
- :mod:`~polysql.audit.tally`: how often the transpile verdict differs, per engine and per tag.
- :mod:`~polysql.audit.report`: their CSV and Markdown files.

The audits sit beside the sweep, not on top of it: the gold audit's sweep is run by the command
line (``polysql.cli.audit``), which may use every task; here only records are read and, for the
transpile audit, statements run on the source database through polysql's own read-only backend.
"""
