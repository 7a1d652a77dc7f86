"""The text-to-SQL sweep, one job per module.

- :mod:`~polysql.sweep.runner`: :class:`Sweep` and :func:`run_sweep`, which tie the parts below
  together (``Sweep``, ``SweepConfig`` and ``SweepOutcome`` are importable from it);
- :mod:`~polysql.sweep.config`: what a sweep is asked to do, and its defaults;
- :mod:`~polysql.sweep.predictors`: the gold, transpile and native-gold predictors, and
  :func:`make_predictor` for every predictor spec;
- :mod:`~polysql.sweep.prediction_files` and :mod:`~polysql.sweep.prediction_formats`: predictions
  a system wrote to a file (polysql JSONL, BIRD ``predict_*.json``, Spider text), line by line;
- :mod:`~polysql.sweep.dialect_names` and :mod:`~polysql.sweep.text_checks`: which engine a
  dialect name means, and whether outside text can be written;
- :mod:`~polysql.sweep.planning`: resume or refuse a run folder, and what is left to do;
- :mod:`~polysql.sweep.inputs`: the digests that bind each record to what produced it;
- :mod:`~polysql.sweep.work`: the gold phase and one worker per engine;
- :mod:`~polysql.sweep.execution` and :mod:`~polysql.sweep.execution_cache`: running a
  statement, cached and stoppable;
- :mod:`~polysql.sweep.records`: what one line of ``results.jsonl`` holds;
- :mod:`~polysql.sweep.interrupts`: Ctrl-C and SIGTERM in steps;
- :mod:`~polysql.sweep.outcome` and :mod:`~polysql.sweep.progress`: what a caller is told.
"""
