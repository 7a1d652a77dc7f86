"""Dataset loaders and bundled data (``polysql.datasets``).

This folder is mapped into the ``polysql`` namespace. Imported as a top-level ``datasets`` (which
happens when the repository root is on ``sys.path``) it would shadow HuggingFace's ``datasets``
package, so refuse loudly instead.
"""

from __future__ import annotations

if __name__ != "polysql.datasets":
    raise ImportError(
        f"polysql's datasets folder was imported as {__name__!r}; it must only be imported as "
        "'polysql.datasets'. If you meant HuggingFace's package, run from outside the polysql "
        "repository root or install it (`pip install datasets`)."
    )
