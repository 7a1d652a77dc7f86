"""The text-to-SQL sweep, one job per module.

- :mod:`~polysql.sweep.runner`: :class:`Sweep` and :func:`run_sweep`, which tie the parts below
  together (``Sweep``, ``SweepConfig`` and ``SweepOutcome`` are importable from it);
- :mod:`~polysql.sweep.config`: what a sweep is asked to do, and its defaults;
- :mod:`~polysql.sweep.predictors`: the gold, transpile and predictions-file predictors;
- :mod:`~polysql.sweep.planning`: resume or refuse a run folder, and what is left to do;
- :mod:`~polysql.sweep.inputs`: the digests that bind each record to what produced it;
- :mod:`~polysql.sweep.work`: the gold phase and one worker per engine;
- :mod:`~polysql.sweep.execution` and :mod:`~polysql.sweep.execution_cache`: running a
  statement, cached and stoppable;
- :mod:`~polysql.sweep.records`: what one line of ``results.jsonl`` holds;
- :mod:`~polysql.sweep.interrupts`: Ctrl-C and SIGTERM in steps;
- :mod:`~polysql.sweep.outcome` and :mod:`~polysql.sweep.progress`: what a caller is told.
"""
