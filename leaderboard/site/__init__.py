"""The static leaderboard site built from submission bundles.

``build`` writes the pages (leaderboard, one page per model, significance), ``rewrite`` adds the
rewriting page when rewrite ledgers are given, ``pages`` holds the frame and HTML helpers both
draw with, and ``assets`` the stylesheet, script and icon every page links to.
"""
