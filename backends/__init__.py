"""Engine backends (``polysql.backends``): the protocol and EngineInfo in ``base``, the installed
engines in ``catalog``, shared parts in ``_common``, and one package per engine."""
