"""Spark sessions: one driver per process, one isolated session per backend.

A process can host only one SparkContext (one JVM driver), so every embedded or standalone
backend of this process shares one root session, created on first use and kept for the life of
the process (starting a JVM takes seconds). Each backend works in its own ``newSession()`` of it:
its own current database, temporary views, SQL settings and function registry, while the
context, the executors and the catalog are shared.

Spark Connect backends each open their own session on the server; nothing is shared locally.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import subprocess
import threading
import warnings
from pathlib import Path
from typing import Any

from polysql.backends.spark.connect_url import SparkTarget
from polysql.core.errors import ConfigError, EngineError, EngineUnavailableError

# Functions that call arbitrary static Java methods in the driver and executors; removed from
# every evaluation session (classic), refused by the statement screen everywhere.
REFLECTION_FUNCTIONS = ("reflect", "java_method", "try_reflect")

# Seconds to wait for a Spark Connect server to accept a connection.
_PROBE_TIMEOUT = 5.0

_lock = threading.Lock()
_root: Any = None  # the process's root SparkSession (classic)
_root_master: str | None = None
# Bumped by each restart of the driver: a session opened under an older generation belongs to a
# JVM that is gone, and its backend opens a new one before its next statement.
_generation = 0

# PySpark logs every failed statement at ERROR level with the full JVM stack; evaluated SQL
# fails routinely and the failure is returned in the Result, so those logs are only noise.
for _name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
    logging.getLogger(_name).setLevel(logging.CRITICAL)
# pyspark checks the pandas version on its Arrow paths and warns about versions it has not been
# tested with; polysql reads results as Arrow, never through pandas.
warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas",
                        category=FutureWarning)


def _import_pyspark() -> Any:
    import pyspark.sql

    return pyspark.sql


def root_session(target: SparkTarget) -> Any:
    """The process's root session on ``target.master``, created on first use.

    Any local master reuses a running local context (the first one's thread count wins); a
    cluster master different from the running one is an error, as one process cannot drive two.
    """
    global _root, _root_master
    with _lock:
        if _root is not None and _root.sparkContext._jsc is not None:
            if _same_master(_root_master or "", target.master):
                return _root
            raise ConfigError(
                f"this process already runs a Spark driver on {_root_master!r}; a process can "
                f"drive only one Spark master, so {target.master!r} needs a separate process")
        _root, _root_master = _start(target), target.master
        return _root


def driver_generation() -> int:
    """Which driver of this process the root session now is (see :func:`restart_driver`)."""
    return _generation


def restart_driver() -> None:
    """End this process's Spark driver by killing its JVM, so that the next session starts a new
    one (seconds), with every task slot free.

    The remedy for tasks that outlive their cancel (see execute_settle.py): Spark cannot stop a
    thread busy inside one row, and the executors of a local master live in the driver's JVM,
    so only ending that JVM frees their slots. Every session of the old driver is dead after
    this; the catalog is rebuilt from the warehouse as each backend reopens its session.
    """
    global _root, _root_master, _generation
    sql = _import_pyspark()
    from pyspark import SparkContext

    with _lock:
        gateway = SparkContext._gateway
        process = getattr(gateway, "proc", None)
        if process is not None:
            with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                process.kill()
                process.wait(timeout=30)
        if gateway is not None:
            with contextlib.suppress(Exception):
                gateway.shutdown()
        with contextlib.suppress(Exception):
            if SparkContext._active_spark_context is not None:
                SparkContext._active_spark_context._jsc = None
        SparkContext._gateway = None
        SparkContext._jvm = None
        SparkContext._active_spark_context = None
        sql.SparkSession._instantiatedSession = None
        sql.SparkSession._activeSession = None
        _root, _root_master = None, None
        _generation += 1
    from polysql.backends.spark import introspect

    introspect.forget_registrations()


def _same_master(running: str, wanted: str) -> bool:
    if running.lower().startswith("local") and wanted.lower().startswith("local"):
        return True
    return running == wanted


# The driver's own log configuration until the session is up (then setLogLevel takes over):
# without one, Spark prints its default profile's banner and start-up warnings (the host name
# resolving to loopback, no native Hadoop library) on stderr of every command that starts it.
# Spark's own loggers get a level of their own, equal to the root's: a PySpark driver counts as a
# shell, and Spark announces a shell's level whenever it differs from the root's. A task that
# fails logs the statement's error with its whole JVM stack; evaluated SQL fails routinely (a
# division by zero under ANSI) and the error is returned in the Result, so those two loggers keep
# only fatal errors (sc.setLogLevel, called once the session is up, sets the root's alone).
_LOG4J2_PROPERTIES = """\
rootLogger.level = error
rootLogger.appenderRef.console.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
logger.spark.name = org.apache.spark
logger.spark.level = error
logger.task.name = org.apache.spark.executor.Executor
logger.task.level = fatal
logger.taskset.name = org.apache.spark.scheduler.TaskSetManager
logger.taskset.level = fatal
"""


def _quiet_logging(scratch: Path) -> list[str]:
    """The JVM option that starts the driver logging errors only; none when the user configures
    Spark's logging (a log4j2 file where Spark looks for its configuration: ``SPARK_CONF_DIR``,
    else ``SPARK_HOME/conf``), which then stays theirs."""
    conf_dir = os.environ.get("SPARK_CONF_DIR") or (
        os.path.join(os.environ["SPARK_HOME"], "conf") if os.environ.get("SPARK_HOME") else None)
    if conf_dir and any(Path(conf_dir).glob("log4j2*")):
        return []
    config = scratch / "log4j2.properties"
    if not config.exists() or config.read_text(encoding="utf-8") != _LOG4J2_PROPERTIES:
        # renamed into place: a driver starting in another process never reads a half file
        partial = scratch / f".log4j2.properties.{os.getpid()}.{threading.get_ident()}"
        partial.write_text(_LOG4J2_PROPERTIES, encoding="utf-8")
        os.replace(partial, config)
    return [f"-Dlog4j2.configurationFile={config.as_uri()}"]


def _start(target: SparkTarget) -> Any:
    sql = _import_pyspark()
    assert target.warehouse is not None
    scratch = target.warehouse / ".spark"
    scratch.mkdir(parents=True, exist_ok=True)
    builder = (
        sql.SparkSession.builder.master(target.master).appName("polysql")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        # catalog entries are rebuilt from the warehouse at connect; no Hive metastore, so no
        # Derby database that only one process at a time could open
        .config("spark.sql.catalogImplementation", "in-memory")
        .config("spark.sql.warehouse.dir", str(scratch / "spark-warehouse"))
        .config("spark.local.dir", str(scratch / "tmp"))
        .config("spark.driver.extraJavaOptions", " ".join(
            [f"-Dderby.system.home={scratch / 'derby'}", *_quiet_logging(scratch)]))
        .config("spark.sql.shuffle.partitions", str(target.partitions))
        .config("spark.sql.session.timeZone", "UTC")
    )
    memory = os.environ.get("POLYSQL_SPARK_DRIVER_MEMORY")
    if memory:
        builder = builder.config("spark.driver.memory", memory)
    try:
        session = builder.getOrCreate()
    except Exception as exc:  # the JVM did not start: no Java, bad master, port in use
        raise EngineUnavailableError(
            f"cannot start a Spark driver on {target.master!r}: {_first_line(exc)}") from exc
    session.sparkContext.setLogLevel("ERROR")
    return session


def _probe(target: SparkTarget) -> None:
    """Fail fast when nothing listens at the Connect address: the Connect client would retry
    with growing back-off for minutes before giving up."""
    address = target.master.removeprefix("sc://").split("/", 1)[0]
    host, _, port = address.rpartition(":")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=_PROBE_TIMEOUT).close()
    except OSError as exc:
        raise EngineUnavailableError(
            f"no Spark Connect server answers at {address}: {exc}") from exc


def connect_session(target: SparkTarget) -> Any:
    """A new session on the Spark Connect server ``target.master``."""
    sql = _import_pyspark()
    _probe(target)
    try:
        return sql.SparkSession.builder.remote(target.master).create()
    except ImportError as exc:
        raise EngineUnavailableError(
            f"Spark Connect needs pyspark's connect dependencies (grpcio, grpcio-status, "
            f"googleapis-common-protos, zstandard, pandas): {exc}") from exc
    except Exception as exc:
        raise EngineUnavailableError(
            f"cannot open a Spark Connect session on {target.master!r}: {_first_line(exc)}") \
            from exc


def new_session(target: SparkTarget) -> Any:
    """A session of its own for one backend (classic: a child of the root session)."""
    session = connect_session(target) if target.connect else root_session(target).newSession()
    configure(session, target)
    return session


def configure(session: Any, target: SparkTarget) -> None:
    """Session settings every polysql session gets."""
    try:
        session.conf.set("spark.sql.shuffle.partitions", str(target.partitions))
        session.conf.set("spark.sql.session.timeZone", "UTC")
        if target.ansi is not None:
            session.conf.set("spark.sql.ansi.enabled", "true" if target.ansi else "false")
    except Exception as exc:
        raise EngineUnavailableError(f"cannot configure the Spark session on "
                                     f"{target.master!r}: {_first_line(exc)}") from exc


def lock_down(session: Any, target: SparkTarget) -> None:
    """Make an evaluation session unable to reach files or Java code through SQL: no
    ``format.`path``` relations, and (classic) no reflection functions in its registry."""
    session.conf.set("spark.sql.runSQLOnFiles", "false")
    if target.connect:
        return
    jvm = session._jvm
    registry = session._jsparkSession.sessionState().functionRegistry()
    identifier_class = jvm.org.apache.spark.sql.catalyst.FunctionIdentifier
    for name in REFLECTION_FUNCTIONS:
        # Spark 4 keys built-ins by system.builtin.<name>, Spark 3.5 by the bare name
        for identifier in (
                lambda n=name: identifier_class.apply(n, jvm.scala.Some("builtin"),
                                                      jvm.scala.Some("system")),
                lambda n=name: identifier_class.apply(n)):
            try:
                registry.dropFunction(identifier())
            except Exception:  # this Spark version keys its registry the other way
                continue
    left = [name for name in REFLECTION_FUNCTIONS if session.catalog.functionExists(name)]
    if left:
        raise EngineError(f"cannot remove {', '.join(left)} from the Spark session; refusing to "
                          f"evaluate SQL that could call Java methods")


def ansi_enabled(session: Any) -> bool:
    return str(session.conf.get("spark.sql.ansi.enabled")).lower() == "true"


def close_session(session: Any, target: SparkTarget) -> None:
    """Release one backend's session (the shared root session stays up)."""
    if target.connect:
        with contextlib.suppress(Exception):  # the server may be gone; nothing else to release
            session.stop()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:500]
