"""Helpers shared by the test modules: server fixtures and the conformance suite's engine hooks.

`tests/_lib` is on pytest's ``pythonpath`` (see pyproject), so test modules import these as
``polysql_testkit.<module>``; the distinct name keeps them from shadowing anything installed.
"""
