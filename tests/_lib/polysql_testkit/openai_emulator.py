"""An emulator of a remote OpenAI-compatible chat service, for the tests of polysql's model code.

:class:`OpenAIEmulator` is a real ``http.server`` (a ``ThreadingHTTPServer``) on 127.0.0.1
answering ``POST /v1/chat/completions`` the way a hosted OpenAI-compatible service does: a
``chat.completion`` body with ``choices``, ``finish_reason`` and ``usage``, or an OpenAI-style
error body with a status code and headers such as Retry-After. It is *not* a model and writes no
SQL of its own: each test decides what it answers.

Why an emulator and not a mock of the ``openai`` package: every request really crosses a socket
through the ``openai`` client polysql uses, so what is tested is polysql's behaviour against the
remote service's wire protocol and its failure modes -- 429/5xx then success, a server that stalls
past the client's timeout, one that trickles its answer a byte at a time, answers cut at the token
limit, many requests at once. Those failures are rare and unpredictable on a real service; here
they happen on demand, in milliseconds, and the tests can measure what the service saw (how many
requests, when, with which body and key, how many at the same time) and what it sent back.

What it answers, for each request in arrival order:

* the next :class:`Reply` queued with :meth:`OpenAIEmulator.script`, while any remain;
* then ``responder(body)``: a callable deciding from the request body, so answers can depend on
  the question asked however concurrent requests interleave (``script(then=reply)`` makes it a
  constant). By default every request gets :data:`DEFAULT_ANSWER`.

Token usage is counted the way the tests recompute it: whitespace-separated words
(:func:`word_count`) of the messages sent and of the answer.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

#: the one route answered, as the ``openai`` client builds it from ``base_url`` (``.../v1``)
CHAT_PATH = "/v1/chat/completions"

#: what a chat model typically answers: one fenced query, which every SQL extractor reads
DEFAULT_ANSWER = "```sql\nSELECT 1\n```"


@dataclass(frozen=True)
class Reply:
    """What the emulator does with one request.

    A 200 answers ``text`` with ``finish_reason`` (``"length"`` plays an answer cut at the token
    limit). Any other ``status`` answers an OpenAI-style error body whose message is ``error``
    (or a generic one). ``headers`` go with either (e.g. Retry-After, retry-after-ms). ``delay``
    sleeps before answering (a slow or silent server); ``trickle`` sends the body one byte at a
    time spread over that many seconds, so every single read is quick but the whole is slow.
    """

    text: str = DEFAULT_ANSWER
    status: int = 200
    error: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    trickle: float = 0.0
    finish_reason: str = "stop"


#: decides the reply from the request's JSON body (once the scripted replies are used up)
Responder = Callable[[dict[str, Any]], Reply]


@dataclass(frozen=True)
class SeenRequest:
    """One request as it arrived: tests check timing, route, body and API key."""

    arrived: float  # time.monotonic() on arrival, to measure backoff and rate limits
    path: str
    body: dict[str, Any]
    authorization: str | None


def word_count(text: str) -> int:
    """The emulator's token count: whitespace-separated words (tests recompute it themselves)."""
    return len(text.split())


def _message_text(content: Any) -> str:
    # content is a string, or (newer clients) a list of parts of which only text parts count
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


class OpenAIEmulator:
    """The emulated service on ``base_url`` (``http://127.0.0.1:PORT/v1``); see the module doc.

    ``port`` 0 picks a free one; passing the port of a stopped emulator brings "the same server"
    back at the same address, as a restarted service would be. Use :meth:`start`/:meth:`stop`, or
    ``with OpenAIEmulator() as emulator:``.

    What it saw and did, for the tests to check (all updated under one lock):
    ``requests`` (every :class:`SeenRequest`, in arrival order), ``answers`` (the 200
    ``chat.completion`` payloads it sent, in order), ``in_flight`` and ``max_in_flight`` (requests
    being handled at once, now and at most).
    """

    def __init__(self, port: int = 0) -> None:
        self.responder: Responder = lambda body: Reply()
        self.requests: list[SeenRequest] = []
        self.answers: list[dict[str, Any]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._script: list[Reply] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", port), self._handler_class())
        self._server.daemon_threads = True  # stalled handlers must not hold up shutdown
        self.port = int(self._server.server_address[1])
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        # a short poll interval: shutdown waits for the serving loop to notice, once per test
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True,
                                        kwargs={"poll_interval": 0.05})
        self._started = False
        self._stopped = False

    # --- deciding the replies -------------------------------------------------------------------

    @staticmethod
    def reply(**fields: Any) -> Reply:
        """A :class:`Reply` (so tests holding only the fixture can build one)."""
        return Reply(**fields)

    def script(self, *replies: Reply, then: Reply | None = None) -> None:
        """Answer the next requests with ``replies`` in order, and every later one with ``then``
        (when given; otherwise the current responder goes on deciding)."""
        with self._lock:
            self._script = list(replies)
            if then is not None:
                fixed: Reply = then
                self.responder = lambda body: fixed

    def _arrive(self, seen: SeenRequest) -> None:
        with self._lock:
            self.requests.append(seen)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        # Under the lock so a stateful responder (one counting its calls) needs no lock of its
        # own; the reply's delay is slept outside it, so requests still overlap.
        with self._lock:
            return self._script.pop(0) if self._script else self.responder(body)

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def _record_answer(self, payload: dict[str, Any]) -> None:
        with self._lock:
            self.answers.append(payload)

    def _completion(self, reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
        prompt_words = sum(word_count(_message_text(message.get("content")))
                           for message in body.get("messages", []))
        answer_words = word_count(reply.text)
        with self._lock:
            number = len(self.requests)
        return {
            "id": f"chatcmpl-emulated-{number}", "object": "chat.completion", "created": 0,
            "model": body.get("model", ""),
            "choices": [{"index": 0, "finish_reason": reply.finish_reason,
                         "message": {"role": "assistant", "content": reply.text}}],
            "usage": {"prompt_tokens": prompt_words, "completion_tokens": answer_words,
                      "total_tokens": prompt_words + answer_words},
        }

    # --- the HTTP side --------------------------------------------------------------------------

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        emulator = self

        class Handler(BaseHTTPRequestHandler):
            # keep-alive, as real services do: the openai client reuses its connections
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                emulator._arrive(SeenRequest(time.monotonic(), self.path, body,
                                             self.headers.get("Authorization")))
                try:
                    self._handle(body)
                except OSError:
                    pass  # the client gave up on us (timeout): that is the point of some tests
                finally:
                    emulator._leave()

            def _handle(self, body: dict[str, Any]) -> None:
                if self.path != CHAT_PATH:
                    # a wrong base_url is the client's mistake, not a scripted event: the
                    # script is left for the requests that do reach the service
                    self._send(404, {"error": {"message": f"no route {self.path}",
                                               "type": "invalid_request_error"}})
                    return
                reply = emulator._next_reply(body)
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.status != 200:
                    message = reply.error or f"emulated HTTP {reply.status}"
                    self._send(reply.status, {"error": {"message": message, "type": "emulated",
                                                        "code": reply.status}}, reply.headers)
                    return
                payload = emulator._completion(reply, body)
                # recorded before sending: a client that times out mid-trickle was still sent it
                emulator._record_answer(payload)
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

    # --- lifetime ---------------------------------------------------------------------------------

    def start(self) -> OpenAIEmulator:
        self._thread.start()
        self._started = True
        return self

    def stop(self) -> None:
        """Stop answering and free the port (a test may "take the service down"); idempotent."""
        if self._stopped:
            return
        self._stopped = True
        if self._started:  # shutdown() would wait forever for a loop that never ran
            self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> OpenAIEmulator:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.stop()
