"""Engine backends (``polysql.backends``): one module per engine, plus the protocol in ``base``."""
