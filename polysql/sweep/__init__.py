"""The text-to-SQL sweep: planning work, binding records to their inputs, running and recording.

The runner itself still lives in :mod:`polysql.runner`; the parts written since live here.
"""
