"""The BigQuery emulator the tests run the real google-cloud-bigquery client against.

bqemulator (PyPI) lives in a virtual environment of its own -- its pins (protobuf, sqlglot, ...)
must not meet polysql's -- created once and cached under ``$POLYSQL_TEST_VENVS`` (default
``~/.cache/polysql-test``). It starts through ``_bqemulator_launcher.py``, which lets it start
offline and honour ``jobTimeoutMs`` (see that file).

In Python::

    with running_emulator() as endpoint:   # "http://127.0.0.1:PORT"
        url = f"bigquery://polysql-test/some_dataset?emulator={endpoint}"

``shared_endpoint()`` starts one emulator per process and stops it at exit. From a shell::

    PYTHONPATH=tests/_lib python -m polysql_testkit.bigquery_emulator prepare
    PYTHONPATH=tests/_lib python -m polysql_testkit.bigquery_emulator serve --port 9050
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import fcntl
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
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

#: what the emulator's venv holds; numpy is used by bqemulator but not declared by it
EMULATOR_PACKAGES = ("bqemulator==1.4.0", "numpy")
LAUNCHER = Path(__file__).with_name("_bqemulator_launcher.py")
_READY_MARKER = ".polysql-ready"
START_TIMEOUT = 90.0


class EmulatorUnavailable(Exception):
    """The emulator's environment cannot be built or the emulator does not start."""


def venv_root() -> Path:
    configured = os.environ.get("POLYSQL_TEST_VENVS", "").strip()
    return Path(configured) if configured else Path.home() / ".cache" / "polysql-test"


def venv_path() -> Path:
    return venv_root() / "bqemulator-1.4.0"


def _python(venv: Path) -> Path:
    return venv / "bin" / "python"


def prepare(*, quiet: bool = True) -> Path:
    """The emulator venv, created (once; a file lock serialises concurrent callers) if missing.
    Returns the venv's python."""
    venv = venv_path()
    marker = venv / _READY_MARKER
    spec = json.dumps(EMULATOR_PACKAGES)
    if marker.is_file() and marker.read_text(encoding="utf-8") == spec:
        return _python(venv)
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f"{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.is_file() and marker.read_text(encoding="utf-8") == spec:
            return _python(venv)
        shutil.rmtree(venv, ignore_errors=True)  # a half-built venv from an interrupted run
        output = subprocess.DEVNULL if quiet else None
        try:
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True,
                           stdout=output, stderr=subprocess.PIPE)
            subprocess.run([str(_python(venv)), "-m", "pip", "install", "-q",
                            "--disable-pip-version-check", *EMULATOR_PACKAGES],
                           check=True, stdout=output, stderr=subprocess.PIPE)
        except (OSError, subprocess.CalledProcessError) as exc:
            detail = getattr(exc, "stderr", b"") or b""
            raise EmulatorUnavailable(
                f"cannot build the bqemulator environment in {venv}: {exc}: "
                f"{detail.decode(errors='replace')[-2000:]}") from exc
        marker.write_text(spec, encoding="utf-8")
    return _python(venv)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _answers(endpoint: str) -> bool:
    try:
        with urllib.request.urlopen(f"{endpoint}/readyz", timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def emulator_command(python: Path, port: int) -> list[str]:
    return [str(python), str(LAUNCHER), "start", "--rest-host", "127.0.0.1", "--rest-port",
            str(port), "--grpc-host", "127.0.0.1", "--grpc-port", "0", "--ephemeral",
            "--project", "polysql-test"]


def emulator_environment() -> dict[str, str]:
    # Avro support would be downloaded as a DuckDB extension at start; nothing here needs it.
    return {**os.environ, "BQEMU_ENABLE_FORMAT_EXTENSIONS": "false", "BQEMU_LOG_LEVEL": "warning",
            "BQEMU_ADMIN_ENABLED": "false"}


class EmulatorProcess:
    """One running emulator on 127.0.0.1; ``stop()`` ends exactly the process it started."""

    def __init__(self, port: int | None = None, log_path: Path | None = None,
                 settings: dict[str, str] | None = None) -> None:
        self.port = port or free_port()
        self.settings = dict(settings or {})  # extra BQEMU_* variables
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path or Path(tempfile.mkstemp(prefix="bqemulator-", suffix=".log")[1])
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> str:
        python = prepare()
        log = open(self.log_path, "wb")  # noqa: SIM115 -- kept open for the process's lifetime
        self._process = subprocess.Popen(emulator_command(python, self.port), stdout=log,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         env={**emulator_environment(), **self.settings},
                                         start_new_session=True)
        log.close()
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise EmulatorUnavailable(
                    f"bqemulator exited with status {self._process.returncode} at start: "
                    f"{self.log_path.read_text(errors='replace')[-3000:]}")
            if _answers(self.endpoint):
                return self.endpoint
            time.sleep(0.2)
        self.stop()
        raise EmulatorUnavailable(f"bqemulator did not answer on {self.endpoint} within "
                                  f"{START_TIMEOUT:g}s; log: {self.log_path}")

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


@contextlib.contextmanager
def running_emulator(port: int | None = None,
                     settings: dict[str, str] | None = None) -> Iterator[str]:
    """Start an emulator (``settings``: extra BQEMU_* variables), yield its endpoint, stop it
    afterwards."""
    process = EmulatorProcess(port, settings=settings)
    try:
        yield process.start()
    finally:
        process.stop()


_shared: EmulatorProcess | None = None
_shared_lock = threading.Lock()


def shared_endpoint() -> str:
    """One emulator for this process (started on first call, stopped at exit)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            process = EmulatorProcess()
            process.start()
            _shared = process
            atexit.register(stop_shared)
        return _shared.endpoint


def stop_shared() -> None:
    global _shared
    with _shared_lock:
        if _shared is not None:
            _shared.stop()
            _shared = None


def _serve(port: int) -> int:
    process = EmulatorProcess(port)
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    signal.signal(signal.SIGINT, lambda *_: stopping.set())
    endpoint = process.start()
    print(f"bqemulator listening on {endpoint} (log: {process.log_path})", flush=True)
    try:
        while not stopping.wait(1.0):
            if process._process is None or process._process.poll() is not None:
                print("bqemulator exited", file=sys.stderr)
                return 1
    finally:
        process.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m polysql_testkit.bigquery_emulator")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("prepare", help="build the emulator's virtual environment")
    serve = commands.add_parser("serve", help="run the emulator in the foreground")
    serve.add_argument("--port", type=int, default=9050)
    args = parser.parse_args(argv)
    try:
        if args.command == "prepare":
            print(prepare(quiet=False))
            return 0
        return _serve(args.port)
    except EmulatorUnavailable as exc:
        print(exc, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
