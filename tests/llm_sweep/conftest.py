"""Fixtures for model predictors and model sweeps.

``chat_endpoint`` is an *emulator* of a remote OpenAI-compatible chat service: a real
``http.server`` on 127.0.0.1 answering ``POST /v1/chat/completions``. It is not a model: each
test gives it a ``responder`` that decides, from the request it received, the HTTP status and
the answer text, so answers can depend on the question asked (this one fails, that one answers
prose) no matter in which order concurrent requests arrive. It reports token usage the way real
servers do (here: whitespace-separated words) and keeps every request it saw.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

Responder = Callable[[dict[str, Any]], tuple[int, str]]


def words(text: str) -> int:
    """The emulator's token count."""
    return len(text.split())


class ChatEndpoint:
    def __init__(self, port: int = 0) -> None:
        self.responder: Responder = lambda body: (200, "```sql\nSELECT 1\n```")
        self.delay = 0.0
        self.finish_reason = "stop"
        self.requests: list[dict[str, Any]] = []
        self.answers: list[dict[str, Any]] = []  # the 200 payloads sent, in order
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self._server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet test output
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
                with endpoint._lock:
                    endpoint.requests.append(body)
                    endpoint.in_flight += 1
                    endpoint.max_in_flight = max(endpoint.max_in_flight, endpoint.in_flight)
                try:
                    if endpoint.delay:
                        time.sleep(endpoint.delay)
                    status, text = endpoint.responder(body)
                    if status != 200:
                        self._send(status, {"error": {"message": f"emulated {status}: {text}"}})
                        return
                    prompt = sum(words(m["content"]) for m in body["messages"])
                    payload = {
                        "id": f"emu-{len(endpoint.requests)}", "object": "chat.completion",
                        "created": 0, "model": body.get("model", ""),
                        "choices": [{"index": 0, "finish_reason": endpoint.finish_reason,
                                     "message": {"role": "assistant", "content": text}}],
                        "usage": {"prompt_tokens": prompt, "completion_tokens": words(text),
                                  "total_tokens": prompt + words(text)},
                    }
                    with endpoint._lock:
                        endpoint.answers.append(payload)
                    self._send(200, payload)
                finally:
                    with endpoint._lock:
                        endpoint.in_flight -= 1

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler


@pytest.fixture
def chat_endpoint() -> Iterator[ChatEndpoint]:
    pytest.importorskip("openai", reason="model predictors need the openai package (polysql[llm])")
    endpoint = ChatEndpoint()
    yield endpoint
    endpoint.close()


@pytest.fixture
def isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv("POLYSQL_CACHE", str(cache))
    return cache
