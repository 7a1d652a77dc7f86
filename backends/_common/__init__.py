"""Code engine packages share; engines never import each other, only this.

``guard`` (first statement screen), ``statement_text`` (text no engine is asked to run),
``cancel`` (stopping a running statement from another thread), ``pool`` (the one connection pool
of the server engines), ``arrow``, ``fingerprint``, ``load_files`` and ``prefetch`` (loading).
"""
