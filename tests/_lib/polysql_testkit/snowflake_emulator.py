"""A fakesnow server for the Snowflake tests: built in its own virtualenv, run as its own process.

fakesnow pins its own sqlglot, DuckDB and (for its server) snowflake-connector-python < 5, so it
never shares polysql's environment: :func:`prepare` builds a virtualenv for it once, cached under
``$POLYSQL_TEST_VENVS`` (default ``~/.cache/polysql-test``), and :class:`Emulator` starts its
server from there on a free loopback port, through ``_fakesnow_launcher.py`` (fakesnow plus two
adjustments that make it answer as Snowflake does: NULL timestamps stay NULL, and an abort
request cancels the statement). polysql's own connector talks to it over HTTP exactly as it
talks to Snowflake.

Command line (with ``tests/_lib`` on PYTHONPATH)::

    python -m polysql_testkit.snowflake_emulator prepare          # build the venv, print its path
    python -m polysql_testkit.snowflake_emulator serve --port N   # run a server until interrupted

``serve`` prints the polysql URL to use; append ``/DATABASE/SCHEMA`` (or let ``polysql``'s
evaluation URLs do it). The server keeps its databases in memory for as long as it runs.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import fcntl
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

FAKESNOW_VERSION = "0.12.1"
# What the emulator reports as its version: fakesnow as released plus the launcher's adjustments.
EMULATOR_LABEL = f"{FAKESNOW_VERSION}+polysql"
LAUNCHER = Path(__file__).with_name("_fakesnow_launcher.py")
# fakesnow 0.12.1's server imports snowflake.connector.converter, which connector 5 removed.
REQUIREMENTS = (f"fakesnow[server]=={FAKESNOW_VERSION}", "snowflake-connector-python<5")
HOST = "127.0.0.1"
START_TIMEOUT = 60.0  # seconds for a started server to answer
BUILD_TIMEOUT = 900.0  # seconds for pip to build the venv


class EmulatorUnavailable(Exception):
    """The emulator's venv cannot be built or its server does not start; the message says why."""


def cache_root() -> Path:
    configured = os.environ.get("POLYSQL_TEST_VENVS")
    return Path(configured) if configured else Path.home() / ".cache" / "polysql-test"


def venv_path() -> Path:
    return cache_root() / f"fakesnow-{FAKESNOW_VERSION}"


def _python(venv: Path) -> Path:
    return venv / "bin" / "python"


def _ready_marker(venv: Path) -> Path:
    return venv / "polysql-ready.json"


def _is_ready(venv: Path) -> bool:
    try:
        data = json.loads(_ready_marker(venv).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return data.get("requirements") == list(REQUIREMENTS) and _python(venv).exists()


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _run(command: list[str], what: str) -> None:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=BUILD_TIMEOUT,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EmulatorUnavailable(f"{what} failed: {exc}") from exc
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        raise EmulatorUnavailable(f"{what} failed (exit {done.returncode}):\n{tail}")


def prepare() -> Path:
    """The fakesnow venv, built first if missing (idempotent; safe across processes)."""
    venv = venv_path()
    if _is_ready(venv):
        return venv
    try:
        with _locked(venv.with_name(venv.name + ".lock")):
            if not _is_ready(venv):
                _build(venv)
    except OSError as exc:
        raise EmulatorUnavailable(f"cannot build the fakesnow venv in {venv}: {exc}") from exc
    return venv


def _build(venv: Path) -> None:
    building = venv.with_name(f"{venv.name}.building-{os.getpid()}")
    shutil.rmtree(building, ignore_errors=True)
    try:
        _run([sys.executable, "-m", "venv", str(building)], "creating the fakesnow venv")
        _run([str(_python(building)), "-m", "pip", "install", "--quiet",
              "--disable-pip-version-check", *REQUIREMENTS],
             f"installing {' '.join(REQUIREMENTS)}")
        _ready_marker(building).write_text(
            json.dumps({"requirements": list(REQUIREMENTS)}) + "\n", encoding="utf-8")
        shutil.rmtree(venv, ignore_errors=True)
        # the venv is only ever run through its python binary, which finds its packages relative
        # to itself, so building it under another name and renaming it is fine
        building.rename(venv)
    finally:
        shutil.rmtree(building, ignore_errors=True)


def free_port(host: str = HOST) -> int:
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def polysql_url(host: str, port: int) -> str:
    """The polysql URL of a fakesnow server (append ``/DATABASE/SCHEMA`` to name a schema)."""
    return (f"snowflake://fake:snow@{host}:{port}/?emulator=fakesnow"
            f"&emulator_version={quote(EMULATOR_LABEL)}")


def answers(host: str, port: int) -> bool:
    """Whether an HTTP server answers at host:port (any status counts)."""
    connection = http.client.HTTPConnection(host, port, timeout=2)
    try:
        connection.request("GET", "/")
        connection.getresponse().read()
        return True
    except OSError:
        return False
    finally:
        connection.close()


class Emulator:
    """One fakesnow server process on a loopback port."""

    def __init__(self, port: int | None = None, host: str = HOST) -> None:
        self.host = host
        self.port = port or free_port(host)
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path: Path | None = None  # the server's output while it runs

    @property
    def url(self) -> str:
        return polysql_url(self.host, self.port)

    def start(self) -> Emulator:
        venv = prepare()
        handle, name = tempfile.mkstemp(prefix="fakesnow-", suffix=".log")
        os.close(handle)
        self.log_path = Path(name)
        with self.log_path.open("wb") as log:  # the child keeps its own copy of the handle
            self.process = subprocess.Popen(
                [str(_python(venv)), str(LAUNCHER), "--host", self.host, "--port",
                 str(self.port)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                code, tail = self.process.returncode, self._tail()
                self.stop()
                raise EmulatorUnavailable(f"fakesnow exited with {code}:\n{tail}")
            if answers(self.host, self.port):
                return self
            time.sleep(0.2)
        tail = self._tail()
        self.stop()
        raise EmulatorUnavailable(f"fakesnow did not answer on {self.host}:{self.port} within "
                                  f"{START_TIMEOUT:g}s:\n{tail}")

    def _tail(self) -> str:
        if self.log_path is not None:
            with contextlib.suppress(OSError):
                return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-20:])
        return ""

    def stop(self) -> None:
        """Stop the server. It keeps nothing on disk, so it is simply terminated; statements it is
        still running end with it."""
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        if self.log_path is not None:
            self.log_path.unlink(missing_ok=True)
            self.log_path = None

    def __enter__(self) -> Emulator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextlib.contextmanager
def running(port: int | None = None) -> Iterator[str]:
    """A started fakesnow server for the block; yields its polysql URL."""
    with Emulator(port) as emulator:
        yield emulator.url


_shared: Emulator | None = None
_shared_error: EmulatorUnavailable | None = None
_shared_lock = threading.Lock()


def shared_url() -> str:
    """The URL of one server shared by the whole process (started on first use, stopped when the
    process exits). A failure to start is remembered, so it costs one attempt, not one per test."""
    global _shared, _shared_error
    with _shared_lock:
        if _shared_error is not None:
            raise _shared_error
        if _shared is None:
            try:
                _shared = Emulator().start()
            except EmulatorUnavailable as exc:
                _shared_error = exc
                raise
            atexit.register(_shared.stop)
        return _shared.url


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m polysql_testkit.snowflake_emulator",
                                     description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("prepare", help="build the fakesnow venv (cached) and print its path")
    serve = commands.add_parser("serve", help="run a fakesnow server until interrupted")
    serve.add_argument("--port", type=int, default=None, help="default: a free port")
    serve.add_argument("--host", default=HOST)
    args = parser.parse_args(argv)
    try:
        if args.command == "prepare":
            print(prepare())
            return 0
        emulator = Emulator(args.port, args.host).start()
    except EmulatorUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    print(emulator.url, flush=True)
    try:
        while not stop.is_set() and emulator.process is not None \
                and emulator.process.poll() is None:
            stop.wait(1.0)
    finally:
        emulator.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
