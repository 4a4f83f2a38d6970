"""OpenTelemetry export of a request's event stream: a local OTLP/HTTP receiver gets the ask as a span with
the request's trace id and its stages as child spans; no endpoint, no OpenTelemetry SDK imported; an
endpoint without the packages fails when the settings load, with the install hint."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from lore.api import create_app
from lore.config import load_settings
from lore.engine import Lore
from lore.errors import ConfigError
from lore.telemetry import exporter
from tests.api.conftest import Keys, auth, sse_events


class OtlpReceiver:
    """An OTLP/HTTP (protobuf) collector on a free port, keeping every span it is sent."""

    def __init__(self) -> None:
        self.spans: list[Any] = []
        self.paths: list[str] = []
        self.arrived = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                request = ExportTraceServiceRequest.FromString(body)
                with receiver.arrived:
                    receiver.paths.append(self.path)
                    for resource in request.resource_spans:
                        for scope in resource.scope_spans:
                            receiver.spans.extend(scope.spans)
                    receiver.arrived.notify_all()
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def of_trace(self, trace_id: str, name: str = "lore.ask", timeout: float = 30) -> list[Any]:
        """The spans of `trace_id` once its span called `name` has arrived."""
        with self.arrived:
            self.arrived.wait_for(
                lambda: any(s.trace_id.hex() == trace_id and s.name == name for s in self.spans), timeout
            )
            return [s for s in self.spans if s.trace_id.hex() == trace_id]


@pytest.fixture(scope="module")
def receiver() -> Iterator[OtlpReceiver]:
    made = OtlpReceiver()
    made.thread.start()
    yield made
    made.server.shutdown()


def _attributes(span: Any) -> dict[str, Any]:
    return {a.key: getattr(a.value, a.value.WhichOneof("value")) for a in span.attributes}


@contextmanager
def exporting_client(api_home: Path, receiver: OtlpReceiver) -> Iterator[TestClient]:
    """A client of a service that exports to `receiver`; what it queued is flushed when the block ends."""
    settings = load_settings(
        home=api_home, api={"rate_limit_per_minute": 0}, telemetry={"otlp_endpoint": receiver.url}
    )
    lore = Lore(settings)
    try:
        with TestClient(create_app(lore, run_preflight=False)) as client:
            yield client
        made = exporter(settings.telemetry.endpoint)
        assert made is not None and made.flush()
    finally:
        lore.close()


def test_an_ask_is_exported_as_a_span_with_its_stages(
    api_home: Path, keys: Keys, receiver: OtlpReceiver
) -> None:
    question = "报销需要什么材料？"
    with exporting_client(api_home, receiver) as client:
        r = client.post("/api/ask", headers=auth(keys.staff), json={"kb": "hb", "question": question})
    events = sse_events(r.text)
    trace_id = events[0][1]["trace_id"]
    stages = [d["stage"] for k, d in events if k == "status"]
    spans = receiver.of_trace(trace_id)
    assert receiver.paths and set(receiver.paths) == {"/v1/traces"}
    root = next(s for s in spans if s.name == "lore.ask")
    attrs = _attributes(root)
    assert (
        attrs["lore.trace_id"] == trace_id and attrs["lore.kb"] == "hb" and attrs["lore.done.status"] == "ok"
    )
    assert attrs["lore.tokens"] == sum(k == "token" for k, _ in events) > 0
    children = sorted((s for s in spans if s is not root), key=lambda s: s.start_time_unix_nano)
    assert [s.name for s in children] == stages and "rerank" in stages
    assert all(s.parent_span_id == root.span_id for s in children)
    assert all(root.start_time_unix_nano <= s.start_time_unix_nano <= s.end_time_unix_nano for s in children)
    rerank = _attributes(next(s for s in children if s.name == "rerank"))
    assert rerank["lore.provider"] == "ltr" and rerank["lore.candidates"] > 0
    assert question not in str([_attributes(s) for s in spans])  # the user's words stay out of the spans


def test_a_search_request_is_exported_as_an_http_span_with_its_rerank(
    api_home: Path, keys: Keys, receiver: OtlpReceiver
) -> None:
    rid = "5" * 32  # the caller's X-Request-ID becomes the span's trace id
    with exporting_client(api_home, receiver) as client:
        r = client.post(
            "/api/search",
            headers={**auth(keys.staff), "X-Request-ID": rid},
            json={"kb": "hb", "query": "报销需要什么材料？", "rerank": True},
        )
        assert r.status_code == 200 and r.json()["hits"]
        missing = client.get("/api/kbs/nope", headers=auth(keys.staff))
        assert missing.status_code == 404
    [span] = receiver.of_trace(rid, "lore.http")
    attrs = _attributes(span)
    assert attrs["lore.done.route"] == "/api/search" and attrs["lore.done.method"] == "POST"
    assert attrs["lore.done.status"] == 200 and attrs["lore.done.seconds"] > 0
    assert "rerank" in [e.name for e in span.events]  # what the route did, as events of its span
    statuses = {_attributes(s).get("lore.done.status") for s in receiver.spans if s.name == "lore.http"}
    assert 404 in statuses  # every request, refused ones too
    assert "报销" not in str([_attributes(s) for s in receiver.spans if s.name == "lore.http"])


def test_no_endpoint_imports_no_opentelemetry_sdk(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")} | {"LORE_HOME": str(tmp_path)}
    code = (
        "import sys\n"
        "from lore.config import load_settings\n"
        "from lore.app.conversation import answer_events\n"
        "from lore.telemetry import exporter\n"
        "s = load_settings()\n"
        "assert s.telemetry.endpoint is None and exporter(s.telemetry.endpoint) is None\n"
        "loaded = ('opentelemetry.sdk', 'lore.telemetry.otlp')\n"
        "print(sorted(m for m in sys.modules if m.startswith(loaded)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("by", ["config", "env"])
def test_an_endpoint_without_the_packages_fails_at_start_with_the_install_hint(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, by: str
) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)  # as if the extra were not installed
    monkeypatch.setitem(sys.modules, "lore.telemetry.otlp", None)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    overrides: dict[str, Any] = {"home": tmp_path}
    if by == "env":
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9/")
    else:
        overrides["telemetry"] = {"otlp_endpoint": "http://127.0.0.1:9"}
    with pytest.raises(ConfigError, match=r"OpenTelemetry is not installed .*pip install 'lore-kb\[otel\]'"):
        load_settings(**overrides)
    with pytest.raises(ConfigError, match=r"lore-kb\[otel\]"):
        exporter("http://127.0.0.1:9/v1/traces", "not-made-yet")
