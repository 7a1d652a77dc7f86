"""The frame and the small HTML helpers every page of the leaderboard site is drawn with.

Kept apart from the page builders so the main pages and the rewriting page share one frame
without importing each other.
"""

from __future__ import annotations

import html

__all__ = ["blank", "escape", "page"]


def escape(value: object) -> str:
    """``value`` as text safe inside an element or a double-quoted attribute."""
    return html.escape(str(value), quote=True)


def blank(why: str) -> str:
    """A value that is not there: a dash, with the reason on hover (never a raw None)."""
    return f'<span class="missing" title="{escape(why)}">—</span>'


def page(title: str, body: str, root: str, *, script: str = "", rewrite: bool = False) -> str:
    """A page of the site; ``root`` is the relative path back to the site's top folder, and
    ``rewrite`` adds the link to the rewriting page to the navigation."""
    rewriting = f'<a href="{root}rewrite.html">Rewriting</a>' if rewrite else ""
    nav = (f'<nav class="top"><a href="{root}index.html">Leaderboard</a>'
           f'<a href="{root}significance.html">Significance</a>{rewriting}'
           f'<a href="{root}leaderboard.csv">CSV</a><a href="{root}leaderboard.json">JSON</a></nav>')
    return (
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        f"<title>{escape(title)} · polysql leaderboard</title>\n"
        f"<link rel=\"icon\" href=\"{root}assets/favicon.svg\" type=\"image/svg+xml\">\n"
        f"<link rel=\"stylesheet\" href=\"{root}assets/site.css\">\n</head>\n<body>\n"
        f"{nav}\n{body}\n{script}</body>\n</html>\n")
