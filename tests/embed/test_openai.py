"""OpenAIEmbedder against a real local HTTP server speaking the /v1/embeddings protocol."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from lore.embed.base import get_embedder
from lore.embed.openai import OpenAIEmbedder
from lore.errors import ConfigError, LoreError

DIM = 8


def fake_vector(text: str) -> list[float]:
    """A deterministic, unnormalised vector derived from the text."""
    digest = hashlib.sha256(text.encode()).digest()
    return [float(b) - 127.5 for b in digest[:DIM]]


@dataclass
class FakeServer:
    """State of the test server: requests seen and scripted faults to play in order."""

    url: str = ""
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    faults: list[str] = field(default_factory=list)


def _handler(state: FakeServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:  # keep test output quiet
            pass

        def _reply(self, status: int, body: Any) -> None:
            raw = json.dumps(body).encode() if not isinstance(body, bytes) else body
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)
            except (BrokenPipeError, ConnectionResetError):  # the client timed out first
                pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.requests.append(body)
            state.headers.append(dict(self.headers))
            fault = state.faults.pop(0) if state.faults else ""
            if self.path != "/v1/embeddings":
                return self._reply(404, {"error": {"message": f"no route {self.path}"}})
            if fault == "503":
                return self._reply(503, {"error": {"message": "model is loading"}})
            if fault == "400":
                return self._reply(400, {"error": {"message": "input is too long"}})
            if fault == "slow":
                time.sleep(1.0)
            texts = body["input"]
            data = [
                {"object": "embedding", "index": i, "embedding": fake_vector(t)} for i, t in enumerate(texts)
            ]
            data.reverse()  # the protocol orders by `index`, not by position
            if fault == "short":
                data = data[1:]
            if fault == "baddim":
                data[0]["embedding"] = data[0]["embedding"][:-1]
            self._reply(200, {"object": "list", "model": body["model"], "data": data})

    return Handler


@pytest.fixture
def server() -> Iterator[FakeServer]:
    state = FakeServer()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield state
    httpd.shutdown()
    httpd.server_close()


def make(server: FakeServer, **options: Any) -> OpenAIEmbedder:
    options = {"model": "fake-embed", "base_url": server.url, "backoff_s": 0.01, **options}
    return OpenAIEmbedder(**options)


def expected(texts: list[str]) -> np.ndarray:
    raw = np.asarray([fake_vector(t) for t in texts], dtype=np.float32)
    return raw / np.linalg.norm(raw, axis=1, keepdims=True)


def test_embeds_in_index_order_and_normalises(server: FakeServer) -> None:
    texts = ["报销需要发票", "annual leave policy", "third text"]
    with make(server, api_key="sk-test", dim=DIM) as embedder:
        vectors = embedder.embed_batch(texts, "passage")
    assert embedder.model_id == "openai:fake-embed"
    assert vectors.dtype == np.float32 and vectors.shape == (3, DIM)
    np.testing.assert_allclose(vectors, expected(texts), rtol=1e-6)
    assert server.requests == [{"model": "fake-embed", "input": texts}]
    assert server.headers[0]["Authorization"] == "Bearer sk-test"


def test_registry_prefixes_and_env_key(server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("LORE_EMBED_API_KEY", "from-env")
    embedder = get_embedder(
        "openai", model="m", base_url=server.url + "/", query_prefix="query: ", passage_prefix="passage: "
    )
    vectors = embedder.embed_batch(["hi", ""], "query")
    embedder.embed_batch(["doc"], "passage")
    assert server.requests[0]["input"] == ["query: hi", "query: "]
    assert server.requests[1]["input"] == ["passage: doc"]
    assert server.headers[0]["Authorization"] == "Bearer from-env"
    np.testing.assert_allclose(vectors, expected(["query: hi", "query: "]), rtol=1e-6)


def test_dim_discovered_with_one_probe(server: FakeServer) -> None:
    embedder = make(server)
    assert embedder.dim == DIM and embedder.dim == DIM
    assert len(server.requests) == 1


def test_batching_through_embed_texts(server: FakeServer) -> None:
    from lore.embed.cache import embed_texts

    texts = [f"text {i}" for i in range(10)]
    done: list[int] = []
    vectors = embed_texts(make(server, dim=DIM, batch_size=4), texts, "passage", on_batch=done.append)
    assert [len(r["input"]) for r in server.requests] == [4, 4, 2]
    assert done == [4, 8, 10]
    np.testing.assert_allclose(vectors, expected(texts), rtol=1e-6)


def test_retries_503_then_succeeds(server: FakeServer) -> None:
    server.faults = ["503", "503"]
    vectors = make(server, max_retries=3).embed_batch(["a", "b"], "query")
    assert len(server.requests) == 3
    np.testing.assert_allclose(vectors, expected(["a", "b"]), rtol=1e-6)


def test_gives_up_after_max_retries(server: FakeServer) -> None:
    server.faults = ["503"] * 5
    with pytest.raises(LoreError, match=r"HTTP 503.*model is loading.*gave up after 3 attempts") as info:
        make(server, max_retries=2).embed_batch(["a"], "query")
    assert server.url + "/embeddings" in str(info.value)
    assert len(server.requests) == 3


def test_no_retry_on_400(server: FakeServer) -> None:
    server.faults = ["400"]
    with pytest.raises(LoreError, match=r"/v1/embeddings: HTTP 400: .*input is too long"):
        make(server).embed_batch(["a"], "query")
    assert len(server.requests) == 1


def test_wrong_path_is_a_clear_error(server: FakeServer) -> None:
    embedder = OpenAIEmbedder(model="m", base_url=server.url.removesuffix("/v1"), backoff_s=0.01)
    with pytest.raises(LoreError, match="HTTP 404"):
        embedder.embed_batch(["a"], "query")


def test_timeout_is_a_clear_error(server: FakeServer) -> None:
    server.faults = ["slow"]
    with pytest.raises(LoreError, match=r"embedding endpoint .*: timed out.*gave up after 1 attempts"):
        make(server, timeout_s=0.2, max_retries=0).embed_batch(["a"], "query")


def test_timeout_is_retried(server: FakeServer) -> None:
    server.faults = ["slow"]
    vectors = make(server, timeout_s=0.2, max_retries=1).embed_batch(["a"], "query")
    assert vectors.shape == (1, DIM)


def test_connection_refused_is_a_clear_error() -> None:
    embedder = OpenAIEmbedder(model="m", base_url="http://127.0.0.1:9/v1", max_retries=1, backoff_s=0.01)
    with pytest.raises(LoreError, match=r"127\.0\.0\.1:9/v1/embeddings: connection failed.*2 attempts"):
        embedder.embed_batch(["a"], "query")


def test_wrong_count_is_an_error(server: FakeServer) -> None:
    server.faults = ["short"]
    with pytest.raises(LoreError, match="sent 3 texts but received 2 vectors"):
        make(server).embed_batch(["a", "b", "c"], "query")


def test_inconsistent_dims_are_an_error(server: FakeServer) -> None:
    server.faults = ["baddim"]
    with pytest.raises(LoreError, match="inconsistent dimensions"):
        make(server).embed_batch(["a", "b"], "query")


def test_configured_dim_mismatch_is_an_error(server: FakeServer) -> None:
    with pytest.raises(LoreError, match=f"returned {DIM}-d vectors, expected 16"):
        make(server, dim=16).embed_batch(["a"], "query")


def test_bad_settings_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="base_url"):
        OpenAIEmbedder(model="m", base_url="localhost:8000/v1")
    with pytest.raises(ConfigError, match="model"):
        OpenAIEmbedder(model="", base_url="http://x/v1")
